"""`TakenFiles`: the files one processor (GetFile, FetchFile) has taken, carried out.

The record of a taken file goes in the processor's state, committed in the WAL
transaction that creates its FlowFile; the file is deleted or moved after that commit
(`on_success`); the record leaves the state in a later commit, once the delete or move
is durable. A crash anywhere in between leaves either no FlowFile and no record (the
file is taken again: nothing was), or both (the next run finishes the delete and never
takes the file again). The decisions are `ledger`'s; this class holds what the
processor's running sessions have in hand and does the I/O.

Lock plan: `lock` guards `_claimed`, `_completed` and `_reported`, and a processor holds
it from reading its committed state until the commit that writes the next one has
returned, so that two sessions never write states that drop each other's records (the
state is replaced whole). It is reentrant: the traditional engine runs `on_success`
inside the commit. Files are read outside it; deletes and directory syncs happen
under it.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from . import completion, format, ledger
from .format import FileIdentity, IntakeState, TakenFile

if TYPE_CHECKING:
    from ...session import ProcessSession


class TakenFiles:
    def __init__(self, owner: str, logger: logging.Logger | None = None):
        self.owner = owner
        self.log = logger or logging.getLogger(f"flow.processor.{owner}")
        self.lock = threading.RLock()
        self._claimed: Counter[FileIdentity] = Counter()  # held by a session not finished yet
        self._completed: set[FileIdentity] = set()  # finished durably; pruned from the state next commit
        self._reported: set[FileIdentity] = set()  # failed finishes already logged
        self._read: tuple[dict, IntakeState] = ({}, IntakeState())  # the last state read, and what it holds

    @property
    def claimed(self) -> frozenset[FileIdentity]:
        with self.lock:
            return frozenset(+self._claimed)

    def read(self, session: ProcessSession) -> IntakeState:
        """The processor's committed intake state (as `session` sees it)."""
        raw = session.get_state()
        with self.lock:
            last_raw, last = self._read
            if raw == last_raw:  # mostly: the state this processor committed last
                return last
            state = format.unpack(raw, self.owner)
            self._read = (raw, state)
            return state

    def finish_orphans(self, state: IntakeState) -> None:
        """Finish the deletes and moves no running session owns: an earlier run's, cut
        short by a crash, and those that failed. Before anything new is taken."""
        with self.lock:
            records = ledger.orphans(state, self._claimed, self._completed)
            if records:
                self._finished(completion.finish(records), "an earlier run took")

    def claim(self, identities: Iterable[FileIdentity]) -> None:
        with self.lock:
            self._claimed.update(identities)

    def release(self, identities: Iterable[FileIdentity]) -> None:
        with self.lock:
            self._claimed.subtract(identities)
            self._claimed = +self._claimed

    def commit(self, session: ProcessSession, records: list[TakenFile], claimed: list[FileIdentity]) -> bool:
        """Commit `session` with a state that records `records` (its FlowFiles' files) and
        prunes what is durably finished; then finish `records`. `claimed` is released
        either way. False when there was nothing to commit (the session is rolled back).
        A failed commit raises its `CommitError` (the engine yields the processor); in
        the stateless engine the flow's failure comes later, and releases the same way."""
        with self.lock:
            committed = self.read(session)
            state, pruned = ledger.state_after_commit(committed, records, self._completed)
            if state != committed:
                packed = format.pack(state)
                session.set_state(packed)
                self._read = (packed, state)  # what the next read finds once this commit is through
            if not session.touched:
                session.rollback()
                self.release(claimed)
                return False

            def committed_now() -> None:
                with self.lock:
                    self._completed -= pruned
                    if records:
                        self._finished(completion.finish(records), "this session took")
                    self.release(claimed)

            failures: list[BaseException] = []

            def failed(error: BaseException) -> None:
                self.release(claimed)
                failures.append(error)

            session.commit_async(committed_now, failed)
            if failures:
                raise failures[0]
            return True

    def _finished(self, result: completion.Finished, whose: str) -> None:
        self._completed |= result.completed
        self._reported -= result.completed
        for record, error in result.failed:
            if record.identity not in self._reported:
                self._reported.add(record.identity)
                self.log.warning(
                    "%s: cannot %s %s, which %s (it stays recorded, is never taken again, and the "
                    "%s is tried again at each run): %s",
                    self.owner,
                    record.action,
                    record.path,
                    whose,
                    record.action,
                    error,
                )
