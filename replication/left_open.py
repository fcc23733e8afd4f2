"""Files this client gave up while they were still open, deleted once HDFS has closed them.

HDFS deleting a file whose last block is still being written never takes that block
off the count the NameNode keeps of each DataNode of its pipeline (`blockScheduled`:
blocks handed to a DataNode and not yet reported finished, which the NameNode takes,
times the block size, off the DataNode's free space when it places new blocks). Only
a finished block is reported, and the count is never forgotten while blocks keep being
finished: each such deletion leaves a block's worth of free space gone on each live
DataNode of the pipeline until the NameNode restarts (`replication.block_size`).

A file given up open is a hedge of a new file's first sync whose pipeline failed
(`replication.new_files`): abandoned (no hsync, no close), and not deleted at once.
`LeftOpen.add(path)` hands it to a thread of its own, which asks HDFS to recover its
lease (that finishes its last block on the live DataNodes of its pipeline, which report
it), asks again while it is still open, and deletes it once it is closed, or after
`PATIENCE_S` all the same (a file whose every DataNode is dead never closes). A file's
asks are `POLL_S` apart at first, then twice as far apart each time, up to
`MAX_ASK_GAP_S`: a recovery handed to a DataNode that died is retried by the NameNode
only after its own timeout (about 30 s), and until then every ask is refused; asked
every 0.5 s, the files a compose cluster gave up as it started cost its NameNode 35
calls a second. The thread ends when nothing is left; a file gone meanwhile is
forgotten.

A hedge has a hidden name that listings never show, so a hedge that waits here is seen
by no reader. A writer that dies leaves the files waiting here, as it leaves any
file it had open, to whoever recovers the directory.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from repositories.storage import StorageError
from repositories.storage.leases import still_open

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)

POLL_S = 0.5  # a thread's round, and a file's first gap between two asks
MAX_ASK_GAP_S = 8.0  # the longest gap between two asks for one file
PATIENCE_S = 60.0  # a file still open this long after it was given up is deleted all the same


class LeftOpen:
    def __init__(
        self,
        storage: Storage,
        *,
        name: str = "hdfs-left-open",
        poll: float = POLL_S,
        patience: float = PATIENCE_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._storage, self._name = storage, name
        self.poll, self.patience = poll, patience
        self._clock = clock
        self._lock = threading.Lock()
        self._given_up: dict[str, float] = {}  # path -> when it was given up
        self._next_ask: dict[str, tuple[float, float]] = {}  # path -> (when to ask next, the gap after)
        self._thread: threading.Thread | None = None

    @property
    def waiting(self) -> list[str]:
        """The files given up and not deleted yet."""
        with self._lock:
            return sorted(self._given_up)

    def add(self, path: str, *, start: bool = True) -> None:
        """Delete `path` once HDFS has closed it. `start=False` (tests): no thread; the
        caller runs `settle()`."""
        with self._lock:
            self._given_up.setdefault(path, self._clock())
            if start and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def settle(self) -> int:
        """One round: ask for the recovery of each file still waiting, delete those
        closed (or waited for `patience`); how many are left waiting."""
        with self._lock:
            given_up = dict(self._given_up)
        for path, since in sorted(given_up.items(), key=lambda item: item[1]):
            now = self._clock()
            waited = now - since
            due, gap = self._next_ask.get(path, (now, self.poll))
            if now < due and waited < self.patience:
                continue
            try:
                if still_open(self._storage, [path]) and waited < self.patience:
                    self._next_ask[path] = (now + gap, min(gap * 2, MAX_ASK_GAP_S))
                    continue
                if waited >= self.patience:
                    log.info("hdfs: deleting %s, still open %.0f s after it was given up", path, waited)
                self._storage.delete(path)
            except StorageError as error:
                if waited < self.patience:
                    continue  # asked again next round
                log.info("hdfs: could not delete %s, given up open (%s); it stays hidden", path, error)
            with self._lock:
                self._given_up.pop(path, None)
            self._next_ask.pop(path, None)
        with self._lock:
            return len(self._given_up)

    def _run(self) -> None:
        while True:
            if not self.settle():
                with self._lock:
                    if not self._given_up:  # nothing came in since: end (`add` starts another)
                        self._thread = None
                        return
            time.sleep(self.poll)  # a pause between NameNode calls, never a tight loop
