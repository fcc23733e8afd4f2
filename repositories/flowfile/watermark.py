"""Transaction ids, and the durable watermark every journal frame carries.

The WAL hands out transaction ids in one sequence across its partitions. A crash can
take from a journal only what was not yet synced, and a transaction is acknowledged
only once it is synced. So if every frame records how far the sequence was durable
when the frame was built (the watermark: every id up to it, above the last snapshot,
had been synced in some journal), recovery knows that any id at or below the highest
watermark it reads was on storage once: if no journal holds it now, bytes that a crash
cannot take were lost (a journal deleted, truncated deep inside, or rolled back from a
backup). This is the log's high watermark, as Kafka's and Raft's committed index are:
a position below which nothing may be missing.

An id stays open (holding the watermark back) from the moment it is handed out until
its transaction is known durable; one whose write failed stays open until the roll that
settles it, and a transaction written with `sync=False` until the next checkpoint. Both
only make the watermark lower, which weakens what recovery can prove, never what it
claims.

Lock plan: `_lock` guards `_next` and `_open`; `take` hands out an id and reads the
watermark in one step, so no id can be handed out unseen between the two.
"""

from __future__ import annotations

import threading


class TransactionIds:
    def __init__(self, first: int = 1):
        self._lock = threading.Lock()
        self._next = first
        self._open: set[int] = set()

    def take(self) -> tuple[int, int]:
        """A new transaction id, and the watermark to write in its frame."""
        with self._lock:
            txid = self._next
            self._next = txid + 1
            watermark = min(self._open) - 1 if self._open else txid - 1
            self._open.add(txid)
            return txid, watermark

    def durable(self, txid: int) -> None:
        """The transaction `txid` is synced: it no longer holds the watermark back."""
        with self._lock:
            self._open.discard(txid)

    def last(self) -> int:
        """The last id handed out (or recovered)."""
        with self._lock:
            return self._next - 1

    def covered(self) -> int:
        """A snapshot now covers every id handed out: none is open any more. Returns the
        last id handed out (the snapshot's max transaction id). The caller holds the
        WAL's exclusive lock, so no id is being handed out meanwhile."""
        with self._lock:
            self._open.clear()
            return self._next - 1
