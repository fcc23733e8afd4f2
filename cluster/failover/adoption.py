"""Open a shard for its owner: a node's own new shard, or one it adopts.

Adopting a whole shard: fence it (`fencing.fence`); the handle then opens its WAL
from the fenced directory at the new epoch, and the runtime recovers it. Recovery
sees journals of an older epoch and checkpoints at once, which re-stamps the WAL
with the new epoch: from then on a stale writer's frames would be refused
(`StaleEpochError`) as well as fenced.

Adopting a divvy slice (a child shard with a `source`): fence the *parent* at the
parent's new epoch (idempotent: every child does it, the first one renames), read
the parent's fenced WAL read-only (it is never opened for writing, so it stays
exactly as the dead owner left it), and copy into the child's own WAL the FlowFiles
whose crc32(id) is in the child's range, and the swap files whose crc32 of their
location relative to the shard directory is, byte for byte, without loading them. The child is "seeded" by the
compare-and-set that marks it adopted; until then nothing of it is processed, and a
new adopter of an unseeded child throws the partial copy away and copies again. A
seeded child is adopted like any whole shard, from its own WAL. Every FlowFile is in
exactly one range, so exactly one child ever processes it.

Every attempt ends: it adopts the shard, or it fails, and `failure_kind` says how
(HDFS or ZooKeeper trouble, tried again soon; damage or a flow that cannot hold the
shard, which no retry changes), for `core.adoption_failures` to decide whether to try
again or hold the shard for an operator.

`flow.json` is written whole or not at all: under a temporary name in the shard
directory (`flow.json.partial`), synced, then renamed into place. A writer that dies
before the rename leaves no `flow.json`, only the temporary, which nothing reads
(fencing closes it with the rest).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable

from flow.errors import FlowDefinitionError, ProcessorRegistryError, QueueRecoveryError
from repositories.flowfile import (
    CorruptJournalError,
    CorruptRecordError,
    CorruptSnapshotError,
    FlowFileSerDe,
    NotAWriteAheadLogError,
    Put,
    StaleEpochError,
    SwapOut,
    UnknownSerDeError,
    WalDamagedError,
    WriteAheadLogError,
    list_wal_files,
    read_state,
)
from repositories.instruments import LatencyHistogram

from ..core.adoption_failures import FailureKind
from ..core.flows import FlowSnapshot
from ..core.layout import ClusterLayout
from ..core.ownership import ShardOwnership
from ..core.story import tag
from ..errors import ClusterError, FencedError, first_line
from .fencing import DEFAULT_FENCE_TIMEOUT, DEFAULT_FIRST_WAIT, FenceHooks, current_directory, fence
from .runtime import NO_CALLBACKS, ShardCallbacks, ShardHandle, WalOptions

log = logging.getLogger(__name__)
COPY_BATCH = 1000
PARTIAL_SUFFIX = ".partial"  # flow.json is written as flow.json.partial, then renamed


# What no new attempt at adopting a shard can change: its files say no. The WAL's
# damage, corruption and foreign files (it refuses, so that no acknowledged FlowFile is
# lost silently), a WAL written at a newer epoch than ZooKeeper gives this adopter, and
# a flow that cannot hold the shard's FlowFiles or cannot be run here.
PERMANENT_FAILURES = (
    WalDamagedError,
    CorruptSnapshotError,
    CorruptJournalError,
    NotAWriteAheadLogError,
    UnknownSerDeError,
    CorruptRecordError,
    StaleEpochError,
    QueueRecoveryError,
    FlowDefinitionError,
    ProcessorRegistryError,
)
# Trouble with a service, which the same attempt gets past once it is back: HDFS (every
# storage error is an OSError, as are timeouts), ZooKeeper (`ZooKeeperError`), this
# node's session, a lost compare-and-set race (all `ClusterError`s); and the WAL's own
# failures to write (its recovery's checkpoint on a storage that refuses).
TRANSIENT_FAILURES = (OSError, ClusterError, WriteAheadLogError)
# Neither: a file of the fenced shard that is not there (nobody writes the directory
# any more, so it will not come back by itself, yet an outage can look like it).
UNKNOWN_FAILURES = (FileNotFoundError,)


def failure_kind(error: BaseException) -> FailureKind:
    """How an attempt at adopting a shard failed (`core.adoption_failures`): by the
    error, or else by the errors it was raised from (a wrapper of a known kind)."""
    seen = 0
    cause: BaseException | None = error
    while cause is not None and seen < 8:
        if isinstance(cause, PERMANENT_FAILURES):
            return FailureKind.PERMANENT
        if isinstance(cause, UNKNOWN_FAILURES):
            return FailureKind.UNKNOWN
        if isinstance(cause, TRANSIENT_FAILURES):
            return FailureKind.TRANSIENT
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return FailureKind.UNKNOWN


def describe_failure(error: BaseException, storage=None) -> str:
    """A failed attempt, in one line for the shard's history and the plan's notes:
    what went wrong and, for damage, what the operator does about it."""
    if isinstance(error, WalDamagedError):
        where = getattr(storage, "uri", None)
        directory = where(error.directory) if where is not None else error.directory
        first = error.damage[0] if error.damage else None
        found = f"{first.path}: {first.what[:300]}" if first is not None else "no finding listed"
        more = f" (and {len(error.damage) - 1} more findings)" if len(error.damage) > 1 else ""
        return (
            f"WalDamagedError: the WAL {error.directory} is damaged in a way no crash explains: {found}{more}. "
            "Recovering would lose acknowledged FlowFiles without a word, so nothing was changed. Restore the "
            f"damaged files, or accept the loss with `custody wal fsck --accept-damage {directory}`; the shard is "
            "tried again now and then, and runs once its WAL opens"
        )
    return f"{type(error).__name__}: {first_line(error, 600)}"


def slice_hash(key: str) -> int:
    return zlib.crc32(key.encode())


def open_home_shard(
    storage,
    layout: ClusterLayout,
    ownership: ShardOwnership,
    options: WalOptions,
    flow: FlowSnapshot | None = None,
    *,
    callbacks: ShardCallbacks = NO_CALLBACKS,
) -> ShardHandle:
    """A node's new shard at its incarnation epoch: an empty directory it creates, with
    the flow the node runs (`flow.json`, for whoever adopts the shard), written before
    the WAL, so that a shard without it never holds a FlowFile. `callbacks`: what its
    runtime asks the member (none, outside a member)."""
    directory = layout.shard_directory(ownership.shard)
    storage.mkdir(directory)
    # If this incarnation was declared dead before it got here, an adopter may have
    # fenced the shard already (an empty `-fenced-<e>`): then this directory is one
    # nobody will ever read, and the node must not write to it.
    _, fenced_epoch = current_directory(storage, layout, ownership.shard)
    if fenced_epoch is not None:
        raise FencedError(
            ownership.shard,
            fenced_epoch,
            None,
            incarnation=ownership.owner,
            reason="its shard was fenced before the node could open it",
        )
    if flow is not None:
        _write_whole(storage, layout.flow_file(directory), flow.encoded)
    storage.mkdir(layout.swap_directory(directory))
    return _handle(storage, layout, ownership, directory, options, callbacks, home=True)


def adopt_shard(
    storage,
    layout: ClusterLayout,
    ownership: ShardOwnership,
    options: WalOptions,
    *,
    sleep=time.sleep,
    fence_hooks: FenceHooks | None = None,
    fence_first_wait: float = DEFAULT_FIRST_WAIT,
    fence_timeout: float = DEFAULT_FENCE_TIMEOUT,
    fence_durations: LatencyHistogram | None = None,
    callbacks: ShardCallbacks = NO_CALLBACKS,
    on_leases_asked: Callable[[], None] | None = None,
) -> ShardHandle:
    """Fence a shard moved to this node (state ADOPTING at `ownership.epoch`, or HELD
    and tried again) and return its handle, with `callbacks` (what its runtime asks the
    member). For an unseeded divvy slice, also seed its WAL. Each fence that succeeds is
    timed into `fence_durations`. `on_leases_asked` is called once, when the first
    fence has asked for the lease of each of its files (`fence`)."""
    started = time.monotonic()
    asked = False

    def leases_asked() -> None:  # a divvy slice fences its parent, then itself
        nonlocal asked
        if not asked and on_leases_asked is not None:
            asked = True
            on_leases_asked()

    def fenced(shard: str, epoch: int):
        report = fence(
            storage,
            layout,
            shard,
            epoch,
            sleep=sleep,
            hooks=fence_hooks,
            first_wait=fence_first_wait,
            timeout=fence_timeout,
            on_leases_asked=leases_asked,
        )
        if fence_durations is not None:
            fence_durations.observe(report.seconds)
        return report

    if ownership.source is not None and not ownership.seeded:
        return _adopt_slice(storage, layout, ownership, options, callbacks, fenced)
    report = fenced(ownership.shard, ownership.epoch)
    directory = report.directory
    swap = layout.swap_directory(directory)
    if not storage.exists(swap):
        storage.mkdir(swap)
    log.info(
        "%s fenced shard %s for epoch %d: %s, %d files, %d recover calls, %.2fs waiting (%.2fs in all)",
        tag(ownership.step),
        ownership.shard,
        ownership.epoch,
        directory,
        len(report.files),
        report.recover_calls,
        report.waited,
        time.monotonic() - started,
    )
    return _handle(
        storage,
        layout,
        ownership,
        directory,
        options,
        callbacks,
        home=False,
        notes=[f"fenced {len(report.files)} files, waited {report.waited:.2f}s"],
    )


def _handle(storage, layout, ownership, directory, options, callbacks, *, home, notes=()) -> ShardHandle:
    """Swap locations are recorded as full paths, and fencing renamed the directory
    they name. Left alone, the adopter would not find them, and worse, would take
    every swap file under the new name for an orphan and delete it. So the WAL's
    recovery moves each registration through `handle.relocate` and checkpoints the
    new locations at the new epoch before anything runs."""
    return ShardHandle(ownership, directory, layout, storage, home, options, callbacks, notes=list(notes))


def _adopt_slice(storage, layout, ownership, options, callbacks, fenced) -> ShardHandle:
    source = ownership.source
    parent = fenced(source.parent, source.parent_epoch)
    own = fenced(ownership.shard, ownership.epoch)
    directory = own.directory
    # Not seeded: whatever a crashed earlier adopter copied here is discarded.
    for entry in storage.list(directory):
        storage.delete(entry.path, recursive=True)
    swap = layout.swap_directory(directory)
    storage.mkdir(swap)
    if storage.exists(layout.flow_file(parent.directory)):
        _write_whole(storage, layout.flow_file(directory), storage.read(layout.flow_file(parent.directory)))
    parent_wal = layout.wal_directory(parent.directory)
    records: dict = {}
    swap_files: dict = {}
    if storage.exists(parent_wal):
        # Read-only: the parent's WAL is never opened for writing, so it stays exactly
        # as its dead owner left it, for every sibling slice and every retry.
        state = read_state(storage, parent_wal, list_wal_files(storage, parent_wal), FlowFileSerDe(), None)
        if state.report.damage:
            # What the WAL would refuse to recover, a slice must not copy either: the
            # FlowFiles the damage took would be lost without a word. The parent stays
            # as it is, for an operator (`custody wal fsck --accept-damage`).
            raise WalDamagedError(parent_wal, state.report.damage)
        records, swap_files = state.records, state.swap_files
    mine = [record for record_id, record in sorted(records.items()) if source.contains(slice_hash(record_id))]
    my_swaps = []
    for location, swap_file in sorted(swap_files.items()):
        relative = _relative(layout, location, source.parent)
        if not source.contains(slice_hash(relative)):
            continue
        target = f"{directory}/{relative}"
        if storage.exists(f"{parent.directory}/{relative}"):
            _copy_file(storage, f"{parent.directory}/{relative}", target)
        else:
            # Registered all the same: the slice's queue sets it aside with an alarm
            # naming it (its FlowFiles stay counted), as a whole shard's adopter does,
            # and reads it once an operator puts a copy there.
            log.warning(
                "%s slice %s: swap file %s of %s is missing; registered without it",
                tag(ownership.step),
                ownership.shard,
                location,
                source.parent,
            )
        my_swaps.append(swap_file._replace(location=target))
    handle = _handle(
        storage, layout, ownership, directory, options, callbacks, home=False, notes=[f"slice of {source.parent}"]
    )
    wal = handle.open_wal()
    try:
        wal.recover()
        updates = [Put(record) for record in mine] + [SwapOut(swap_file, ()) for swap_file in my_swaps]
        for start in range(0, len(updates), COPY_BATCH):
            wal.update(updates[start : start + COPY_BATCH])
        wal.checkpoint()
    finally:
        wal.close()
    log.info(
        "%s seeded slice %s [%d, %d) of %s: %d of %d FlowFiles, %d of %d swap files",
        tag(ownership.step),
        ownership.shard,
        source.low,
        source.high,
        source.parent,
        len(mine),
        len(records),
        len(my_swaps),
        len(swap_files),
    )
    return handle


def _relative(layout: ClusterLayout, location: str, shard: str) -> str:
    """`swap/x` for a location under the shard's original or any fenced directory.
    Hashing the relative name keeps a swap file in the same slice whatever the
    directory was called when it was written."""
    below = layout.path_in_shard(location, shard)
    return below if below is not None else location.lstrip("/")


def _write_whole(storage, path: str, data: bytes) -> None:
    """`path` holds `data` whole, or does not exist: written under a temporary name
    beside it, synced, then renamed (atomic and durable, by the storage contract). A
    temporary an earlier attempt left is written over."""
    partial = f"{path}{PARTIAL_SUFFIX}"
    with storage.create(partial, overwrite=True) as out:
        out.write(data)
        out.sync()
    storage.rename(partial, path, overwrite=True)


def _copy_file(storage, source: str, target: str, chunk: int = 8 << 20) -> None:
    parent_dir = target.rsplit("/", 1)[0]
    if not storage.exists(parent_dir):
        storage.mkdir(parent_dir, parents=True)
    size = storage.status(source).length
    with storage.create(target, overwrite=True) as out:
        offset = 0
        while offset < size:
            data = storage.read(source, offset, chunk)
            if not data:
                break
            out.write(data)
            offset += len(data)
        out.sync()
