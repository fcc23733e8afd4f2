"""`WriteAheadLog`: NiFi's write-ahead log design on the storage protocol, with group commit."""

from __future__ import annotations

import functools
import gc
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ..instruments import LatencyHistogram
from ..storage import StorageFileExists, abandon_file, discard, join
from ..storage.side_by_side import side_by_side
from . import format as fmt
from .errors import (
    AbandonedInFlightError,
    CheckpointError,
    CorruptSnapshotError,
    NotRecoveredError,
    OutcomeUnknownError,
    WalDamagedError,
    WriteAheadLogAbandonedError,
    WriteAheadLogClosedError,
    WriteAheadLogPoisonedError,
    underlying,
)
from .hooks import WalHooks
from .journal import Journal, journal_name, next_journal_name
from .locks import SharedExclusiveLock
from .record import FlowFileRecord, SwapFile, Update, apply_update
from .recovery import CUT_DIRECTORY, RecoveredState, RecoveryReport, WalFiles, list_wal_files, read_state
from .serde import FlowFileSerDe
from .snapshot import PARTIAL_NAME, SNAPSHOT_NAME, SnapshotCase, read_snapshot, write_snapshot
from .watermark import TransactionIds

if TYPE_CHECKING:
    from repositories.storage import Storage, WritableFile

    from .serde import SerDe

log = logging.getLogger(__name__)

# sync=False updates are handed to the file once this many bytes are pending.
FLUSH_THRESHOLD = 1 << 20
# Reports of accepted damage, kept in cut/ (see `WriteAheadLog.damage_reports`).
DAMAGE_REPORT_PREFIX = "damage-"
DAMAGE_REPORT_SUFFIX = ".json"
DAMAGE_HANDLED_SUFFIX = ".handled.json"
# The defaults of a `WriteAheadLog`, exported for the configurations that build one.
DEFAULT_PARTITIONS = 4
DEFAULT_CHECKPOINT_INTERVAL = 60.0  # seconds between automatic checkpoints


class _Unacknowledged:
    """A transaction whose write or sync failed, or that became durable after a failure
    poisoned the WAL: its caller waits in `update` for the roll that decides it."""

    __slots__ = ("txid", "updates", "cause", "durable", "roll_error")

    def __init__(self, txid: int, updates: list[Update], cause: BaseException | None) -> None:
        self.txid, self.updates, self.cause = txid, updates, cause
        self.durable: bool | None = None  # None until a roll (or close) decides
        self.roll_error: BaseException | None = None


class WriteAheadLog:
    """A FlowFile write-ahead log in one directory of a `Storage`.

    The rule for a failed write or sync is the package docstring's: the WAL rolls
    (snapshot, then new journals) before it acknowledges anything else.

    Lock plan:
      * `_repository_lock` (shared/exclusive): `update` holds it shared while it
        writes; `recover`, `checkpoint` (every roll) and `close` hold it exclusively,
        so no partition is written while the snapshot is taken or journals are reset
        (NiFi's write-ahead log holds the same lock around the same steps).
      * each `Journal` has its own `append_lock` (claimed round-robin without blocking
        to own the partition while a frame is appended, as NiFi's writers do) and
        `io_lock` (group commit: see `journal.Journal`).
      * `_records` and `_swap_files` are changed only by `update` (under the shared
        lock, one dict operation at a time) and by recovery/checkpoint (exclusive).
        Like NiFi's sessions, a caller owns the records it updates: two threads must
        not update the same record id concurrently, or the map's final version of it
        is whichever applied last rather than the higher transaction id.
      * `_state_lock` guards `_poison`, `_unacknowledged`, `_unsettled`,
        `_settle_callbacks`, `_due_callbacks` and `_abandoned`. It is taken last (a
        journal takes it with its `io_lock` held, to poison the WAL) and held for a few
        operations. `_poison` and `_abandoned` are also read without it: reference
        reads, rechecked under it where it counts (a transaction is acknowledged only
        if, under it, the WAL is not abandoned: `_acknowledged`).
      * `abandon` takes no lock but `_state_lock` (and each journal's `append_lock`, for
        an instant): the others may be held across a storage call that does not answer.

    `sync_durations` times every journal sync (one per group commit), for the metrics.
    """

    def __init__(
        self,
        storage: Storage,
        directory: str,
        *,
        partitions: int = DEFAULT_PARTITIONS,
        serde: SerDe | None = None,
        epoch: int = 0,
        checkpoint_interval: float | None = DEFAULT_CHECKPOINT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        hooks: WalHooks | None = None,
        relocate_swap: Callable[[str], str] | None = None,
        accept_damage: bool = False,
    ) -> None:
        """`relocate_swap`, if given, maps each swap location recovery finds to where
        the file is now (a fenced shard's directory was renamed); when it moves any,
        recovery checkpoints at once, so the snapshot records the new locations.

        `accept_damage`: recover even when the directory is damaged in a way no crash
        explains (see `damage`), with whatever survives; by default `recover` refuses
        with `WalDamagedError` and changes nothing. The damage is in `last_recovery`
        and in a report kept in `cut/` (`damage_reports`)."""
        if partitions < 1:
            raise ValueError("partitions must be at least 1")
        self.storage = storage
        self.directory = directory.rstrip("/") or "/"
        self.partitions = partitions
        self.serde: SerDe = serde if serde is not None else FlowFileSerDe()
        self.epoch = epoch
        self.checkpoint_interval = checkpoint_interval
        self._clock = clock
        self._wall_clock = wall_clock
        self._hooks = WalHooks.coerce(hooks)
        self._relocate_swap = relocate_swap
        self.accept_damage = accept_damage
        self._repository_lock = SharedExclusiveLock()
        self._state_lock = threading.Lock()
        self._journals: list[Journal] = []
        self._partition_counter = itertools.count()
        self._txids = TransactionIds()
        self._journal_files: set[int] = set()  # partitions whose journal file exists
        self._records: dict[str, FlowFileRecord] = {}
        self._swap_files: dict[str, SwapFile] = {}
        self._restored = False
        self._closed = False
        # Why the WAL was abandoned (`abandon`), or None: from then on it writes and
        # acknowledges nothing.
        self._abandoned: str | None = None
        # Why the WAL must roll before it acknowledges any transaction (a failed write,
        # sync or checkpoint), or None.
        self._poison: BaseException | None = None
        self._unacknowledged: list[_Unacknowledged] = []  # decided by the next roll
        self._unsettled: list[int] = []  # transaction ids a recovery may still replay
        self._settle_callbacks: list[Callable[[], None]] = []  # run once they are settled
        self._due_callbacks: list[Callable[[], None]] = []  # settled: run outside the locks
        # True while `snapshot.partial` was written in full by a checkpoint that did not
        # get to rename it: it may be the only copy of the state (see _checkpoint_locked).
        self._partial_complete = False
        self._last_checkpoint = clock()
        self._checkpoint_thread: threading.Thread | None = None
        # The checkpoint a recovery left running beside its caller, and how it failed.
        self._forced: threading.Thread | None = None
        self._forced_error: CheckpointError | None = None
        self._stop = threading.Event()
        self.last_recovery: RecoveryReport | None = None
        self.sync_durations = LatencyHistogram()

    # -- public API ---------------------------------------------------------------

    @property
    def records(self) -> dict[str, FlowFileRecord]:
        """The live record map (read-only by contract)."""
        return self._records

    @property
    def swap_files(self) -> dict[str, SwapFile]:
        """Swap files the WAL knows of, by location."""
        return self._swap_files

    @property
    def unsettled(self) -> tuple[int, ...]:
        """Ids of the transactions that raised `OutcomeUnknownError` and that a recovery
        may still replay (until the next roll); empty when there are none."""
        with self._state_lock:
            return tuple(self._unsettled)

    def when_settled(self, callback: Callable[[], None]) -> None:
        """Call `callback` once no transaction that has raised `OutcomeUnknownError` so
        far can be replayed any more: at once if there is none, else right after the
        roll that settles them (in the thread that rolled, outside the WAL's locks).
        The caller of a transaction whose outcome is unknown releases what it
        references here. An exception from `callback` is logged."""
        with self._state_lock:
            if self._unsettled:
                self._settle_callbacks.append(callback)
                return
        self._run((callback,))

    def recover(self, *, checkpoint_beside: bool = False) -> dict[str, FlowFileRecord]:
        """Restore the record map from the directory (NiFi's restore) and make
        the log writable. Returns a new dict {record id: FlowFileRecord}.

        A recovery that must checkpoint before new writes (a journal with a cut tail,
        a storage that does not reopen journals: HDFS) does so before it returns, or,
        with `checkpoint_beside`, in a thread of its own that holds the repository lock
        from the recovery on: the caller goes on at once with what it builds from the
        records (an adopter reads its swap files' summaries and its first claims
        meanwhile), every update, checkpoint and close waits for that thread as it
        would for any checkpoint, and `writable()` waits for it and raises what
        `recover` would have raised. Nothing is acknowledged before it succeeds."""
        lock = self._repository_lock
        lock.acquire_exclusive()
        handed = False
        try:
            self._check_open()
            if self._restored:
                raise RuntimeError("recover() was already called on this WriteAheadLog")
            stale = self._recover_locked()
            records = dict(self._records)
            if stale is None or not checkpoint_beside:
                if stale is not None:
                    self._forced_checkpoint_locked(stale)
                self._restored = True
                self._last_checkpoint = self._clock()
            else:
                forced = threading.Thread(
                    target=self._forced_checkpoint_beside,
                    args=(stale,),
                    name=f"wal-recovery-checkpoint {self.directory}",
                    daemon=True,
                )
                self._restored = True  # an update waits for the lock the thread holds
                try:
                    forced.start()
                except BaseException:
                    self._restored = False
                    raise
                self._forced, handed = forced, True  # the thread releases the lock
        finally:
            if not handed:
                lock.release_exclusive()
        if self.checkpoint_interval is not None:
            self._start_checkpoint_thread()
        return records

    def writable(self) -> None:
        """Wait for the checkpoint a `recover(checkpoint_beside=True)` left running;
        raises its CheckpointError (the WAL then acknowledges nothing until a checkpoint
        succeeds). At once when there is none."""
        forced = self._forced
        if forced is not None:
            forced.join()
        if self._forced_error is not None:
            raise self._forced_error

    def update(self, updates: Iterable[Update], sync: bool = True) -> int:
        """Write one transaction of `Put`/`Delete`/`SwapOut`/`SwapIn` updates and
        return its transaction id. With sync=True it is durable (fsync/hsync) when
        this returns; concurrent callers share syncs. With sync=False it reaches the
        storage at the next sync of its partition, checkpoint or close. What each
        outcome means is the package docstring's contract."""
        if not self._restored:
            raise NotRecoveredError("call recover() before update(): the log restores before it accepts updates")
        updates = list(updates)
        if not updates:
            raise ValueError("a transaction needs at least one update")
        encode = self.serde.encode_update
        payload = fmt.pack_payload([encode(update) for update in updates])
        payload_crc = fmt.crc32(payload)
        while True:
            self._refuse_if_abandoned()  # before any lock: a roll or checkpoint may hold one for its deadline
            if self._poison is not None:
                self._roll_before_writing()
            with self._repository_lock.shared():
                self._check_open()
                if self._poison is not None:
                    continue  # poisoned since: roll first
                txid, failure = self._write(updates, payload, payload_crc, sync)
                if failure is None and self._poison is None:
                    # Only now does memory change: a failed write left the map as it was
                    # (ZODB's order: write, sync, then update the index).
                    records, swap_files = self._records, self._swap_files
                    for update in updates:
                        apply_update(records, swap_files, update)
                    return self._acknowledged(txid)
                # Failed, or durable while an earlier failure is unsettled: not to be
                # acknowledged before a roll (which happens without the shared lock).
                waiting = _Unacknowledged(txid, updates, failure or self._poison)
                with self._state_lock:
                    self._unacknowledged.append(waiting)
                    if self._poison is None:
                        self._poison = failure
            return self._decide(waiting)

    def checkpoint(self) -> int:
        """Roll the WAL: write a snapshot of the record map and reset every journal
        (NiFi's checkpoint). Returns the number of records written. A successful
        checkpoint settles every transaction whose outcome was unknown."""
        if not self._restored:
            raise NotRecoveredError("call recover() before checkpoint()")
        self._refuse_if_abandoned()
        with self._repository_lock.exclusive():
            self._check_open()
            error = self._roll_locked()
            count = len(self._records)
        self._run_due_callbacks()
        if error is not None:
            raise error
        return count

    def maybe_checkpoint(self) -> bool:
        """Checkpoint if `checkpoint_interval` has passed on the injected clock."""
        if self.checkpoint_interval is None or not self._restored or self._closed:
            return False
        if self._clock() - self._last_checkpoint < self.checkpoint_interval:
            return False
        self.checkpoint()
        return True

    def close(self) -> None:
        """Sync what is pending and close the journals. Does not checkpoint. A
        transaction still waiting for a roll is left unknown (it raises
        `OutcomeUnknownError`), and nothing unsettled is settled. After `abandon` it
        does nothing."""
        if self._abandoned is not None:
            return
        self._stop.set()
        thread = self._checkpoint_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._repository_lock.exclusive():
            if self._closed:
                return
            self._closed = True
            self._leave_unacknowledged_unknown(WriteAheadLogClosedError(f"WriteAheadLog {self.directory} was closed"))
            errors = []
            for journal in self._journals:
                try:
                    journal.close()
                except Exception as error:  # keep closing the others
                    errors.append(error)
            self._journals = []
            if errors:
                raise errors[0]

    def abandon(self, reason: str = "its owner stopped at once") -> None:
        """Stop at once, whatever the storage does: the owner of this WAL is dead (its
        shard is fenced and adopted elsewhere) and must neither write nor acknowledge
        anything more. Nothing is synced or closed: each journal is abandoned as it is
        (`Journal.abandon`: on HDFS hdfs-native's writer is let go unsynced, and the
        adopter recovers its lease). It never waits: not for a lock, nor for a
        checkpoint or a commit in flight, whose storage calls are the storage's to finish
        (fencing makes what they write harmless, and they acknowledge nothing).

        From now on `update` and `checkpoint` raise `WriteAheadLogAbandonedError`
        (nothing written), and a transaction in flight raises `AbandonedInFlightError`
        (an `OutcomeUnknownError`) whatever its sync does: no `update` returns after
        `abandon` has taken the state lock. Nothing unsettled is ever settled (no
        `when_settled` callback runs), the checkpoint thread ends unjoined, and `close`
        does nothing. Idempotent."""
        with self._state_lock:
            if self._abandoned is not None:
                return
            self._abandoned = reason
        self._closed = True  # `_check_open` refuses from now on; its locks are not taken here
        self._stop.set()
        refusal = WriteAheadLogAbandonedError(self.directory, reason)
        for journal in list(self._journals):
            journal.abandon(refusal)
        self._leave_unacknowledged_unknown(refusal)
        log.info("WAL %s abandoned (%s): nothing synced or closed", self.directory, reason)

    @property
    def abandoned(self) -> bool:
        return self._abandoned is not None

    def __enter__(self) -> WriteAheadLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def max_transaction_id(self) -> int:
        """The last transaction id handed out (or recovered)."""
        return self._txids.last()

    def damage_reports(self) -> list[str]:
        """Reports of damage that a recovery accepted (JSON files in `cut/`) and that
        nobody has marked handled yet (`damage_handled`): the node keeps orphaned
        content while there are any, for a manual recovery of what the damage lost."""
        directory = self._path(CUT_DIRECTORY)
        if not self.storage.exists(directory):
            return []
        return sorted(
            status.path
            for status in self.storage.list(directory)
            if status.name.startswith(DAMAGE_REPORT_PREFIX)
            and status.name.endswith(DAMAGE_REPORT_SUFFIX)
            and not status.name.endswith(DAMAGE_HANDLED_SUFFIX)
        )

    def damage_handled(self, report: str) -> None:
        """Mark a damage report handled (renamed, kept for the post-mortem)."""
        self.storage.rename(report, report[: -len(DAMAGE_REPORT_SUFFIX)] + DAMAGE_HANDLED_SUFFIX)

    def sync_count(self) -> int:
        """Syncs done by the journals since they were last reset (for benchmarks)."""
        return sum(journal.syncs for journal in self._journals)

    # -- internals ----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            self._refuse_if_abandoned()
            raise WriteAheadLogClosedError(f"WriteAheadLog {self.directory} is closed")

    def _refuse_if_abandoned(self, file: WritableFile | None = None) -> None:
        """Raise if the WAL was abandoned; `file`, just created (the create was in flight
        at the abandon), is then abandoned too, unwritten."""
        reason = self._abandoned
        if reason is not None:
            if file is not None:
                abandon_file(file)
            raise WriteAheadLogAbandonedError(self.directory, reason)

    def _acknowledged(self, txid: int) -> int:
        """`txid`, written and durable, as `update`'s answer: unless the WAL was abandoned
        meanwhile, then it is never acknowledged (`AbandonedInFlightError`)."""
        with self._state_lock:
            reason = self._abandoned
        if reason is None:
            return txid
        raise AbandonedInFlightError(self.directory, txid, reason)

    def _claim_partition(self) -> Journal:
        journals = self._journals
        count = len(journals)
        for _ in range(2 * count):
            journal = journals[next(self._partition_counter) % count]
            if journal.append_lock.acquire(blocking=False):
                return journal
        journal = journals[next(self._partition_counter) % count]
        journal.append_lock.acquire()
        return journal

    def _write(
        self, updates: Sequence[Update], payload: bytes, payload_crc: int, sync: bool
    ) -> tuple[int, Exception | None]:
        """Append the transaction to a journal (and sync it): its id, and the failure
        if the write or sync failed. The caller holds the shared lock."""
        journal = self._claim_partition()
        try:
            # Taken under the journal's append lock, so ids rise within each journal.
            txid, watermark = self._txids.take()
            frame = fmt.pack_frame(txid, self.epoch, len(updates), payload, payload_crc, watermark)
            try:
                sequence = journal.append(frame)
            except Exception as error:  # the journal failed under another writer
                return txid, error
        finally:
            journal.append_lock.release()
        try:
            if sync:
                journal.wait_durable(sequence)
                self._txids.durable(txid)
            elif journal.pending_bytes >= FLUSH_THRESHOLD:
                journal.flush()
        except Exception as error:
            return txid, error  # its id stays open (holds the watermark) until the roll settles it
        return txid, None

    def _journal_failed(self, error: BaseException) -> None:
        """A journal's write or sync failed: from now on nothing is acknowledged before a
        roll (called by the journal, with its io_lock held)."""
        with self._state_lock:
            if self._poison is None:
                self._poison = error

    def _decide(self, waiting: _Unacknowledged) -> int:
        """Roll the WAL, including every transaction that waits for it (unless another
        waiter's roll already decided this one); return the transaction's id if the
        roll made it durable, else raise OutcomeUnknownError."""
        if self._abandoned is None:
            with self._repository_lock.exclusive():
                if waiting.durable is None and self._abandoned is None:
                    self._roll_locked()
            self._run_due_callbacks()
        if self._abandoned is not None and not waiting.durable:
            raise AbandonedInFlightError(self.directory, waiting.txid, self._abandoned) from waiting.cause
        if waiting.durable:
            return self._acknowledged(waiting.txid)
        raise OutcomeUnknownError(self.directory, waiting.txid, waiting.cause, waiting.roll_error) from waiting.cause

    def _roll_before_writing(self) -> None:
        """The WAL is poisoned: roll it before this transaction writes anything; if
        the roll fails, refuse the transaction (nothing of it was written)."""
        with self._repository_lock.exclusive():
            self._check_open()
            error = self._roll_locked() if self._poison is not None else None
        self._run_due_callbacks()
        if error is not None:
            self._refuse_if_abandoned()
            raise WriteAheadLogPoisonedError(self.directory, error) from error

    def _roll_locked(self) -> CheckpointError | None:
        """A checkpoint that also writes every unacknowledged transaction into the
        snapshot (HBase's WAL roll re-appends unacknowledged entries to the new
        writer): on success they are durable and applied in memory; on failure each is
        of unknown outcome (it stays out of memory, and the next successful roll, which
        does not include it, settles it). The caller holds the exclusive lock."""
        with self._state_lock:
            waiting, self._unacknowledged = self._unacknowledged, []
        waiting.sort(key=lambda transaction: transaction.txid)
        try:
            self._checkpoint_locked(including=waiting)
        except CheckpointError as error:
            with self._state_lock:
                self._unsettled.extend(transaction.txid for transaction in waiting)
            for transaction in waiting:
                transaction.roll_error, transaction.durable = error, False
            return error
        records, swap_files = self._records, self._swap_files
        for transaction in waiting:
            for update in transaction.updates:
                apply_update(records, swap_files, update)
            transaction.durable = True
        return None

    def _leave_unacknowledged_unknown(self, why: BaseException) -> None:
        with self._state_lock:
            waiting, self._unacknowledged = self._unacknowledged, []
            self._unsettled.extend(transaction.txid for transaction in waiting)
        for transaction in waiting:
            transaction.roll_error, transaction.durable = why, False

    def _run_due_callbacks(self) -> None:
        with self._state_lock:
            due, self._due_callbacks = self._due_callbacks, []
        self._run(due)

    def _run(self, callbacks: Iterable[Callable[[], None]]) -> None:
        for callback in callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - one caller's release must not stop the others'
                log.exception("WAL %s: a when_settled callback failed", self.directory)

    def _path(self, name: str) -> str:
        return join(self.directory, name)

    def _recover_locked(self) -> dict[int, str] | None:
        """Restore memory; the journals to replace when a checkpoint must come before
        new writes, else None (the journals are open for append)."""
        storage = self.storage
        if not storage.exists(self.directory):
            storage.mkdir(self.directory)
        files = self._without_unfinished_first_checkpoint(list_wal_files(storage, self.directory))
        # Recovery builds millions of dicts and tuples and no cycles: the cyclic
        # collector would only rescan them again and again (it doubled the time).
        collecting = gc.isenabled()
        gc.disable()
        try:
            state = read_state(storage, self.directory, files, self.serde, self.epoch)
        finally:
            if collecting:
                gc.enable()
        report = state.report
        if report.damage:
            # NiFi's log refuses to start on corruption that is not a torn tail; so does
            # this one, before anything is deleted, renamed or rewritten.
            if not self.accept_damage:
                raise WalDamagedError(self.directory, report.damage)
            report.damage_accepted = True
            report.checkpoint_reasons.append(f"{len(report.damage)} damage finding(s) accepted")
        # NiFi's four restore cases, one named branch each. Each runs only
        # after the snapshot it relies on was read completely, so a corrupt file
        # raised above with nothing deleted or renamed.
        case = report.case
        if case is SnapshotCase.NEITHER:
            self._restore_case_neither(report)
        elif case is SnapshotCase.SNAPSHOT_ONLY:
            self._restore_case_snapshot_only(report)
        elif case is SnapshotCase.BOTH:
            assert files.partial is not None  # the case was read from `files`: it has a .partial
            self._restore_case_both(files.partial)
        elif case is SnapshotCase.PARTIAL_ONLY:
            assert files.partial is not None
            self._restore_case_partial_only(files.partial, report)
        for path in files.next_journals.values():
            # A checkpoint cut short left it: a header, never written to, never read.
            self._discard(path)
        self._records, self._swap_files = state.records, self._relocated(state.swap_files, report)
        self._txids = TransactionIds(state.next_txid)
        self._journal_files = set(files.journals)
        if report.cuts:
            self._save_cuts(state)
        if report.damage_accepted:
            self._save_damage_report(report)
        existing = set(files.journals)
        if existing != set(range(self.partitions)):
            report.checkpoint_reasons.append(
                f"journals {sorted(existing)} differ from partitions 0..{self.partitions - 1}"
            )
        elif not self.storage.reopens_for_append:
            # New journals, as NiFi's sequential write-ahead log starts a new journal at
            # each recovery: this storage writes its files once (HDFS; see the protocol).
            report.checkpoint_reasons.append(f"{self.storage.scheme} storage does not reopen journals")
        self.last_recovery = report
        log.info(
            "WAL %s recovered: %d records, %d swap files, max transaction id %d (%s)",
            self.directory,
            report.record_count,
            len(report.swap_files),
            report.max_txid,
            case.name,
        )
        if report.checkpoint_reasons:
            # A journal with a cut tail cannot be appended to: rewrite it by a checkpoint.
            log.info("WAL %s: checkpoint before new writes: %s", self.directory, "; ".join(report.checkpoint_reasons))
            return files.journals
        self._journals = [
            Journal(path, self.storage.append(path), self._hooks, self._journal_failed, self.sync_durations)
            for _, path in sorted(files.journals.items())
        ]
        return None

    def _forced_checkpoint_locked(self, stale_journals: dict[int, str]) -> None:
        """The checkpoint a recovery must take before new writes; the caller holds the
        exclusive lock. Raises CheckpointError."""
        started = self._clock()
        try:
            self._checkpoint_locked(stale_journals=stale_journals)
        except Exception as error:
            raise CheckpointError(
                f"restoration of {self.directory} failed: the forced checkpoint failed: {error}"
            ) from error
        log.info("WAL %s: checkpoint before new writes done in %.2f s", self.directory, self._clock() - started)

    def _forced_checkpoint_beside(self, stale_journals: dict[int, str]) -> None:
        """`_forced_checkpoint_locked` in its own thread, which `recover` handed the
        exclusive lock: released here, whatever happens."""
        try:
            self._forced_checkpoint_locked(stale_journals)
            self._last_checkpoint = self._clock()
        except CheckpointError as error:
            self._forced_error = error  # `_checkpoint_locked` poisoned the WAL: updates roll first
        except BaseException as error:  # noqa: BLE001 - a crash test's injected crash
            self._forced_error = CheckpointError(f"restoration of {self.directory} failed: {error!r}")
            self._forced_error.__cause__ = error
        finally:
            self._repository_lock.release_exclusive()

    def _without_unfinished_first_checkpoint(self, files: WalFiles) -> WalFiles:
        """A `.partial` with neither a snapshot nor a journal beside it that cannot be
        read is the first checkpoint of a new WAL, cut short: journals are created
        only after a checkpoint's rename, so no transaction was ever acknowledged and
        the WAL is empty. The `.partial` is deleted and the WAL starts new. (A
        readable `.partial` is used as it is; with journals beside it, a damaged one
        is corruption, and recovery stops.)"""
        if files.snapshot is not None or files.partial is None or files.journals:
            return files
        try:
            read_snapshot(files.partial, self.storage.read(files.partial), self.serde)
        except CorruptSnapshotError as error:
            log.warning(
                "WAL %s: deleting %s, an unfinished first checkpoint (%s); the WAL was empty",
                self.directory,
                files.partial,
                str(error).split(". ")[0],
            )
            self.storage.delete(files.partial)
            return files._replace(partial=None)
        return files

    def _relocated(self, swap_files: dict[str, SwapFile], report: RecoveryReport) -> dict[str, SwapFile]:
        if self._relocate_swap is None:
            return swap_files
        moved: dict[str, SwapFile] = {}
        count = 0
        for location, swap_file in swap_files.items():
            target = self._relocate_swap(location)
            if target != location:
                swap_file, count = swap_file._replace(location=target), count + 1
            moved[target] = swap_file
        if count:
            report.checkpoint_reasons.append(f"{count} swap file registrations relocated")
        return moved

    def _restore_case_neither(self, report: RecoveryReport) -> None:
        # Nothing to restore from: a new WAL, or one that never checkpointed. The
        # journals, if any, hold everything.
        pass

    def _restore_case_snapshot_only(self, report: RecoveryReport) -> None:
        # No checkpoint was running at the crash: snapshot plus journals is the state.
        pass

    def _restore_case_both(self, partial: str) -> None:
        # The crash hit while .partial was written; the old snapshot and the journals
        # (not yet reset) are the state, so the .partial is redundant.
        self.storage.delete(partial)

    def _restore_case_partial_only(self, partial: str, report: RecoveryReport) -> None:
        # The crash hit after the old snapshot was deleted, before the rename. The
        # .partial was synced before that delete and was just read in full.
        self.storage.rename(partial, self._path(SNAPSHOT_NAME))

    def _save_cuts(self, state: RecoveredState) -> None:
        """Keep every byte recovery will not apply, before a checkpoint resets the journals."""
        directory = self._cut_directory()
        data_of = {scan.path: scan.data for scan in state.scans}
        stamp = int(self._wall_clock() * 1000)
        for cut in state.report.cuts:
            data = data_of.get(cut.path)
            if data is None:
                continue
            name = cut.path.rsplit("/", 1)[-1]
            target = join(directory, f"{name}.{cut.offset}-{cut.end}.{stamp}.cut")
            for attempt in itertools.count(1):
                try:
                    file = self.storage.create(target)
                    break
                except StorageFileExists:
                    target = join(directory, f"{name}.{cut.offset}-{cut.end}.{stamp}.{attempt}.cut")
            with file:
                file.write(data[cut.offset : cut.end])
                file.sync()
            state.report.saved_cuts.append(target)
            log.warning(
                "WAL %s: cut bytes %d..%d of %s (%s, %s); saved them to %s",
                self.directory,
                cut.offset,
                cut.end,
                cut.path,
                cut.reason,
                "explained by a crash" if cut.explained else "NOT explained by a crash",
                target,
            )

    def _cut_directory(self) -> str:
        directory = self._path(CUT_DIRECTORY)
        if not self.storage.exists(directory):
            self.storage.mkdir(directory)
        return directory

    def _save_damage_report(self, report: RecoveryReport) -> None:
        """Log what the accepted damage lost, and keep the report in `cut/`."""
        for found in report.damage:
            log.error(
                "WAL %s: damage accepted, recovering without what it lost: %s: %s",
                self.directory,
                found.path,
                found.what,
            )
        log.error(
            "WAL %s: accepted damage lost %d transaction(s) (ids known) and at least %d update(s); the cut "
            "bytes are in %s",
            self.directory,
            report.transactions_lost,
            report.updates_lost,
            self._path(CUT_DIRECTORY),
        )
        name = f"{DAMAGE_REPORT_PREFIX}{int(self._wall_clock() * 1000)}{DAMAGE_REPORT_SUFFIX}"
        target = join(self._cut_directory(), name)
        with self.storage.create(target, overwrite=True) as file:
            file.write(json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str).encode("utf-8"))
            file.sync()

    def _create_missing_journals(self, generation: int) -> None:
        """Create every journal of the set that does not exist yet, before the snapshot
        is put in place: then a snapshot in place means its whole journal set exists,
        and recovery can tell a deleted journal from a crash (see `damage`). Only a new
        WAL, or one given more partitions, lacks any."""
        header = fmt.pack_journal_header(self.epoch, self.serde.name, self.serde.version, generation, self.partitions)

        def create(partition: int) -> None:
            self._refuse_if_abandoned()
            with self.storage.create(self._path(journal_name(partition)), overwrite=True) as file:
                self._refuse_if_abandoned(file)
                file.write(header)
                file.sync()
            self._journal_files.add(partition)

        missing = [partition for partition in range(self.partitions) if partition not in self._journal_files]
        side_by_side([functools.partial(create, partition) for partition in missing], "wal-journal-create")

    def _checkpoint_locked(
        self, stale_journals: dict[int, str] | None = None, including: Sequence[_Unacknowledged] = ()
    ) -> None:
        """The checkpoint proper: the partial snapshot and the next journals, side by
        side, each synced; the snapshot renamed into place; each next journal renamed
        over its partition's journal. The snapshot also holds the updates of `including`
        (unacknowledged transactions, in id order); memory does not, until the caller
        applies them. The caller holds the exclusive lock. On success every unsettled
        transaction is settled.

        The next journals (`journal-N.partial`, header only) are written beside the
        snapshot because on HDFS each new file costs a pipeline's setup and an hsync
        (tens of milliseconds), and an adopted shard waits for this checkpoint: one
        such wait instead of two. They cannot take the journals' names before the
        snapshot is in place (the journals hold transactions the old snapshot lacks);
        renamed over them after, a crash between leaves any subset replaced, which
        recovery reads by each journal's own header (its generation), and the rest of
        the next journals, which recovery deletes: nothing was ever written to them."""
        storage = self.storage
        partial = self._path(PARTIAL_NAME)
        snapshot = self._path(SNAPSHOT_NAME)
        # Every transaction handed out so far is in the map, in `including`, or of
        # unknown outcome: the snapshot covers them all, so replay skips any bytes
        # they left behind - and those of unknown outcome are never replayed.
        max_txid = self._txids.covered()
        records, swap_files = self._records, self._swap_files
        if including:
            records, swap_files = dict(records), dict(swap_files)
            for transaction in including:
                for update in transaction.updates:
                    apply_update(records, swap_files, update)
        journals: list[Journal] = []
        prepared: dict[int, WritableFile] = {}  # next journals, until each is renamed into place
        try:
            if self._partial_complete and not storage.exists(snapshot):
                # An earlier checkpoint failed after deleting the snapshot: its .partial,
                # written in full, alone holds the state. Put it in place before a new
                # .partial is written over it (NiFi's partial-only restore, done live).
                storage.rename(partial, snapshot)
            self._partial_complete = False
            self._hooks.checkpoint_started(partial)
            header = fmt.pack_journal_header(self.epoch, self.serde.name, self.serde.version, max_txid, self.partitions)

            def write_partial() -> None:
                # An abandoned WAL starts no storage call of a checkpoint (one in flight
                # is the storage's to finish): checked before each step that writes.
                self._refuse_if_abandoned()
                file = storage.create(partial, overwrite=True)
                try:
                    with file:
                        self._refuse_if_abandoned(file)
                        write_snapshot(
                            file,
                            epoch=self.epoch,
                            serde=self.serde,
                            max_txid=max_txid,
                            records=records,
                            swap_files=swap_files,
                        )
                except Exception:
                    self._discard(partial)  # not written in full, and maybe still open
                    raise
                self._partial_complete = True

            def prepare(partition: int) -> None:
                path = self._path(next_journal_name(partition))
                self._refuse_if_abandoned()
                file = storage.create(path, overwrite=True)
                prepared[partition] = file
                self._refuse_if_abandoned(file)
                file.write(header)
                file.sync()
                self._hooks.checkpoint_journal_prepared(path)

            # A partition without a journal yet gets one under its own name below,
            # after the snapshot is written (the first checkpoint of a new WAL).
            reused = [partition for partition in range(self.partitions) if partition in self._journal_files]
            side_by_side(
                [write_partial, *(functools.partial(prepare, partition) for partition in reused)], "wal-checkpoint"
            )
            self._hooks.checkpoint_partial_written(partial)
            self._create_missing_journals(max_txid)
            self._refuse_if_abandoned()
            if storage.exists(snapshot):
                storage.delete(snapshot)
            self._hooks.checkpoint_snapshot_deleted(snapshot)
            self._refuse_if_abandoned()
            storage.rename(partial, snapshot)  # the storage layer syncs the directory
            self._partial_complete = False
            self._hooks.checkpoint_renamed(snapshot)
            for journal in self._journals:
                try:
                    journal.close(sync=False)
                except Exception:  # a failed journal's file may refuse; it is replaced below
                    log.debug("closing %s before reset failed", journal.path, exc_info=True)
                    # Still open: let go, not overwritten (`discard`). The NameNode answers:
                    # it has just renamed the snapshot into place.
                    self._discard(journal.path)
            self._journals = []
            made: dict[int, Journal] = {}

            def reset(partition: int) -> None:
                path = self._path(journal_name(partition))
                self._refuse_if_abandoned()
                file = prepared.get(partition)
                if file is not None:  # its next journal, renamed into place
                    storage.rename(file.path, path, overwrite=True)
                    file.moved(path)
                    made[partition] = Journal(path, file, self._hooks, self._journal_failed, self.sync_durations)
                    del prepared[partition]
                else:  # a journal the set lacked before this checkpoint: created now
                    file = storage.create(path, overwrite=True)
                    made[partition] = Journal(path, file, self._hooks, self._journal_failed, self.sync_durations)
                    self._refuse_if_abandoned(file)
                    file.write(header)
                    file.sync()
                self._hooks.checkpoint_journal_reset(path)

            # Side by side (a rename is one NameNode call; a create, a pipeline and an
            # hsync). A crash part way leaves any subset of them reset, which recovery
            # reads as it reads the sequential case's prefix: each journal by its own
            # header's generation.
            try:
                side_by_side(
                    [functools.partial(reset, partition) for partition in range(self.partitions)], "wal-journal-reset"
                )
            finally:
                journals = [made[partition] for partition in sorted(made)]
            self._journals = journals
            if self._abandoned is not None:  # abandoned while they were created: they never write
                for journal in journals:
                    journal.abandon(WriteAheadLogAbandonedError(self.directory, self._abandoned))
            for partition, path in (stale_journals or {}).items():
                if partition >= self.partitions:
                    storage.delete(path)  # its transactions are all in the new snapshot
            self._journal_files = set(range(self.partitions))
        except BaseException as error:
            for file in prepared.values():  # next journals not renamed into place
                if self._abandoned is not None:
                    abandon_file(file)
                else:
                    _close_file_quietly(file)
            if not self._journals:
                for journal in journals:
                    if self._abandoned is not None:
                        journal.abandon(WriteAheadLogAbandonedError(self.directory, self._abandoned))
                    else:
                        _close_quietly(journal)
            with self._state_lock:
                self._poison = error
            if not isinstance(error, Exception):
                raise  # the process is going down (or a test crashes it here)
            raise CheckpointError(
                f"checkpoint of {self.directory} failed ({underlying(error)}); no transaction is acknowledged until a "
                "checkpoint succeeds, and every update tries one first. Nothing recoverable was deleted: "
                "the previous snapshot and journals hold the state until the new snapshot is in place."
            ) from error
        with self._state_lock:
            self._poison = None
            self._unsettled = []
            self._due_callbacks += self._settle_callbacks
            self._settle_callbacks = []
        self._last_checkpoint = self._clock()
        log.debug("WAL %s checkpointed %d records at transaction %d", self.directory, len(records), max_txid)

    def _discard(self, path: str) -> None:
        """Let go of a file a checkpoint writes again that may still be open (a snapshot
        not written in full, an old journal that would not close): overwritten open it
        would leave its last block counted against its DataNodes
        (`repositories.storage.discard`). Best effort, and never once the WAL is
        abandoned (that makes no storage call)."""
        if self._abandoned is not None:
            return
        try:
            discard(self.storage, path)
        except Exception:  # noqa: BLE001 - overwritten by the next checkpoint all the same
            log.debug("letting go of %s failed", path, exc_info=True)

    def _start_checkpoint_thread(self) -> None:
        interval = self.checkpoint_interval
        if interval is None:  # no periodic checkpoints
            return
        poll = min(interval, 5.0)

        def run() -> None:
            failing = False
            while not self._stop.wait(poll):
                try:
                    self.maybe_checkpoint()
                except WriteAheadLogClosedError:
                    return  # closed or abandoned as the round began
                except CheckpointError as error:
                    # Storage down: one line when it starts failing (the cause's first line),
                    # one when it works again; the commits' own lines say the rest.
                    if not failing:
                        cause = error.__cause__ or error
                        log.warning(
                            "periodic checkpoint of %s failed (%s: %s); retried every %.0f s",
                            self.directory,
                            type(cause).__name__,
                            str(cause).splitlines()[0][:300],
                            poll,
                        )
                    failing = True
                    continue
                except Exception:
                    log.exception("periodic checkpoint of %s failed", self.directory)
                    continue
                if failing:
                    log.warning("periodic checkpoint of %s works again", self.directory)
                    failing = False

        self._checkpoint_thread = threading.Thread(target=run, name=f"wal-checkpoint {self.directory}", daemon=True)
        self._checkpoint_thread.start()


def _close_file_quietly(file: WritableFile) -> None:
    try:
        file.close()
    except Exception:  # noqa: BLE001 - a next journal a failed checkpoint made: made again by the next one
        log.debug("closing %s after a failed checkpoint failed", file.path, exc_info=True)


def _close_quietly(journal: Journal) -> None:
    try:
        journal.close(sync=False)
    except Exception:  # noqa: BLE001 - a journal a failed checkpoint created: replaced by the next one
        log.debug("closing %s after a failed checkpoint failed", journal.path, exc_info=True)
