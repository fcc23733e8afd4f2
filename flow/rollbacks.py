"""Poison FlowFiles: one that makes its processor fail every time must not hold its queue
for ever.

A task that raises is rolled back and its FlowFiles go back to their place at the head
of their queue, so the next task polls the same ones. If one of them is what makes the
processor fail (content it cannot read, an attribute that crashes it), the next task
fails the same way, and so on for ever: nothing behind it moves. `RollbackWatch`
decides, from what each task of one processor did, which FlowFiles the engine
penalizes as it rolls a session back, so that the queue moves on:

* A FlowFile the failure names (`UnreadableContent`: its content cannot be read, which
  no retry mends) is penalized at once; the others of its session are not counted.
* Otherwise every FlowFile of a rolled-back session counts one more rollback in a row,
  and a session that commits clears the counts of those it held. A FlowFile alone in
  its session that reaches `max_rollbacks` in a row is penalized.
* A session of several FlowFiles cannot tell which of them is at fault. Penalizing them
  all would hold the innocent ones back with the poison one, together again each time
  the penalty ends, for ever. So when one of them reaches `max_rollbacks`, the
  processor's next sessions take one FlowFile each, as many as that session held, as
  Spring Batch's fault-tolerant step scans a failed chunk item by item: each innocent
  one commits on its own, the poison one fails alone and is penalized.
* A processor that cannot work one FlowFile at a time (a session of one that it ends
  without committing or failing, as a MergeContent waiting for more entries does)
  ends the scan for good: from then on, in a session of several FlowFiles those that
  reach `max_rollbacks` are penalized.

A penalized FlowFile stays in its queue, in its place, and is tried again once its
penalty is over: nothing is lost or duplicated (a rollback writes nothing). Each is
reported once (`Verdict.report`). Rollbacks that say nothing about the FlowFiles
(storage down, a full repository, a fenced shard) are not given to the watch at all.

Counts are kept for at most `MAX_TRACKED` FlowFiles per processor, the one that failed
longest ago forgotten first. Decisions only: no clock, no lock, no I/O; the engine
calls it under its lock and carries out the `Verdict`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_MAX_ROLLBACKS = 5
MAX_TRACKED = 10_000


@dataclass(frozen=True)
class Verdict:
    """What to do with a rolled-back session's FlowFiles: penalize those in `penalize`
    (the others go back as they were), and report those in `report` (penalized for the
    first time)."""

    penalize: frozenset[str] = frozenset()
    report: tuple[str, ...] = ()


NOTHING = Verdict()


class RollbackWatch:
    """The rollbacks in a row of one processor's FlowFiles (see the module docstring)."""

    def __init__(self, max_rollbacks: int = DEFAULT_MAX_ROLLBACKS, max_tracked: int = MAX_TRACKED):
        if max_rollbacks < 1:
            raise ValueError("max_rollbacks must be at least 1")
        self.max_rollbacks = max_rollbacks
        self._max_tracked = max_tracked
        self._counts: OrderedDict[str, int] = OrderedDict()  # FlowFile id -> rollbacks in a row
        self._reported: OrderedDict[str, None] = OrderedDict()  # penalized once already
        self.scan_left = 0  # sessions of one FlowFile still to run
        self.can_scan = True

    @property
    def polled_limit(self) -> int | None:
        """How many FlowFiles the processor's next session may poll: 1 while scanning."""
        return 1 if self.scan_left else None

    @property
    def active(self) -> bool:
        """Whether a commit has anything to clear or a scan to advance. Safe to read
        without the caller's lock for a session that committed: a FlowFile's count is
        written before its rollback puts it back, so before any session can poll it."""
        return bool(self._counts) or bool(self.scan_left)

    @property
    def tracked(self) -> int:
        return len(self._counts)

    def count(self, flowfile_id: str) -> int:
        return self._counts.get(flowfile_id, 0)

    def committed(self, held: Sequence[str]) -> None:
        """A session that held `held` committed: they are handled."""
        if self._counts:
            for flowfile_id in held:
                self._counts.pop(flowfile_id, None)
        if self.scan_left and held:
            self.scan_left = max(0, self.scan_left - len(held))

    def ended_without_commit(self, held: Sequence[str]) -> None:
        """A session that held `held` ended neither committed nor failed: the processor
        put them back itself. In a scan, the processor cannot work one at a time."""
        if self.scan_left and held:
            self.scan_left = 0
            self.can_scan = False

    def rolled_back(self, held: Sequence[str], at_fault: str | None = None) -> Verdict:
        """A session that held `held` failed and is rolled back; `at_fault` is the
        FlowFile the failure names, if it names one of them."""
        if not held:
            return NOTHING
        if at_fault is not None and at_fault in held:
            self._counts[at_fault] = max(self._counts.pop(at_fault, 0), self.max_rollbacks)
            self._forget_oldest()
            self._scan_step(held)
            return self._penalize([at_fault])
        limit = self.max_rollbacks
        poisoned = []
        for flowfile_id in held:
            count = self._counts.pop(flowfile_id, 0) + 1
            self._counts[flowfile_id] = count  # now the most recently failed
            if count >= limit:
                poisoned.append(flowfile_id)
        self._forget_oldest()
        if not poisoned:
            return NOTHING
        if len(held) == 1:
            self._scan_step(held)
            return self._penalize(poisoned)
        if self.scan_left or not self.can_scan:
            return self._penalize(poisoned)
        self.scan_left = len(held)
        return NOTHING

    def _scan_step(self, held: Sequence[str]) -> None:
        if self.scan_left:
            self.scan_left = max(0, self.scan_left - len(held))

    def _penalize(self, flowfile_ids: list[str]) -> Verdict:
        report = tuple(flowfile_id for flowfile_id in flowfile_ids if flowfile_id not in self._reported)
        for flowfile_id in report:
            self._reported[flowfile_id] = None
        while len(self._reported) > self._max_tracked:
            self._reported.popitem(last=False)
        return Verdict(frozenset(flowfile_ids), report)

    def _forget_oldest(self) -> None:
        while len(self._counts) > self._max_tracked:
            self._counts.popitem(last=False)
