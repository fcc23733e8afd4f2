"""Pure decisions of the repository: when to roll over, what to age off, how to recover.

Each is a function of plain values, so it is tested without files or threads; the
repository gathers the values, asks, and carries out the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

USAGE_TARGET = 0.90  # as NiFi does: destroy oldest files until usage is down to 90 %


@dataclass(frozen=True, slots=True)
class RolloverPolicy:
    """Roll over when the current journals are `max_age_s` old or hold `max_bytes`.

    NiFi's provenance repository design rolls over every 30 s; NiFi 2 uses 10 minutes
    or 100 MB. Either limit may be None. An empty generation is never rolled over.
    """

    max_age_s: float | None = 30.0
    max_bytes: int | None = 100 * 1024 * 1024

    def due(self, *, opened_at_s: float, now_s: float, bytes_written: int, events: int) -> bool:
        if events == 0:
            return False
        if self.max_bytes is not None and bytes_written >= self.max_bytes:
            return True
        return self.max_age_s is not None and now_s - opened_at_s >= self.max_age_s


@dataclass(frozen=True, slots=True)
class EventFileSummary:
    first_id: int
    size: int
    max_time_ms: int


def plan_age_off(files: list[EventFileSummary], *, now_ms: int, max_age_ms: int | None,
                 max_bytes: int | None) -> list[int]:
    """First ids of the event files to destroy, oldest first.

    By size: when the total passes `max_bytes`, destroy the oldest files (smallest
    first id: ids only grow) until the total is at most 90 % of it. By age: destroy
    every file whose newest event is older than `max_age_ms`.
    """
    ordered = sorted(files, key=lambda f: f.first_id)
    doomed: list[int] = []
    if max_bytes is not None:
        total = sum(f.size for f in ordered)
        if total > max_bytes:
            target = max_bytes * USAGE_TARGET
            for f in ordered:
                if total <= target:
                    break
                doomed.append(f.first_id)
                total -= f.size
    if max_age_ms is not None:
        cutoff = now_ms - max_age_ms
        chosen = set(doomed)
        doomed += [f.first_id for f in ordered if f.max_time_ms < cutoff and f.first_id not in chosen]
    return sorted(doomed)


@dataclass
class RecoveryPlan:
    """What a restart must do, decided from file names alone."""

    delete_partials: list[str] = field(default_factory=list)
    # Generations whose journals survived: merge them again. If their event file
    # exists it came from an interrupted merge: delete it (and its index documents)
    # first, because where that merge stopped cannot be known.
    redo_merges: list[int] = field(default_factory=list)
    discard_event_files: list[int] = field(default_factory=list)
    # Event files whose TOC is missing: orphan TOCs without an event file are deleted.
    delete_orphan_tocs: list[int] = field(default_factory=list)


def plan_recovery(*, journal_generations: set[int], event_files: set[int], tocs: set[int],
                  partial_paths: list[str]) -> RecoveryPlan:
    plan = RecoveryPlan(delete_partials=sorted(partial_paths))
    plan.redo_merges = sorted(journal_generations)
    plan.discard_event_files = sorted(journal_generations & event_files)
    plan.delete_orphan_tocs = sorted((tocs - event_files) | (tocs & journal_generations))
    return plan


def files_to_reindex(event_files: set[int], indexed: set[int]) -> list[int]:
    """Event files committed but not recorded as indexed: index them (again)."""
    return sorted(event_files - indexed)
