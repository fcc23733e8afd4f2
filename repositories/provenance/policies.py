"""Pure decisions of the repository: when to roll over, what to age off, how to recover.

Each is a function of plain values, so it is tested without files or threads; the
repository gathers the values, asks, and carries out the answer.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def plan_age_off(
    files: list[EventFileSummary], *, now_ms: int, max_age_ms: int | None, max_bytes: int | None
) -> list[int]:
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
    """What a restart must do, decided from file names and the index manifests."""

    delete_partials: list[str] = field(default_factory=list)
    # Generations whose event file is committed but some journals survived: the merge
    # had finished (a `.prov` is renamed into place only once written and fsynced, so
    # it holds every event of the journals) and was deleting them. They go.
    delete_merged_journals: list[int] = field(default_factory=list)
    # Generations whose journals survived and whose event file was never committed:
    # merge them again.
    redo_merges: list[int] = field(default_factory=list)
    # TOCs without their event file (a merge stopped between the two renames).
    delete_orphan_tocs: list[int] = field(default_factory=list)
    # Everything to index, in increasing first id: the generations merged again and
    # the committed files no manifest claims, one sequence, so that files are indexed
    # in id order across a restart as they are while running (see `index`, rule 2).
    index_order: list[int] = field(default_factory=list)


def plan_recovery(
    *,
    journal_generations: set[int],
    event_files: set[int],
    indexed_files: set[int],
    tocs: set[int],
    partial_paths: list[str],
) -> RecoveryPlan:
    """`journal_generations`: first ids of the generations with a journal on disk;
    `event_files`: of the committed event files; `indexed_files`: of the files an index
    manifest claims; `tocs`: of the committed TOCs."""
    redo = journal_generations - event_files
    return RecoveryPlan(
        delete_partials=sorted(partial_paths),
        delete_merged_journals=sorted(journal_generations & event_files),
        redo_merges=sorted(redo),
        delete_orphan_tocs=sorted(tocs - event_files),
        index_order=sorted(redo.union(files_to_reindex(event_files, indexed_files))),
    )


def files_to_reindex(event_files: set[int], indexed: set[int]) -> list[int]:
    """Event files committed but not recorded as indexed: index them (again)."""
    return sorted(event_files - indexed)


def unclaimed_id_ranges(claimed: Iterable[tuple[int, int]]) -> list[tuple[int, int | None]]:
    """The event id ranges, inclusive, that lie outside every claimed (first, last) range,
    from id 0 up; the last one has no upper end (None). Adjacent claimed ranges leave
    no range between them."""
    ranges: list[tuple[int, int | None]] = []
    low = 0
    for first, last in sorted(claimed):
        if first > low:
            ranges.append((low, first - 1))
        low = max(low, last + 1)
    ranges.append((low, None))
    return ranges
