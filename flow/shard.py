"""`QueueShard`: a set of queues, the WAL that makes them durable, and their swap store.

This is the unit the cluster moves between nodes when one dies (a survivor fences the
dead node and adopts its shards): each shard has its own WAL and epoch, and its swap
files live beside it. A standalone node runs one shard on local disk; a clustered node
runs one shard of its own on HDFS and adopts the shards of dead nodes. Nothing here is
global.

A shard with `wal=None` is in memory only (the stateless engine): no swap store, no
durability, the same queues and sessions.

Reserved WAL record namespaces (queue ids starting with "__"):
  * `__state__` - processor state, one record per processor (`StateRecords`), written
    in the same WAL transaction as the session that changed it;
  * `__provenance_outbox__` - the last provenance events of each commit slot
    (`provenance_outbox`), so a crash between the WAL and provenance loses nothing.

`swap_outs` and `swap_ins` count the swap files written and read back (for the
metrics); `swap_failures` the attempts that failed.

Lock plan: `_swap_locks` (one per queue) serialise the swap I/O of a queue; a thread
that finds the lock taken skips (the holder re-plans after its action). A drop
(`flow.queue_drop`) waits for the lock and holds it throughout (`swap_lock`). The queues
have their own locks (see `queue.FlowFileQueue`). `_state_lock` guards `_states`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat

from repositories.claims import ContentClaim
from repositories.flowfile import (
    DEFAULT_CHECKPOINT_INTERVAL,
    DEFAULT_PARTITIONS,
    OutcomeUnknownError,
    Put,
    SwapFile,
    SwapIn,
    SwapOut,
    WriteAheadLog,
    WriteAheadLogError,
)
from repositories.instruments import Counter
from repositories.storage import join
from repositories.swap import SwapError, SwapFileMissingError, SwapStore

from .errors import QueueRecoveryError
from .flowfile import FlowFile
from .queue import FlowFileQueue
from .swap_policy import NOTHING, ReadSwapFile, WriteSwapFile

log = logging.getLogger(__name__)

STATE_QUEUE = "__state__"
OUTBOX_QUEUE = "__provenance_outbox__"


@dataclass
class ShardRecovery:
    """What `QueueShard.recover` found."""

    flowfiles: int = 0
    swap_files: int = 0
    swapped_flowfiles: int = 0
    orphaned_swap_files: list[str] = field(default_factory=list)
    states: int = 0
    outbox: list = field(default_factory=list)  # FlowFileRecords of the provenance outbox
    live_claims: list = field(default_factory=list, repr=False)


class QueueShard:
    def __init__(self, shard_id: str, queues: Iterable[FlowFileQueue], *, wal=None, swap_store=None):
        self.id = shard_id
        self.queues: dict[str, FlowFileQueue] = {queue.id: queue for queue in queues}
        self.wal = wal
        self.swap_store = swap_store if wal is not None else None
        self._swap_locks = {queue_id: threading.Lock() for queue_id in self.queues}
        self._state_lock = threading.Lock()
        self._states: dict[str, dict[str, str]] = {}
        self.swap_failures = 0
        self.swap_outs = Counter()
        self.swap_ins = Counter()

    @property
    def durable(self) -> bool:
        return self.wal is not None

    # -- processor state --------------------------------------------------------

    def get_state(self, component_id: str) -> dict[str, str]:
        with self._state_lock:
            return dict(self._states.get(component_id, {}))

    def set_state_committed(self, component_id: str, state: dict[str, str]) -> None:
        with self._state_lock:
            self._states[component_id] = dict(state)

    @staticmethod
    def state_record(component_id: str, state: dict[str, str], now_ms: int) -> FlowFile:
        return FlowFile(f"{STATE_QUEUE}/{component_id}", dict(state), None, STATE_QUEUE, 0, now_ms, now_ms, 0)

    # -- recovery ---------------------------------------------------------------

    def recover(self) -> ShardRecovery:
        """Rebuild the queues from the WAL: live FlowFiles are loaded, swapped ones are
        registered from their swap file's summary without being loaded."""
        report = ShardRecovery()
        if self.wal is None:
            return report
        if self.swap_store is not None:
            self.swap_store.prepare()
        records = self.wal.recover()
        by_queue: dict[str, list[FlowFile]] = defaultdict(list)
        live_claims = report.live_claims
        for record in records.values():
            queue_id = record.queue
            if queue_id == STATE_QUEUE:
                self._states[record.id[len(STATE_QUEUE) + 1:]] = dict(record.attributes)
                report.states += 1
                continue
            if queue_id == OUTBOX_QUEUE:
                report.outbox.append(record)
                continue
            by_queue[queue_id].append(FlowFile.from_record(record))
            if record.content_claim is not None:
                live_claims.append(record.content_claim)
        swap_files = dict(self.wal.swap_files)
        unknown = {q: len(v) for q, v in by_queue.items() if q not in self.queues}
        for swap_file in swap_files.values():
            if swap_file.queue not in self.queues:
                unknown[swap_file.queue] = unknown.get(swap_file.queue, 0) + swap_file.count
        if unknown:
            detail = ", ".join(f"{q!r} ({n} FlowFiles)" for q, n in sorted(unknown.items()))
            raise QueueRecoveryError(
                f"shard {self.id}: the FlowFile WAL holds FlowFiles for connections the flow does not "
                f"define: {detail}. Nothing was dropped; start the node with a flow that still has "
                "these connections (ids are '<source>/<relationship>/<destination>' unless given) and let them drain.")
        for queue_id, flowfiles in by_queue.items():
            flowfiles.sort(key=lambda f: f.entry_date)
            self.queues[queue_id].put_all(flowfiles)
            report.flowfiles += len(flowfiles)
        for location, swap_file in sorted(swap_files.items()):
            summary = self.swap_store.read_summary(location)
            self.queues[swap_file.queue].register_swapped(summary)
            report.swap_files += 1
            report.swapped_flowfiles += summary.count
            for resource, (count, end) in summary.resources.items():
                # Claimant counts of swapped FlowFiles without loading them: one claim
                # per FlowFile, reaching as far as the furthest of them.
                live_claims.extend(repeat(ContentClaim(resource, 0, end), count))
        if self.swap_store is not None:
            for location in self.swap_store.locations():
                if location not in swap_files:
                    # Written (and maybe synced) but the WAL never recorded it, or
                    # recorded its swap-in: its FlowFiles live elsewhere.
                    self.swap_store.delete(location)
                    report.orphaned_swap_files.append(location)
        for queue in self.queues.values():
            self.maintain(queue)
        return report

    # -- swapping ---------------------------------------------------------------

    def maintain(self, queue: FlowFileQueue) -> None:
        """Carry out the queue's swap policy until it asks for nothing more."""
        if self.swap_store is None:
            return
        lock = self._swap_locks[queue.id]
        if not lock.acquire(blocking=False):
            return
        try:
            while True:
                action = queue.plan_swap()
                if action is NOTHING:
                    return
                if isinstance(action, WriteSwapFile):
                    if not self._swap_out(queue, action.count):
                        return
                elif isinstance(action, ReadSwapFile):
                    if not self._swap_in(queue):
                        return
        finally:
            lock.release()

    def _swap_out(self, queue: FlowFileQueue, count: int) -> bool:
        batch = queue.take_swap_out_batch(count)
        try:
            summary = self.swap_store.write(queue.id, batch)
        except SwapError as error:
            queue.abort_swap_out(batch)
            self.swap_failures += 1
            log.warning("queue %s: swap-out failed, the batch stays in memory: %s", queue.id, error)
            return False
        location = summary.location
        try:
            # The swap file was synced by write(): only now may the WAL point at it.
            self.wal.update([SwapOut(SwapFile(location, queue.id, summary.count, summary.size),
                                     tuple(f.id for f in batch))])
        except Exception as error:
            # The batch goes back to memory whatever the WAL answered: until the WAL
            # rolls, it acknowledges no transaction (none can process the batch) and
            # the roll settles the SwapOut without it.
            queue.abort_swap_out(batch)
            self.swap_failures += 1
            log.warning("queue %s: the WAL refused a swap-out, the batch stays in memory: %s", queue.id,
                        str(error).splitlines()[0][:300])
            if isinstance(error, OutcomeUnknownError):
                # A recovery may still replay the SwapOut, and would need the file;
                # once the WAL has settled it, nothing ever points at the file.
                self.wal.when_settled(functools.partial(self._delete_orphan, location))
            elif isinstance(error, WriteAheadLogError):
                self._delete_orphan(location)  # refused: the WAL never points at it
            # Anything else says nothing about the WAL: the file stays, and the next
            # recovery removes it if the WAL never recorded it.
            return False
        queue.complete_swap_out(batch, summary)
        self.swap_outs.add()
        return True

    @contextlib.contextmanager
    def swap_lock(self, queue: FlowFileQueue):
        """Hold off every swap of `queue` (a drop takes its swap files and staging itself);
        `maintain` skips the queue meanwhile."""
        with self._swap_locks[queue.id]:
            yield

    def forget_swap_file(self, location: str) -> None:
        """Delete a swap file the WAL no longer points at (a committed drop)."""
        self._delete_orphan(location)

    def _delete_orphan(self, location: str) -> None:
        try:
            self.swap_store.delete(location)
        except Exception as error:  # noqa: BLE001 - the next recovery removes it
            log.warning("could not delete swap file %s, which the WAL does not record (the next recovery "
                        "removes it): %s", location, str(error).splitlines()[0][:300])

    def _swap_in(self, queue: FlowFileQueue) -> bool:
        summary = queue.take_swap_in()
        if summary is None:
            return False
        try:
            _, records = self.swap_store.read(summary.location)
            flowfiles = [FlowFile.from_record(record) for record in records]
            self.wal.update([SwapIn(summary.location)] + [Put(record) for record in records])
        except SwapFileMissingError:
            queue.abort_swap_in(summary)
            raise
        except Exception as error:
            # The file stays whatever the WAL answered: the WAL still points at it,
            # unless a SwapIn of unknown outcome is replayed, and then the recovery
            # removes it as an orphan.
            queue.abort_swap_in(summary)
            self.swap_failures += 1
            log.warning("queue %s: swap-in of %s failed, will retry: %s", queue.id, summary.location, error)
            return False
        queue.complete_swap_in(summary, flowfiles)
        self.swap_ins.add()
        # The WAL no longer points at the file; a crash before this delete leaves an
        # orphan that the next recovery removes.
        self._delete_orphan(summary.location)
        return True

    # -- polling ----------------------------------------------------------------

    def poll(self, queue: FlowFileQueue, max_count: int, now_ms: int | None = None):
        polled, expired = queue.poll(max_count, now_ms)
        # Swap in when there is room; and when a poll found nothing while FlowFiles wait
        # in memory, out of reach (staged after a swap-out failed): the policy is tried
        # again, as nothing else may come to try it once no new FlowFiles arrive.
        if self.swap_store is not None and (queue.in_memory() + queue.swap_batch <= queue.swap_threshold
                                            or (not polled and not expired and queue.in_memory())):
            self.maintain(queue)
            if not polled and not expired:
                polled, expired = queue.poll(max_count, now_ms)
        return polled, expired

    def in_memory(self) -> int:
        return sum(queue.in_memory() for queue in self.queues.values())


def open_shard(storage, directory: str, shard_id: str, queues: Iterable[FlowFileQueue], *, epoch: int = 0,
               partitions: int = DEFAULT_PARTITIONS, checkpoint_interval: float | None = DEFAULT_CHECKPOINT_INTERVAL,
               wal_hooks=None,
               swap_hooks=None) -> QueueShard:
    """A durable shard in `directory` of any storage backend: `wal/` and `swap/` under it.

    The caller calls `recover()` next. On HDFS the same layout serves a shard that a
    survivor adopts after fencing the dead owner: a new `QueueShard` over the fenced directory, with a
    higher epoch."""
    if not storage.exists(directory):
        storage.mkdir(directory, parents=True, exist_ok=True)
    wal = WriteAheadLog(storage, join(directory, "wal"), partitions=partitions, epoch=epoch,
                        checkpoint_interval=checkpoint_interval, hooks=wal_hooks)
    swap_store = SwapStore(storage, join(directory, "swap"), hooks=swap_hooks)
    return QueueShard(shard_id, queues, wal=wal, swap_store=swap_store)
