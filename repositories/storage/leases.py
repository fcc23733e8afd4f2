"""Wait until files another writer left open are closed by the backend (HDFS lease recovery).

`recover_leases` asks `Storage.recover_lease` for every file in one round, then polls
only the files still open, with one shared backoff: every `first_wait` (0.1 s; a
fence asks every 0.05 s) for the first `fast_window` (2 s), then doubling up to
`max_wait`. The recoveries run in parallel on the DataNodes, so the wait is as long
as the slowest file, not the sum.

Why this schedule: block recovery rides on DataNode heartbeats. The NameNode hands it
to a DataNode in the reply to its next heartbeat, so a file closes within a second or
two, and a short poll sees that without sitting out a long backoff step. Asking again
while a recovery runs does not restart it (since HDFS-11576, Hadoop 3.1, a new
recovery starts only when the previous one timed out), so each poll costs one cheap
NameNode call per open file. After the window, the backoff keeps a stuck recovery
from turning into a tight loop. (HBase waits 4 s before its second call, for older
HDFS.)

Order matters on a DataNode: it recovers the blocks the NameNode hands it one after
another, in the order they were asked for, so a caller asks first for what it needs
first (a fence asks for the WAL's journals before the swap files, and for the dead
writer's content files only after both; `after_first_round`).

Who uses it: fencing a dead owner's shard (its WAL and swap files), and reading a
dead incarnation's content file that it left open (its close failed after its claims
were hsynced): hdfs-native reads a file only up to its last finished block, so such
a file reads short until its lease is recovered.

`still_open` asks once and does not wait: for whoever deletes what a dead writer may
have left open (the leader's collection of dead incarnations' content), which must
not delete a file before it is closed. HDFS deletes an open file's last block before
its DataNodes ever report it finished, and the NameNode then counts that block
against each of them for good (`blockScheduled`: what it takes off a DataNode's free
space when it places new blocks; only abandoning a block, or restarting the
NameNode, takes it off). A recovered block is finished first, and reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .errors import StorageFileNotFound, StorageUnavailable

if TYPE_CHECKING:
    from repositories.storage import Storage


class LeaseRecoveryTimeout(StorageUnavailable):
    """A file was still open for writing when the deadline of `recover_leases` passed:
    HDFS cannot finish it now (safe mode, DataNodes of its last block down)."""

    def __init__(self, path: str, waited: float, still_open: int):
        self.waited, self.still_open = waited, still_open
        super().__init__(
            f"the lease on {path} was not recovered after {waited:.1f}s ({still_open} file(s) still "
            "open); the NameNode may be in safe mode or a DataNode holding the last block is down. "
            "Retry once HDFS is healthy",
            path,
        )


def recover_leases(
    storage: Storage,
    paths: Iterable[str],
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    first_wait: float = 0.1,
    fast_window: float = 2.0,
    max_wait: float = 8.0,
    timeout: float = 120.0,
    after_first_round: Callable[[], None] | None = None,
) -> tuple[int, float]:
    """Return (recover_lease calls, seconds waited) once every path is closed.

    `after_first_round`, if given, is called once every path's lease has been asked
    for the first time (also when there are none): what the caller queues at the
    NameNode from then on comes after these files' block recoveries.
    `sleep` and `clock` are injected so tests drive the backoff without waiting."""
    start = clock()
    calls = 0
    delay = first_wait
    pending = list(paths)
    first_round = True
    while pending or first_round:
        still_open = []
        for path in pending:
            calls += 1
            if not storage.recover_lease(path):
                still_open.append(path)
        pending = still_open
        if first_round:
            first_round = False
            if after_first_round is not None:
                after_first_round()
        if not pending:
            break
        waited = clock() - start
        if waited >= timeout:
            raise LeaseRecoveryTimeout(pending[0], waited, len(pending))
        sleep(delay)  # a pause between NameNode calls, never a tight loop
        if clock() - start >= fast_window:
            delay = min(delay * 2, max_wait)
    return calls, clock() - start


def still_open(storage: Storage, paths: Iterable[str]) -> list[str]:
    """Ask for the lease recovery of each of `paths` once, without waiting, and return
    those not closed yet, in order (HDFS closes each once its DataNodes have recovered
    its last block; asked again, it does not restart a recovery under way). A path
    gone since is not open."""
    left = []
    for path in paths:
        try:
            if not storage.recover_lease(path):
                left.append(path)
        except StorageFileNotFound:
            continue
    return left
