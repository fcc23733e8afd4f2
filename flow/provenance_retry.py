"""Small commits whose provenance failed to register, kept to be registered again.

A commit of a few events hands its rows to provenance after its WAL transaction
(`ProvenanceRepository.register_rows_later`), and its outbox slot is free again only
once provenance says they are registered. When provenance fails them (a full disk, a
repository that cannot write), the slot stays taken, since its outbox record then
holds the only copy of the events that survives a crash, and the rows are kept here.
The next commits hand them to provenance again, at most once every `RETRY_EVERY_S`;
once registered, their slots are free.

At most `KEPT_AT_MOST` commits are kept. Past that, the committer refuses commits that
have provenance events before their commit point, so their sessions roll back and are
retried with nothing lost, until provenance registers the kept ones. NiFi's provenance
repository likewise holds the flow back when it cannot record events. So while
provenance fails, the outbox holds a bounded number of records, not one more per
commit.

    retry = RowsRetry()
    retry.failed(kept, retried=False)   # provenance did not register them (True: the first)
    retry.registered()                  # a kept commit's rows, handed back, are registered
    for kept in retry.due():            # hand these to provenance again
        ...
    retry.full                          # refuse commits with events while True

Lock plan: `_lock` guards every field; nothing but the clock is called under it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from repositories.provenance.event_batch import EventRow

KEPT_AT_MOST = 1024  # commits whose rows wait to be registered again
RETRY_EVERY_S = 1.0  # kept rows are handed to provenance again at most this often


class KeptRows(NamedTuple):
    """A small commit's events that provenance has not registered yet."""

    component: str
    slot: int | None  # its outbox slot (None without an outbox)
    rows: list[EventRow]


class RowsRetry:
    """The kept commits of one committer (see the module docstring)."""

    def __init__(
        self,
        *,
        kept_at_most: int = KEPT_AT_MOST,
        every_s: float = RETRY_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.kept_at_most = kept_at_most
        self.every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: list[KeptRows] = []  # failed, not handed back yet
        self._outstanding = 0  # kept commits not registered yet, whether handed back or not
        self._next_try = 0.0
        self._failing_since: float | None = None

    @property
    def waiting(self) -> int:
        """Commits kept and not registered yet (read without the lock: a hint)."""
        return self._outstanding

    @property
    def full(self) -> bool:
        return self._outstanding >= self.kept_at_most

    def failed(self, kept: KeptRows, *, retried: bool) -> bool:
        """Provenance did not register `kept` (a first try, or a retry). True when this
        is the first failure since every kept commit was last registered."""
        with self._lock:
            first = self._failing_since is None
            if first:
                self._failing_since = self._clock()
                self._next_try = self._failing_since + self.every_s
            if not retried:
                self._outstanding += 1
            self._kept.append(kept)
        return first

    def registered(self) -> float | None:
        """A kept commit's rows, handed back, are registered. When that was the last
        kept one: the seconds since the first failure; otherwise None."""
        with self._lock:
            self._outstanding -= 1
            if self._outstanding or self._failing_since is None:
                return None
            since, self._failing_since = self._failing_since, None
            return self._clock() - since

    def due(self) -> list[KeptRows]:
        """The kept commits to hand to provenance again now (none until `every_s` has
        passed since the last time)."""
        with self._lock:
            if not self._kept:
                return []
            now = self._clock()
            if now < self._next_try:
                return []
            self._next_try = now + self.every_s
            kept, self._kept = self._kept, []
        return kept
