"""`QueueShard`: a set of queues, the WAL that makes them durable, and their swap store.

This is the unit the cluster moves between nodes when one dies (a survivor fences the
dead node and adopts its shards): each shard has its own WAL and epoch, and its swap
files live beside it. A standalone node runs one shard on local disk; a clustered node
runs one shard of its own on HDFS and adopts the shards of dead nodes. Nothing here is
global.

A shard with `wal=None` is in memory only (the stateless engine): no swap store, no
durability, the same queues and sessions.

Reserved WAL record namespaces (queue ids starting with "__"):
  * `__state__` - processor state, one record per entry (`__state__/<processor id>`
    NUL <key>, its one attribute the entry), written in the same WAL transaction as the
    session that changed it: only the entries it added, changed (Put) or removed
    (Delete), so a commit's cost is what it changed, not the whole state. A record
    `__state__/<processor id>` without NUL is the whole state as releases before wrote
    it: read, and replaced by entries at that processor's next state change;
  * `__provenance_outbox__` - the last provenance events of each commit slot
    (`provenance_outbox`), so a crash between the WAL and provenance loses nothing.

`swap_outs` and `swap_ins` count the swap files written and read back (for the
metrics); `swap_failures` the attempts that failed.

A swap file that cannot be read back never stops its queue: it is set aside (its
FlowFiles stay recorded in the WAL, and counted in the queue), quarantined if it is
corrupt, retried with backoff, and shown as an alarm (`unreadable_swap_files`) until it
is read back; `flow.unreadable_swap` decides, this module carries it out. A restart
finds quarantined files set aside again (the WAL records them in quarantine), not in
the queue's line. A swap file registered without its content claims (its summary
unreadable at recovery, or the file missing) is in `ShardRecovery.swap_files_without_claims`:
the node keeps all content until then, and `claims_found` counts its claims when the
file is read at last.

Lock plan: `_swap_locks` (one per queue) serialise the swap I/O of a queue; a thread
that finds the lock taken skips (the holder re-plans after its action). A drop
(`flow.queue_drop`) waits for the lock and holds it throughout (`swap_lock`). The queues
have their own locks (see `queue.FlowFileQueue`). `_state_lock` guards `_states`.
`_unreadable_lock` guards `_unreadable` and `_claims_unknown` (each changed under the
swap lock of the file's queue; the lock is for readers such as the admin API).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING

from repositories.claims import ContentClaim
from repositories.flowfile import (
    DEFAULT_CHECKPOINT_INTERVAL,
    DEFAULT_PARTITIONS,
    Delete,
    OutcomeUnknownError,
    Put,
    SwapFile,
    SwapIn,
    SwapOut,
    Update,
    WalHooks,
    WriteAheadLog,
    WriteAheadLogError,
)
from repositories.instruments import Counter
from repositories.storage import StorageError, join
from repositories.storage.side_by_side import beside, side_by_side
from repositories.swap import (
    CorruptSwapFileError,
    ForeignSwapFileError,
    SwapError,
    SwapFileMissingError,
    SwapStore,
    SwapSummary,
)

from .errors import QueueRecoveryError
from .flowfile import FlowFile
from .queue import FlowFileQueue
from .swap_policy import NOTHING, ReadSwapFile, WriteSwapFile
from .unreadable_swap import (
    ReadFailure,
    RetryBackoff,
    UnreadableSwapFile,
    alarm_text,
    on_read_failed,
    on_registered,
    quarantined,
    retry_now,
)

if TYPE_CHECKING:
    from repositories.flowfile.record import FlowFileRecord
    from repositories.storage import Storage

log = logging.getLogger(__name__)

# A swap file's summary as read, else why it could not be (`QueueShard._read_summary`).
_SummaryRead = tuple[SwapSummary | None, ReadFailure | None, str]

STATE_QUEUE = "__state__"
STATE_ENTRY_SEPARATOR = "\0"
# Swap files whose summaries a recovery reads at once. On HDFS each read is an open and
# a read of the file's first block (round trips to the NameNode and a DataNode), so a
# dead node's hundred swap files would hold its takeover for a second or more, one
# after another.
SUMMARY_READERS = 8
# FlowFiles at the head of each recovered queue whose claims `ShardRecovery.heads` names.
HEAD_FLOWFILES = 100


def states_of(records: Iterable[FlowFileRecord]) -> dict[str, dict[str, str]]:
    """Every processor state among WAL `records` (entries and older whole states), by processor id."""
    states: dict[str, dict[str, str]] = {}
    for record in records:
        if record.queue == STATE_QUEUE:
            component_id, _, _ = record.id[len(STATE_QUEUE) + 1 :].partition(STATE_ENTRY_SEPARATOR)
            states.setdefault(component_id, {}).update(record.attributes)
    return states


OUTBOX_QUEUE = "__provenance_outbox__"


@dataclass
class ShardRecovery:
    """What `QueueShard.recover` found."""

    flowfiles: int = 0
    swap_files: int = 0
    swapped_flowfiles: int = 0
    orphaned_swap_files: list[str] = field(default_factory=list)
    orphaned_swap_files_kept: list[str] = field(default_factory=list)  # quarantined: the WAL had damage
    unreadable_swap_files: list[str] = field(default_factory=list)  # set aside (quarantined, missing, ...)
    # Registered from the WAL's record only (summary unreadable, or file missing): the
    # content their FlowFiles hold is unknown, so none may be taken for an orphan.
    swap_files_without_claims: list[str] = field(default_factory=list)
    states: int = 0
    outbox: list[FlowFileRecord] = field(default_factory=list)  # the provenance outbox's records
    live_claims: list[ContentClaim] = field(default_factory=list, repr=False)
    # The claims of each queue's first FlowFiles, in the order they will be taken: what
    # the first tasks read (an adopter reads them ahead, `cluster.node.content`).
    heads: list[ContentClaim] = field(default_factory=list, repr=False)


class QueueShard:
    def __init__(
        self,
        shard_id: str,
        queues: Iterable[FlowFileQueue],
        *,
        wal: WriteAheadLog | None = None,
        swap_store: SwapStore | None = None,
        retry_backoff: RetryBackoff | None = None,
        claims_found: Callable[[list[ContentClaim]], object] | None = None,
    ):
        """`retry_backoff`: how unreadable swap files are retried. `claims_found(claims)`
        is called with the content claims of a swap file registered without them, when it
        is read at last and before its FlowFiles move (the node counts them as claimants)."""
        self.id = shard_id
        self.queues: dict[str, FlowFileQueue] = {queue.id: queue for queue in queues}
        self.wal = wal
        self.swap_store = swap_store if wal is not None else None
        self._swap_locks = {queue_id: threading.Lock() for queue_id in self.queues}
        self._state_lock = threading.Lock()
        self._states: dict[str, dict[str, str]] = {}
        self._legacy_states: set[str] = set()  # held in a whole-state record of an older release
        self.swap_failures = 0
        self.swap_outs = Counter()
        self.swap_ins = Counter()
        self.retry_backoff = retry_backoff or RetryBackoff()
        self.claims_found = claims_found
        self._unreadable_lock = threading.Lock()
        self._unreadable: dict[str, UnreadableSwapFile] = {}  # location -> its alarm
        self._claims_unknown: set[str] = set()  # locations registered without their claims
        self._recovering_claims: list[ContentClaim] | None = None  # the live claims `recover` reports, while it runs

    @property
    def durable(self) -> bool:
        return self.wal is not None

    @property
    def durable_wal(self) -> WriteAheadLog:
        """The WAL of a durable shard, for what only a durable shard does (a durable
        commit, a swap, a recovery: `maintain` and `recover` do none in memory)."""
        wal = self.wal
        assert wal is not None, f"shard {self.id} is in memory: it has no WAL"
        return wal

    @property
    def _durable_swap_store(self) -> SwapStore:
        """The swap store, where only a durable shard with swap files gets (`maintain`
        and `recover` do no swap I/O without one)."""
        store = self.swap_store
        assert store is not None, f"shard {self.id} has no swap store"
        return store

    # -- processor state --------------------------------------------------------

    def get_state(self, component_id: str) -> dict[str, str]:
        with self._state_lock:
            return dict(self._states.get(component_id, {}))

    def set_state_committed(self, component_id: str, state: dict[str, str]) -> None:
        with self._state_lock:
            self._states[component_id] = dict(state)
            self._legacy_states.discard(component_id)

    @staticmethod
    def state_record(component_id: str, state: dict[str, str], now_ms: int) -> FlowFile:
        """The whole state as one record: the layout of releases before state entries."""
        return FlowFile(f"{STATE_QUEUE}/{component_id}", dict(state), None, STATE_QUEUE, 0, now_ms, now_ms, 0)

    @staticmethod
    def state_entry_id(component_id: str, key: str) -> str:
        return f"{STATE_QUEUE}/{component_id}{STATE_ENTRY_SEPARATOR}{key}"

    def state_updates(
        self, component_id: str, state: dict[str, str], now_ms: int, *, written: Iterable[str] = (), whole: bool = False
    ) -> list[Update]:
        """The WAL updates that make `component_id`'s state `state`, from its committed
        state: a Put per entry added or changed, a Delete per entry removed (and of the
        whole-state record of an older release, replaced by entries). `written`: record
        ids the WAL may hold beyond the committed state (a transaction of unknown
        outcome), deleted unless `state` has them; `whole`: every entry is written again
        (what the WAL holds is not known to be the committed state)."""
        with self._state_lock:
            before = self._states.get(component_id, {})
            legacy = component_id in self._legacy_states
        updates: list[Update] = []
        # The entry records the WAL holds now (an older release's whole state has none).
        held = set(written) | (set() if legacy else {self.state_entry_id(component_id, key) for key in before})
        if legacy:
            updates.append(Delete(f"{STATE_QUEUE}/{component_id}"))
        if legacy or whole:
            before = {}
        for key, value in state.items():
            if key not in before or before[key] != value:
                record = FlowFile(
                    self.state_entry_id(component_id, key), {key: value}, None, STATE_QUEUE, 0, now_ms, now_ms, 0
                )
                updates.append(Put(record.to_record()))
        wanted = {self.state_entry_id(component_id, key) for key in state}
        updates += [Delete(record_id) for record_id in sorted(held - wanted)]
        return updates

    # -- recovery ---------------------------------------------------------------

    def recover(self, *, checkpoint_beside: bool = False) -> ShardRecovery:
        """Rebuild the queues from the WAL: live FlowFiles are loaded, swapped ones are
        registered from their swap file's summary without being loaded.

        `checkpoint_beside`: the checkpoint the WAL's recovery may have to take before
        new writes (always on HDFS) runs beside the rest of the recovery and what the
        caller does next (`WriteAheadLog.recover`); the caller waits for it with
        `self.wal.writable()` before the shard runs."""
        report = ShardRecovery()
        if self.wal is None:
            return report
        listing = None
        if self.swap_store is not None:
            self.swap_store.prepare()
            # The swap directories listed beside the WAL's recovery and the summaries'
            # reads, for the orphans (two round trips each on HDFS, 10-50 ms of a busy
            # takeover when made after them): until the orphans are judged nothing
            # adds or removes a swap file here but a move the registration records.
            listing = beside(self._list_swap_directories, f"swap-listing-{self.id}")
        records = self.wal.recover(checkpoint_beside=checkpoint_beside)
        recorded_when_listed = set(self.wal.swap_files)
        by_queue: dict[str, list[FlowFile]] = defaultdict(list)
        live_claims = report.live_claims
        for record in records.values():
            queue_id = record.queue
            if queue_id == STATE_QUEUE:
                component_id, separator, _ = record.id[len(STATE_QUEUE) + 1 :].partition(STATE_ENTRY_SEPARATOR)
                self._states.setdefault(component_id, {}).update(record.attributes)
                if not separator:  # a whole state, as an older release wrote it
                    self._legacy_states.add(component_id)
                report.states = len(self._states)
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
                "these connections (ids are '<source>/<relationship>/<destination>' unless given) and let them drain."
            )
        for queue_id, flowfiles in by_queue.items():
            flowfiles.sort(key=lambda f: f.entry_date)
            self.queues[queue_id].put_all(flowfiles)
            report.flowfiles += len(flowfiles)
            report.heads += [f.content_claim for f in flowfiles[:HEAD_FLOWFILES] if f.content_claim is not None]
        listed = sorted(swap_files.items())
        for (location, swap_file), first_read in zip(listed, self._read_summaries(listed), strict=True):
            self._register_swap_file(location, swap_file, report, first_read)
        if listing is not None:
            self._delete_orphans(report, listing, recorded_when_listed)
        # A swap-in now reads a file whose claims were unknown into the report's claims.
        # The recovered FlowFiles are in memory already and stay there: writing them out
        # (a file and a WAL record each) would be on the critical path of a takeover (a
        # dead node's session of 500 FlowFiles, swapped 50 at a time on HDFS: some 2 s),
        # and again at the adopter's first commit. Only arrivals beyond them are swapped
        # out (`FlowFileQueue.hold_in_memory`).
        self._recovering_claims = report.live_claims
        try:
            for queue in self.queues.values():
                queue.hold_in_memory()  # so the policy plans no swap-out here, only swap-ins
                self.maintain(queue)
        finally:
            self._recovering_claims = None
        return report

    def _read_summaries(self, listed: Sequence[tuple[str, SwapFile]]) -> list[_SummaryRead]:
        """`_read_summary` of each listed file, in order, read side by side by
        `SUMMARY_READERS` threads. Reading is all they do: what a failure means (a move
        to record, a quarantine) is done afterwards, one file after another."""
        reads: list[_SummaryRead | None] = [None] * len(listed)
        indexes = iter(range(len(listed)))
        taking = threading.Lock()

        def reader() -> None:
            while True:
                with taking:
                    index = next(indexes, None)
                if index is None:
                    return
                reads[index] = self._read_summary(*listed[index])

        side_by_side([reader] * min(SUMMARY_READERS, len(listed)), f"swap-summary-{self.id}")
        return [read for read in reads if read is not None]

    def _register_swap_file(
        self, location: str, swap_file: SwapFile, report: ShardRecovery, first_read: _SummaryRead
    ) -> None:
        """Register one swap file the WAL lists: in its queue's line if its summary reads
        (`first_read`, read with the others), else set aside with an alarm (and
        quarantined if corrupt); one quarantined by an earlier run is set aside too, and
        tried at once."""
        store, queue = self._durable_swap_store, self.queues[swap_file.queue]
        summary, failure, error = first_read
        if failure is ReadFailure.MISSING:
            twin = self._twin(location)
            if store.exists(twin):
                # The last run moved the file (into quarantine, or back) and stopped before
                # the WAL recorded the move: record it now, before orphans are looked for.
                location = self._record_move(location, twin, swap_file)
                swap_file = swap_file._replace(location=location)
                summary, failure, error = self._read_summary(location, swap_file)
        if failure is ReadFailure.CORRUPT and not store.is_quarantined(location):
            moved = self._quarantine(location, None, swap_file)
            if moved is not None:
                location = moved
        if summary is None:
            # Known from the WAL's record only: count and size, not the claims.
            summary = SwapSummary(location, swap_file.queue, swap_file.count, swap_file.size, 0, 0, {})
            with self._unreadable_lock:
                self._claims_unknown.add(location)
            report.swap_files_without_claims.append(location)
        else:
            summary = dataclasses.replace(summary, location=location)
            for resource, (count, end) in summary.resources.items():
                # Claimant counts of swapped FlowFiles without loading them: one claim
                # per FlowFile, reaching as far as the furthest of them.
                report.live_claims.extend(repeat(ContentClaim(resource, 0, end), count))
        report.swap_files += 1
        report.swapped_flowfiles += summary.count
        if failure is None and not store.is_quarantined(location):
            queue.register_swapped(summary)
            return
        if failure is None:
            # Quarantined by an earlier run: maybe repaired while the node was down.
            alarm = on_registered(
                location=location,
                queue=queue.id,
                flowfiles=summary.count,
                size=summary.size,
                reason=ReadFailure.CORRUPT,
                error="quarantined by an earlier run, not read since this start",
                quarantined=True,
                now_ms=queue.now_ms(),
            )
        else:
            # Found unreadable now (and quarantined above if it is corrupt): its first retry
            # after a backoff, as for a failed swap-in.
            alarm = on_read_failed(
                None,
                location=location,
                queue=queue.id,
                flowfiles=summary.count,
                size=summary.size,
                reason=failure,
                error=error,
                quarantined=store.is_quarantined(location),
                now_ms=queue.now_ms(),
                backoff=self.retry_backoff,
            ).file
        with self._unreadable_lock:
            self._unreadable[location] = alarm
        queue.register_set_aside(summary, alarm.next_attempt_ms)
        report.unreadable_swap_files.append(location)
        log.warning("shard %s, queue %s: %s", self.id, queue.id, alarm_text(alarm, self.retry_backoff))

    def _read_summary(self, location: str, swap_file: SwapFile) -> _SummaryRead:
        """The file's summary; else why it cannot be read, and the error in one line ("" when read)."""
        try:
            summary = self._durable_swap_store.read_summary(location)
        except Exception as error:  # noqa: BLE001 - classified; an unexpected one is "unavailable"
            return None, *_failure(error)
        if (summary.queue, summary.count) != (swap_file.queue, swap_file.count):
            return None, ReadFailure.CORRUPT, _not_recorded(summary.queue, summary.count, swap_file)
        return summary, None, ""

    def _twin(self, location: str) -> str:
        """The same file in the other of the swap and quarantine directories."""
        store = self._durable_swap_store
        return store.swap_location(location) if store.is_quarantined(location) else store.quarantine_location(location)

    def _record_move(self, location: str, target: str, swap_file: SwapFile) -> str:
        # One transaction: the WAL forgets the old location and records the new one
        # together (a SwapOut of no FlowFile, as adoption seeds a slice), so a crash
        # leaves either, never neither.
        self.durable_wal.update([SwapIn(location), SwapOut(swap_file._replace(location=target), ())])
        return target

    def _list_swap_directories(self) -> tuple[list[str], list[str]]:
        """The swap files of the swap directory, and of the quarantine directory."""
        store = self._durable_swap_store
        return store.locations(), store.quarantined()

    def _delete_orphans(
        self,
        report: ShardRecovery,
        listing: Callable[[], tuple[list[str], list[str]]],
        recorded_when_listed: set[str],
    ) -> None:
        """Delete the swap files the WAL does not record (`listing`: the directories as
        they were while the WAL recovered, unless a registration moved a file since:
        then they are listed again)."""
        store, wal = self._durable_swap_store, self.durable_wal
        recorded = set(wal.swap_files)
        listed, quarantined = listing()
        if recorded != recorded_when_listed:
            listed, quarantined = self._list_swap_directories()
        # Damage accepted now or since the last start (`WriteAheadLog.damage_reports`).
        damaged = bool(wal.damage_reports())
        for location in listed:
            if location in recorded:
                continue
            if store.quarantine_location(location) in recorded:
                # A copy of a quarantined file, put here rather than in quarantine: maybe
                # the only good one. Kept; the operator moves it over the quarantined one.
                log.warning(
                    "shard %s: swap file %s has the name of the quarantined %s, which the WAL records; "
                    "kept. If it is a good copy, move it over the quarantined file to have it read",
                    self.id,
                    location,
                    store.quarantine_location(location),
                )
                continue
            if damaged:
                # The WAL lost transactions to damage: this file may hold FlowFiles whose
                # records were lost with them. Kept in quarantine for a manual recovery.
                store.quarantine(location)
                report.orphaned_swap_files_kept.append(location)
                continue
            # Written (and maybe synced) but the WAL never recorded it, or recorded its
            # swap-in: its FlowFiles live elsewhere. Only ever a file of this shard's own
            # swap directory (`locations` lists nothing else).
            store.delete(location)
            report.orphaned_swap_files.append(location)
        leftovers = [location for location in quarantined if location not in recorded]
        if leftovers:
            # Read back or dropped since they were quarantined; quarantine is never
            # emptied automatically.
            log.info(
                "shard %s: %d quarantined swap files the WAL no longer records (their FlowFiles were read back "
                "or dropped), kept for post-mortem; they can be removed: %s",
                self.id,
                len(leftovers),
                ", ".join(leftovers[:5]),
            )

    # -- swapping ---------------------------------------------------------------

    def maintain(self, queue: FlowFileQueue) -> None:
        """Carry out the queue's swap policy until it asks for nothing more."""
        if self.swap_store is None:
            return
        lock = self._swap_locks[queue.id]
        if not lock.acquire(blocking=False):
            return
        try:
            # A swap file set aside whose retry is due goes back to the head of the line.
            queue.release_due_set_aside()
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
            summary = self._durable_swap_store.write(queue.id, batch)
        except SwapError as error:
            queue.abort_swap_out(batch)
            self.swap_failures += 1
            log.warning("queue %s: swap-out failed, the batch stays in memory: %s", queue.id, error)
            return False
        location = summary.location
        try:
            # The swap file was synced by write(): only now may the WAL point at it.
            self.durable_wal.update(
                [SwapOut(SwapFile(location, queue.id, summary.count, summary.size), tuple(f.id for f in batch))]
            )
        except Exception as error:
            # The batch goes back to memory whatever the WAL answered: until the WAL
            # rolls, it acknowledges no transaction (none can process the batch) and
            # the roll settles the SwapOut without it.
            queue.abort_swap_out(batch)
            self.swap_failures += 1
            log.warning(
                "queue %s: the WAL refused a swap-out, the batch stays in memory: %s",
                queue.id,
                str(error).splitlines()[0][:300],
            )
            if isinstance(error, OutcomeUnknownError):
                # A recovery may still replay the SwapOut, and would need the file;
                # once the WAL has settled it, nothing ever points at the file.
                self.durable_wal.when_settled(functools.partial(self._delete_orphan, location))
            elif isinstance(error, WriteAheadLogError):
                self._delete_orphan(location)  # refused: the WAL never points at it
            # Anything else says nothing about the WAL: the file stays, and the next
            # recovery removes it if the WAL never recorded it.
            return False
        queue.complete_swap_out(batch, summary)
        self.swap_outs.add()
        return True

    @contextlib.contextmanager
    def swap_lock(self, queue: FlowFileQueue) -> Iterator[None]:
        """Hold off every swap of `queue` (a drop takes its swap files and staging itself);
        `maintain` skips the queue meanwhile."""
        with self._swap_locks[queue.id]:
            yield

    def forget_swap_file(self, location: str) -> None:
        """Delete a swap file the WAL no longer points at (a committed drop)."""
        self._readable_again(location, None)
        self._delete_orphan(location)

    def _delete_orphan(self, location: str) -> None:
        try:
            self._durable_swap_store.delete(location)
        except ForeignSwapFileError as error:
            log.warning("%s", error)
        except Exception as error:  # noqa: BLE001 - the next recovery removes it
            log.warning(
                "could not delete swap file %s, which the WAL does not record (the next recovery removes it): %s",
                location,
                str(error).splitlines()[0][:300],
            )

    def _swap_in(self, queue: FlowFileQueue) -> bool:
        summary = queue.take_swap_in()
        if summary is None:
            return False
        location = summary.location
        try:
            records = self.read_swap_file(location)
        except Exception as error:  # noqa: BLE001 - set aside, whatever it was: the queue goes on
            self.swap_read_failed(queue, summary, error)
            return False
        flowfiles = [FlowFile.from_record(record) for record in records]
        try:
            self.durable_wal.update([SwapIn(location)] + [Put(record) for record in records])
        except Exception as error:
            # The file stays whatever the WAL answered: the WAL still points at it,
            # unless a SwapIn of unknown outcome is replayed, and then the recovery
            # removes it as an orphan.
            queue.abort_swap_in(summary)
            self.swap_failures += 1
            log.warning("queue %s: swap-in of %s failed, will retry: %s", queue.id, location, error)
            return False
        self.claims_loaded(location, records)
        queue.complete_swap_in(summary, flowfiles)
        self.swap_ins.add()
        self._readable_again(location, len(records))
        # The WAL no longer points at the file; a crash before this delete leaves an
        # orphan that the next recovery removes.
        self._delete_orphan(location)
        return True

    # -- swap files that cannot be read (see flow.unreadable_swap) -------------------

    def read_swap_file(self, location: str) -> list[FlowFileRecord]:
        """Every FlowFileRecord of a swap file the WAL records, checked against that record
        (a file of another queue or count put in its place is corrupt, not read)."""
        summary, records = self._durable_swap_store.read(location)
        recorded = self.wal.swap_files.get(location) if self.wal is not None else None
        if recorded is not None and (summary.queue, len(records)) != (recorded.queue, recorded.count):
            raise CorruptSwapFileError(location, 0, _not_recorded(summary.queue, len(records), recorded))
        return records

    def claims_loaded(self, location: str, records: Iterable[FlowFileRecord]) -> None:
        """The records of swap file `location` were read: if it was registered without its
        content claims, they are counted now (`claims_found`), before anything releases them."""
        with self._unreadable_lock:
            if location not in self._claims_unknown:
                return
            self._claims_unknown.discard(location)
        claims = [record.content_claim for record in records if record.content_claim is not None]
        if self.claims_found is not None:
            self.claims_found(claims)
        elif self._recovering_claims is not None:
            self._recovering_claims.extend(claims)

    def swap_read_failed(
        self, queue: FlowFileQueue, summary: SwapSummary, error: BaseException, *, taken_for_drop: bool = False
    ) -> None:
        """A read of the swap file `summary` (taken out of the queue's line, to swap in or
        to drop) failed: set it aside, quarantined if the policy says so, and logged if it
        says so."""
        location = summary.location
        reason, text = _failure(error)
        with self._unreadable_lock:
            previous = self._unreadable.get(location)
        decision = on_read_failed(
            previous,
            location=location,
            queue=queue.id,
            flowfiles=summary.count,
            size=summary.size,
            reason=reason,
            error=text,
            quarantined=self._durable_swap_store.is_quarantined(location),
            now_ms=queue.now_ms(),
            backoff=self.retry_backoff,
        )
        alarm, kept = decision.file, summary
        if decision.quarantine:
            swap_file = self.durable_wal.swap_files.get(location)
            moved = self._quarantine(location, summary, swap_file) if swap_file is not None else None
            if moved is not None:
                alarm, kept = quarantined(alarm, moved), dataclasses.replace(summary, location=moved)
        with self._unreadable_lock:
            self._unreadable.pop(location, None)
            self._unreadable[alarm.location] = alarm
            if location in self._claims_unknown and alarm.location != location:
                self._claims_unknown.discard(location)
                self._claims_unknown.add(alarm.location)
        if taken_for_drop:
            queue.set_aside_swapped(summary, kept, alarm.next_attempt_ms)
        else:
            queue.set_aside_swap_in(summary, kept, alarm.next_attempt_ms)
        self.swap_failures += 1
        if not decision.log:
            return
        if (
            previous is None
            or previous.reason is not alarm.reason
            or (previous.failures == 0 and previous.error != alarm.error)
        ):
            log.warning("shard %s, queue %s: %s", self.id, queue.id, alarm_text(alarm, self.retry_backoff))
        else:
            log.warning(
                "shard %s, queue %s: swap file %s is still %s (%s), failure %d; next attempt in %.0f s",
                self.id,
                queue.id,
                alarm.location,
                alarm.reason.value,
                alarm.error,
                alarm.failures,
                (alarm.next_attempt_ms - queue.now_ms()) / 1000,
            )

    def _quarantine(self, location: str, summary: SwapSummary | None, swap_file: SwapFile) -> str | None:
        """Move the swap file into quarantine and record its new location in the WAL;
        its location then, or None when it could not be moved (it stays where it is)."""
        store = self._durable_swap_store
        with self._unreadable_lock:
            claims_known = location not in self._claims_unknown
        try:
            target = store.quarantine(location, summary if claims_known else None)
        except Exception as error:  # noqa: BLE001 - it stays set aside where it is; the next failure tries again
            log.warning(
                "shard %s: could not move swap file %s into quarantine (%s); it stays where it is, set aside",
                self.id,
                location,
                _one_line(error),
            )
            return None
        try:
            # Moved first, recorded second: a crash in between leaves the WAL naming the
            # old place, and recovery finds the file in quarantine by its name. Recorded
            # first, a crash would leave the WAL naming a file not there yet, and the file
            # itself taken for an orphan.
            return self._record_move(location, target, swap_file)
        except Exception as error:  # noqa: BLE001
            try:
                store.unquarantine(target)
            except Exception as undo:  # noqa: BLE001 - the next recovery finds it by name
                log.warning(
                    "shard %s: swap file %s stays in quarantine (%s), while the WAL names %s: the next "
                    "start records the move",
                    self.id,
                    target,
                    _one_line(undo),
                    location,
                )
            log.warning(
                "shard %s: the WAL refused to record swap file %s in quarantine (%s); it stays where it is, set aside",
                self.id,
                location,
                _one_line(error),
            )
            return None

    def _readable_again(self, location: str, count: int | None) -> None:
        with self._unreadable_lock:
            alarm = self._unreadable.pop(location, None)
            self._claims_unknown.discard(location)
        if alarm is not None and count is not None:
            log.info(
                "shard %s, queue %s: swap file %s is readable again: its %d FlowFiles are back in the queue",
                self.id,
                alarm.queue,
                location,
                count,
            )

    def unreadable_swap_files(self) -> list[UnreadableSwapFile]:
        """The swap files set aside, as their alarms show them (oldest first)."""
        with self._unreadable_lock:
            return sorted(self._unreadable.values(), key=lambda alarm: (alarm.since_ms, alarm.location))

    def retry_unreadable_now(self) -> int:
        """Every swap file set aside is due now (an operator repaired them); how many."""
        retried = 0
        for queue in self.queues.values():
            now = queue.now_ms()
            for summary in queue.set_aside_summaries():
                with self._unreadable_lock:
                    alarm = self._unreadable.get(summary.location)
                    if alarm is not None:
                        self._unreadable[summary.location] = retry_now(alarm, now)
                if queue.retry_set_aside(summary.location, now):
                    retried += 1
        return retried

    # -- polling ----------------------------------------------------------------

    def poll(
        self, queue: FlowFileQueue, max_count: int, now_ms: int | None = None
    ) -> tuple[list[FlowFile], list[FlowFile]]:
        polled, expired = queue.poll(max_count, now_ms)
        # Swap in when there is room; and when a poll found nothing while FlowFiles wait
        # in memory, out of reach (staged after a swap-out failed): the policy is tried
        # again, as nothing else may come to try it once no new FlowFiles arrive.
        if self.swap_store is not None and (
            queue.in_memory() + queue.swap_batch <= queue.swap_threshold
            or (not polled and not expired and queue.in_memory())
        ):
            self.maintain(queue)
            if not polled and not expired:
                polled, expired = queue.poll(max_count, now_ms)
        return polled, expired

    def in_memory(self) -> int:
        return sum(queue.in_memory() for queue in self.queues.values())


@dataclass(frozen=True)
class ShardFiles:
    """A durable shard's files, `wal/` and `swap/` under `directory` of any storage
    backend, and how its WAL writes them: what differs between the shards nodes open
    (a standalone node's on local disk; a clustered node's own and adopted ones on HDFS,
    each at its epoch, an adopted one in its fenced directory)."""

    shard_id: str
    storage: Storage
    directory: str
    epoch: int = 0
    partitions: int = DEFAULT_PARTITIONS
    checkpoint_interval: float | None = DEFAULT_CHECKPOINT_INTERVAL
    # Fault seams of a test: what `FaultSeams.coerce` takes (None: none).
    wal_hooks: object = None
    swap_hooks: object = None
    # Recover what survives of damage no crash explains, instead of refusing (`WriteAheadLog`).
    accept_damage: bool = False
    # Where a swap location the WAL recorded is now. The WAL records swap files by full
    # path, and the directory may have had another name since: a fenced shard's was
    # renamed (its adopter maps every earlier name), a data directory moved or copied
    # names the old place. None: by the swap directory's name (`SwapStore.rebase`).
    # Either way the WAL checkpoints the new locations at once; without it a copy would
    # read, and delete, the original's swap files.
    relocate_swap: Callable[[str], str] | None = None
    # Create a missing directory (a standalone node's). Never a clustered node's shard:
    # a directory that fencing renamed must not come back.
    create: bool = True

    def open(self, queues: Iterable[FlowFileQueue], retry_backoff: RetryBackoff | None = None) -> QueueShard:
        """The shard over these files, not recovered yet: the caller calls `recover()` next."""
        if self.create and not self.storage.exists(self.directory):
            self.storage.mkdir(self.directory, parents=True, exist_ok=True)
        swap_store = self.swap_store()
        return QueueShard(
            self.shard_id, queues, wal=self._wal(swap_store), swap_store=swap_store, retry_backoff=retry_backoff
        )

    def open_wal(self) -> WriteAheadLog:
        """The shard's WAL alone, new and not recovered, as `open` makes it."""
        return self._wal(self.swap_store())

    def swap_store(self) -> SwapStore:
        return SwapStore(self.storage, join(self.directory, "swap"), hooks=self.swap_hooks)

    def _wal(self, swap_store: SwapStore) -> WriteAheadLog:
        return WriteAheadLog(
            self.storage,
            join(self.directory, "wal"),
            partitions=self.partitions,
            epoch=self.epoch,
            checkpoint_interval=self.checkpoint_interval,
            hooks=WalHooks.coerce(self.wal_hooks),
            accept_damage=self.accept_damage,
            relocate_swap=self.relocate_swap or swap_store.rebase,
        )


def open_shard(
    storage: Storage,
    directory: str,
    shard_id: str,
    queues: Iterable[FlowFileQueue],
    *,
    epoch: int = 0,
    partitions: int = DEFAULT_PARTITIONS,
    checkpoint_interval: float | None = DEFAULT_CHECKPOINT_INTERVAL,
    wal_hooks: object = None,
    swap_hooks: object = None,
    accept_damage: bool = False,
    retry_backoff: RetryBackoff | None = None,
) -> QueueShard:
    """A durable shard in `directory` of any storage backend (`ShardFiles.open`): the
    caller calls `recover()` next."""
    files = ShardFiles(
        shard_id,
        storage,
        directory,
        epoch=epoch,
        partitions=partitions,
        checkpoint_interval=checkpoint_interval,
        wal_hooks=wal_hooks,
        swap_hooks=swap_hooks,
        accept_damage=accept_damage,
    )
    return files.open(queues, retry_backoff)


def _failure(error: BaseException) -> tuple[ReadFailure, str]:
    """Why a read of a swap file failed, and the error in one line."""
    if isinstance(error, CorruptSwapFileError):
        return ReadFailure.CORRUPT, f"at offset {error.offset}: {error.reason}"
    if isinstance(error, SwapFileMissingError):
        return ReadFailure.MISSING, "no such file"
    if isinstance(error, (StorageError, OSError, SwapError)):
        return ReadFailure.UNAVAILABLE, _one_line(error)
    return ReadFailure.UNAVAILABLE, f"{type(error).__name__}: {_one_line(error)}"


def _not_recorded(queue: str, count: int, recorded: SwapFile) -> str:
    return (
        f"it holds {count} FlowFiles of queue {queue!r}, the WAL recorded {recorded.count} of "
        f"{recorded.queue!r}: not the file written there"
    )


def _one_line(error: BaseException, limit: int = 300) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:limit]
