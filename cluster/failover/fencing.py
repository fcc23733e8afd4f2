"""Fence a shard before reading it, HBase's way (its handling of a crashed
RegionServer: rename the WAL directory, then recover the lease of every file).

1. Rename the shard's current HDFS directory to `<shard>-fenced-<epoch>`. The old
   owner's files keep their inode but lose their path, and since every file is
   created with `create_parent=False`, the old owner cannot bring the directory back
   by creating a new file in it.
2. `recover_lease` every file under the fenced directory (the WAL's journals and
   snapshot first, then swap files: a DataNode recovers blocks in the order their
   leases were asked for), polling until each is closed (`repositories.storage.leases`: short
   polls for the first 2 s, then a doubling backoff).

After that the old owner's next hsync fails with `LeaseLost`, and the adopter reads
a directory nobody else can write.

Idempotent: the "current" directory of a shard is the fenced one with the highest
epoch, or the original when none exists. Re-running at the same epoch (an adopter
that crashed mid-fence, or a second divvy child) finds `-fenced-<epoch>` already in
place and only recovers leases. A fenced directory with a *higher* epoch means a
newer owner fenced it: this adopter is stale and gets `FencedError`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from repositories.seams import FaultSeams
from repositories.storage import StorageError, StorageFileNotFound, files_under
from repositories.storage.leases import LeaseRecoveryTimeout, recover_leases

from ..errors import FencedError, FenceTimeout

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)

# Seconds between lease-recovery polls for the first `fast_window` seconds: block
# recovery finishes on a DataNode heartbeat, which may come this soon.
DEFAULT_FIRST_WAIT = 0.05
# The lease-recovery bound: how long a fence waits for every file of the shard to be
# closed before it gives up (`FenceTimeout`, retried: HDFS cannot serve it now). An
# adoption that fails for another reason ends within it (`core.adoption_failures`).
DEFAULT_FENCE_TIMEOUT = 120.0


class FenceHooks(FaultSeams):
    """Named fault seams of fencing: a test stops or breaks the adopter at these points."""

    def after_rename(self, fenced: str) -> None:
        """The shard's directory is renamed to `fenced`; no lease is recovered yet."""

    def before_recover(self, path: str) -> None:
        """The lease of `path` (a file under the fenced directory) is about to be recovered."""


@dataclass
class FenceReport:
    directory: str  # the fenced directory, now the shard's only copy
    renamed_from: str | None
    files: list[str] = field(default_factory=list)
    recover_calls: int = 0
    waited: float = 0.0
    seconds: float = 0.0  # the whole fence, rename to the last lease recovered


def journals_first(files: list[str], wal_directory: str) -> list[str]:
    """`files` with the WAL's (under `wal_directory`) first, each group in its order.

    A DataNode recovers the blocks it is handed one after another, in the order their
    leases were asked for; the WAL's recovery reads the journals first."""
    prefix = wal_directory.rstrip("/") + "/"
    return sorted(files, key=lambda path: not path.startswith(prefix))


def current_directory(storage: Storage, layout, shard: str) -> tuple[str | None, int | None]:
    """(path, fenced epoch or None) of the shard's data as it is now, or (None, None)."""
    parent_dir = layout.hdfs_shards
    original = layout.shard_directory(shard)
    best: tuple[str | None, int | None] = (None, None)
    try:
        entries = storage.list(parent_dir)
    except StorageFileNotFound:
        return best
    for entry in entries:
        name = layout.parse_shard_directory_name(entry.name)
        if name is not None and name.shard == shard and name.fenced_epoch is not None:
            if best[1] is None or name.fenced_epoch > best[1]:
                best = (entry.path, name.fenced_epoch)
    if best[0] is None and storage.exists(original):
        return original, None
    return best


def fence(
    storage: Storage,
    layout,
    shard: str,
    epoch: int,
    *,
    sleep=time.sleep,
    clock=time.monotonic,
    first_wait: float = DEFAULT_FIRST_WAIT,
    fast_window: float = 2.0,
    max_wait: float = 8.0,
    timeout: float = DEFAULT_FENCE_TIMEOUT,
    hooks: FenceHooks | None = None,
    on_leases_asked: Callable[[], None] | None = None,
) -> FenceReport:
    """Fence `shard` for its new owner at `epoch` and return where its data now is.

    `on_leases_asked` is called once the lease of every file of the shard has been
    asked for (`recover_leases`' first round), the WAL's journals first: what the
    adopter asks HDFS to recover next (the dead writer's content files) queues behind
    them on the DataNodes, instead of ahead of what the WAL's recovery waits for.
    `sleep` and `clock` are injected so tests drive the backoff without waiting."""
    hooks = FenceHooks.coerce(hooks)
    started = clock()
    target = layout.fenced_directory(shard, epoch)
    found, found_epoch = current_directory(storage, layout, shard)
    renamed_from = None
    if found_epoch is not None and found_epoch > epoch:
        raise FencedError(
            shard,
            found_epoch,
            None,
            reason=f"it was fenced at epoch {found_epoch} by a newer owner; this adopter at epoch {epoch} is stale",
        )
    if found is None:
        # The owner died before it wrote anything: nothing to recover. The empty fenced
        # directory still marks the epoch, so a late old owner cannot create the original.
        try:
            storage.mkdir(target)
        except StorageError:
            if current_directory(storage, layout, shard) != (target, epoch):
                raise
    elif found != target:
        try:
            storage.rename(found, target)
            renamed_from = found
            log.info("fenced shard %s: renamed %s to %s", shard, found, target)
        except StorageError:
            # Another adopter at the same epoch (a sibling divvy slice) renamed it first.
            if current_directory(storage, layout, shard) != (target, epoch):
                raise
    hooks.after_rename(target)
    report = FenceReport(target, renamed_from)
    files = journals_first(files_under(storage, target), layout.wal_directory(target))
    for path in files:
        hooks.before_recover(path)
    try:
        calls, waited = recover_leases(
            storage,
            files,
            sleep=sleep,
            clock=clock,
            first_wait=first_wait,
            fast_window=fast_window,
            max_wait=max_wait,
            timeout=timeout,
            after_first_round=on_leases_asked,
        )
    except LeaseRecoveryTimeout as error:
        raise FenceTimeout(shard, error.path, error.waited) from None
    report.files, report.recover_calls, report.waited = files, calls, waited
    report.seconds = clock() - started
    return report
