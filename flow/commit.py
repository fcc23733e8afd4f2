"""Committers: how a session's `Transaction` becomes durable, or is held.

`DurableCommitter` (traditional engine) follows the commit order of `session`: content
sync, one WAL transaction, queues, claimant counts, provenance, then `on_success`.
`HeldCommitter` (stateless engine) applies the transaction to in-memory queues only
and holds `on_success` and the provenance events until the whole flow succeeds.

A durable commit runs in three stages (`flow.commit_outcome`): prepare (the WAL
records, the provenance batch and its outbox record), make durable (content sync, the
WAL transaction) and apply (queues, claimant counts, provenance). What follows when a
stage fails is `commit_outcome(stage, error)`, a pure table that the committer only
carries out. The commit is consulted at fixed points: the node's `CommitGate`
(production: may this shard still be written?) and then the `CommitHooks` fault seams
(tests).

A failed WAL write follows the WAL's rule (`repositories.flowfile`): the WAL rolls
before it acknowledges anything else, so a commit it refused is either definitely not
applied (the session releases everything at once) or of unknown outcome
(`OutcomeUnknownError`: the session rolls back in memory, but what the transaction
references - its content claims, its outbox slot - is released only when the WAL says
no recovery can replay it any more, `WriteAheadLog.when_settled`). No other commit is
acknowledged meanwhile, so nothing can be built on the rolled-back state that a
replay would contradict.

Each durable commit is counted by outcome in `DurableCommitter.outcomes` (those of
`flow.commit_outcome`: `COMMITTED`; `REFUSED` by the gate or a seam; `FAILED` in
storage, with nothing in the WAL; `UNKNOWN`), and the duration of each one that stood
in `durations` (`repositories.instruments`; the admin API publishes both per shard).

Lock plan (DurableCommitter): `_slots_lock` guards the free list of outbox slots and
the failure counters; everything else is the WAL's, the queues' and the repositories'
own locking (and the instruments' own locks).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from repositories.flowfile import Delete, Put, SwapIn, Update
from repositories.instruments import ByLabel, Counter, LatencyHistogram
from repositories.provenance import EventBatch
from repositories.provenance.event_batch import EventRow, check_row, event_of_row
from repositories.seams import FaultSeams

from . import provenance_outbox
from .commit_gate import CommitGate
from .commit_outcome import OUTCOMES, STOOD, Fate, Outcome, Slot, Stage, WalHolds, commit_outcome
from .errors import CommitError, ProvenanceFailing
from .provenance_retry import KeptRows, RowsRetry
from .session import Transaction

if TYPE_CHECKING:
    from repositories.claims import ContentClaim
    from repositories.content import ContentStore
    from repositories.provenance import ProvenanceEvent, ProvenanceRepository

    from .shard import QueueShard

log = logging.getLogger(__name__)


class CommitHooks(FaultSeams):
    """Named fault seams of a durable commit (raise to fail it there, block to stop it
    there). Each is called after the gate at the same point."""

    def before_content_sync(self, component_id: str) -> None:
        """The session wrote content, which is not synced yet; nothing is in the WAL."""

    def before_wal(self, component_id: str) -> None:
        """Content is durable; the WAL transaction is not written."""

    def after_wal(self, component_id: str) -> None:
        """The WAL holds the transaction; memory, claimant counts and provenance do not yet."""

    def before_provenance(self, component_id: str) -> None:
        """Queues and claimant counts follow the WAL; provenance is not registered (the outbox covers it)."""

    def commit_failed(self, component_id: str, error: BaseException) -> None:
        """Called after a commit failed before the WAL recorded it (after the gate's `failed`);
        if it raises, that is only logged."""


def _tell_failed(
    component_id: str, error: BaseException, who: str, report: Callable[[str, BaseException], None]
) -> None:
    try:
        report(component_id, error)
    except Exception:  # noqa: BLE001 - the commit has failed already; say so, not this
        log.exception("%s: %s raised", component_id, who)


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def _apply_to_queues(shard: QueueShard, tx: Transaction) -> None:
    for queue, flowfiles in tx.acknowledged.items():
        queue.acknowledge(flowfiles)
    for queue, summary in tx.swap_drops:
        queue.complete_swap_drop(summary)
        # The WAL no longer points at the file; a crash before this delete leaves an
        # orphan that the next recovery removes.
        shard.forget_swap_file(summary.location)
    for queue, flowfiles in tx.transfers.items():
        queue.put_all(flowfiles)
    for queue in tx.transfers:
        try:
            shard.maintain(queue)
        except Exception as error:  # noqa: BLE001 - swapping is not part of the commit; the next one retries it
            log.warning(
                "queue %s: swapping after a commit failed (%s); it is tried again after the next one",
                queue.id,
                str(error).splitlines()[0][:300],
            )


def _apply_in_memory(shard: QueueShard, content: ContentStore, tx: Transaction) -> None:
    """The transaction in memory: the component's state, the queues, claimant counts."""
    if tx.state is not None:
        shard.set_state_committed(tx.component_id, tx.state)
    _apply_to_queues(shard, tx)
    _apply_claims(content, tx)


def _apply_claims(content: ContentStore, tx: Transaction) -> None:
    deltas = tx.claim_deltas
    for resource, delta in deltas.items():  # increments first: a shared claim never touches 0
        for _ in range(delta):
            content.increment(resource)
    for resource, delta in deltas.items():
        for _ in range(-delta):
            content.decrement(resource)


class _Commit:
    """One durable commit in progress: the stage it reached, and what its stages made."""

    __slots__ = ("tx", "stage", "updates", "batch", "rows", "slot")

    def __init__(self, tx: Transaction):
        self.tx = tx
        self.stage = Stage.RECORDS
        self.updates: list[Update] = []  # the WAL transaction
        self.batch: EventBatch | None = None  # the provenance events of a large commit
        self.rows: list[EventRow] | None = None  # or of a small one, registered with others'
        self.slot: int | None = None  # the provenance outbox slot taken


class DurableCommitter:
    """Makes a session's transaction durable in the commit order of `flow.session`.
    At each point the `gate` (production) is consulted first, then the `hooks` (fault
    seams of a test)."""

    def __init__(
        self,
        shard: QueueShard,
        content: ContentStore,
        provenance: ProvenanceRepository | None,
        *,
        clock_ms: Callable[[], int] | None = None,
        gate: CommitGate | None = None,
        hooks: CommitHooks | None = None,
        outbox: bool = True,
    ):
        self.shard = shard
        self.content = content
        self.provenance = provenance
        self.gate = gate
        self.hooks = CommitHooks.coerce(hooks)
        self.outbox = outbox and provenance is not None
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._slots_lock = threading.Lock()
        self._state_locks: dict[str, threading.RLock] = {}  # a component's state commits, one at a time
        self._unsettled_state_ids: dict[str, list[str]] = {}
        self._free_slots: list[int] = []
        self._slot_count = 0
        self._failing_since: float | None = None  # guarded by _slots_lock
        self._failures = 0
        self.provenance_retry = RowsRetry()  # small commits whose events provenance failed to register
        self.outcomes: ByLabel[Counter] = ByLabel(Counter, OUTCOMES)
        self.durations = LatencyHistogram()  # seconds of each commit that stood, to provenance

    def _take_slot(self) -> int:
        with self._slots_lock:
            if self._free_slots:
                return self._free_slots.pop()
            self._slot_count += 1
            return self._slot_count - 1

    def _return_slot(self, slot: int) -> None:
        with self._slots_lock:
            self._free_slots.append(slot)

    def hold_claims(self, claims: Iterable[ContentClaim]) -> None:
        """The content claims a session wrote before its commit failed with
        `CommitError.wal_written` (the WAL transaction's outcome is unknown): released
        once the WAL has settled it, not now (a replay would need the content)."""
        claims, content = list(claims), self.content

        def release() -> None:
            for claim in claims:
                content.decrement(claim)

        self.shard.durable_wal.when_settled(release)

    def _failed(self, component: str, error: BaseException) -> None:
        """One line when this shard's commits start failing (storage down, a fenced
        shard), one when they succeed again; not one per attempt."""
        with self._slots_lock:
            first = self._failing_since is None
            if first:
                self._failing_since, self._failures = time.monotonic(), 0
            self._failures += 1
        if first:
            log.error(
                "shard %s: commits fail (%s: %s); every session rolls back and is retried, nothing committed is lost",
                self.shard.id,
                component,
                _first_line(error),
            )

    def _succeeded(self) -> None:
        if self._failing_since is None:
            return
        with self._slots_lock:
            since, failures, self._failing_since = self._failing_since, self._failures, None
        if since is not None:
            log.warning(
                "shard %s: commits succeed again after %d failed over %.1fs",
                self.shard.id,
                failures,
                time.monotonic() - since,
            )

    def commit(self, tx: Transaction) -> None:
        if tx.state is None:
            self._commit(tx)
            return
        # A state is written as the entries it changed from the committed state: the
        # next state commit of the component computes its delta once this one is in
        # memory (or known to be of unknown outcome), never against the same base.
        with self._state_lock(tx.component_id):
            self._commit(tx)

    def _state_lock(self, component: str) -> threading.RLock:
        with self._slots_lock:
            return self._state_locks.setdefault(component, threading.RLock())

    def _commit(self, tx: Transaction) -> None:
        started = time.perf_counter()
        commit = _Commit(tx)
        try:
            self._prepare(commit)
            self._make_durable(commit)
            self._apply(commit)
        except BaseException as error:
            outcome = commit_outcome(commit.stage, error)
            self._conclude(commit, outcome)
            if outcome.session is Fate.ROLLED_BACK:
                self._roll_back(commit, outcome, error)
            if outcome.session is Fate.PROPAGATES:
                raise
            log.exception(
                "%s: committed to the WAL, but applying it failed; a restart rebuilds memory "
                "from the WAL and provenance from the outbox",
                tx.component_id,
            )
        else:
            self._conclude(commit, STOOD)
        self.durations.observe(time.perf_counter() - started)
        # The source may acknowledge now, not before: a source that records what it
        # took in this transaction (`flow.processors.intake`) takes it exactly once.
        if tx.on_success is not None:
            tx.on_success()

    def _prepare(self, commit: _Commit) -> None:
        """The transaction's WAL records, provenance batch and outbox record; nothing durable."""
        tx = commit.tx
        updates = commit.updates
        updates += [Put(flowfile.to_record()) for flowfile in tx.puts]
        updates += [Delete(flowfile_id) for flowfile_id in tx.deletes]
        # A SwapIn with no Put for its FlowFiles: the WAL forgets them with the file.
        updates += [SwapIn(summary.location) for _, summary in tx.swap_drops]
        now = self._clock_ms()
        if tx.state is not None:
            # After a state commit of unknown outcome the WAL may hold entries memory
            # does not: the next one deletes every entry not in its state.
            written = self._unsettled_state_ids.get(tx.component_id)
            updates += self.shard.state_updates(
                tx.component_id, tx.state, now, written=written or (), whole=written is not None
            )
        commit.stage = Stage.EVENTS
        events, provenance = tx.events, self.provenance
        if not events or provenance is None:
            return
        retry = self.provenance_retry
        if retry.waiting:
            self._register_kept()
            if retry.full:
                raise ProvenanceFailing(
                    f"provenance has not registered the events of {retry.waiting} commits; commits with "
                    "provenance events wait until it does (their sessions roll back and are retried)"
                )
        if len(events) <= provenance_outbox.ROWS_AT_MOST:
            # A few events: provenance turns them into Arrow together with other small
            # commits' (`register_rows_later`); the outbox record carries them as rows.
            for row in events:
                check_row(row)  # a row provenance could not store fails this commit, not a group
            commit.rows = rows = [row if row.time_ms is not None else row._replace(time_ms=now) for row in events]
            if self.outbox:
                commit.slot = slot = self._take_slot()
                record = provenance_outbox.rows_record(slot, provenance.peek_next_event_id(), rows, now)
                updates.append(Put(record.to_record()))
            return
        # Many: encoded once, the outbox record carries the batch that provenance
        # registers. (Events it cannot encode fail the commit here.)
        commit.batch = batch = EventBatch.from_rows(events, now)
        if self.outbox:
            commit.slot = slot = self._take_slot()
            record = provenance_outbox.outbox_record(slot, provenance.peek_next_event_id(), batch, now)
            updates.append(Put(record.to_record()))

    def _make_durable(self, commit: _Commit) -> None:
        """Content synced, then the one WAL transaction (the commit point)."""
        tx, updates = commit.tx, commit.updates
        component, gate, hooks = tx.component_id, self.gate, self.hooks
        # Content durable before any record points at it.
        if tx.wrote_content:
            commit.stage = Stage.ADMIT_CONTENT
            if gate is not None:
                gate.admit(component)
            hooks.before_content_sync(component)
            commit.stage = Stage.CONTENT_SYNC
            self.content.sync()
            # Another session's sync may have been the one told that bytes of
            # this session's claims were lost: ask about our own claims too.
            self.content.check_durable(f.content_claim for f in tx.puts if f.content_claim is not None)
        if updates:
            # Asked again: the gate may have closed during the content sync.
            commit.stage = Stage.ADMIT_WAL
            if gate is not None:
                gate.admit(component)
            hooks.before_wal(component)
            commit.stage = Stage.WAL_WRITE
            self.shard.durable_wal.update(updates)
            if tx.state is not None:
                self._unsettled_state_ids.pop(component, None)  # written whole: settled
        self._succeeded()
        if updates:
            # The commit stands from here on: the WAL holds it, durably and in its memory.
            commit.stage = Stage.AFTER_WAL
            if gate is not None:
                try:
                    gate.committed(component)
                except Exception:  # noqa: BLE001
                    log.exception("%s: the commit gate's committed() raised; the commit stands", component)
            hooks.after_wal(component)

    def _apply(self, commit: _Commit) -> None:
        """Memory follows the WAL, then claimant counts, then provenance (the outbox
        record covers a crash before it is registered)."""
        commit.stage = Stage.APPLY
        _apply_in_memory(self.shard, self.content, commit.tx)
        if commit.batch is None and commit.rows is None:
            return
        assert self.provenance is not None  # events are kept only for a provenance repository
        component = commit.tx.component_id
        self.hooks.before_provenance(component)
        if commit.batch is not None:
            self.provenance.register_batch(commit.batch)
            return
        assert commit.rows is not None
        self._register_later(KeptRows(component, commit.slot, commit.rows), retried=False)
        commit.slot = None  # the registration settles it

    def _register_later(self, kept: KeptRows, *, retried: bool) -> None:
        """Queue `kept`'s rows in provenance. A first try that provenance refuses at once
        raises (the commit stands with the error logged: `flow.commit_outcome`'s APPLY);
        a retry refused at once stays kept, as one that fails later does."""
        assert self.provenance is not None  # rows are kept only for a provenance repository
        done = functools.partial(self._registered, kept, retried)
        try:
            self.provenance.register_rows_later(kept.rows, done)
        except Exception as error:  # noqa: BLE001 - a retry is kept, and told once per failure (`_registered`)
            if not retried:
                raise
            done(error)

    def _registered(self, kept: KeptRows, retried: bool, error: BaseException | None) -> None:
        """A small commit's events are registered (`error` None): its slot is free. If
        they are not, the slot stays taken (its outbox record has them for the next
        start) and the rows are kept to be registered again (`flow.provenance_retry`)."""
        if error is None:
            if kept.slot is not None:
                self._return_slot(kept.slot)
            if retried and (after := self.provenance_retry.registered()) is not None:
                log.warning(
                    "shard %s: provenance registered every kept commit's events, %.1fs after it failed",
                    self.shard.id,
                    after,
                )
            return
        if self.provenance_retry.failed(kept, retried=retried):
            log.error(
                "shard %s: provenance did not register a commit's events (%s: %s); its outbox record keeps them, "
                "and they are registered again every %.0fs until provenance takes them",
                self.shard.id,
                kept.component,
                _first_line(error),
                self.provenance_retry.every_s,
            )

    def _register_kept(self) -> None:
        """Hand the kept commits' rows to provenance again, if it is time."""
        for kept in self.provenance_retry.due():
            self._register_later(kept, retried=True)

    def _conclude(self, commit: _Commit, outcome: Outcome) -> None:
        """Count the commit and settle its outbox slot, as `outcome` says."""
        slot = commit.slot
        if slot is not None:
            if outcome.slot is Slot.RETURN:
                self._return_slot(slot)
            elif outcome.slot is Slot.RETURN_WHEN_SETTLED:
                # A replay of the transaction would bring back this slot's record:
                # another commit must not overwrite it before the WAL settles it.
                self.shard.durable_wal.when_settled(functools.partial(self._return_slot, slot))
        if outcome.counted is not None:
            self.outcomes.of(outcome.counted).add()

    def _roll_back(self, commit: _Commit, outcome: Outcome, error: BaseException) -> None:
        """Tell of the failure and raise the `CommitError` the session rolls back on."""
        tx = commit.tx
        component = tx.component_id
        unknown = outcome.wal is WalHolds.UNKNOWN
        if unknown and tx.state is not None:
            # A replay may bring its entries back, or not: the next state commit of
            # the component writes its whole state and deletes those entries.
            prefix = self.shard.state_entry_id(component, "")
            self._unsettled_state_ids[component] = sorted(
                set(self._unsettled_state_ids.get(component, ()))
                | {
                    update.record.id
                    for update in commit.updates
                    if isinstance(update, Put) and update.record.id.startswith(prefix)
                }
            )
        self._failed(component, error)
        if self.gate is not None:
            _tell_failed(component, error, "the commit gate's failed()", self.gate.failed)
        _tell_failed(component, error, "the commit_failed seam", self.hooks.commit_failed)
        where = (
            (
                "the WAL did not confirm it (its outcome is unknown until the WAL rolls; what it references "
                "is held until then)"
            )
            if unknown
            else "nothing was written to the WAL"
        )
        raise CommitError(
            f"{component}: commit failed, {where}; the session rolls back: {error}", wal_written=unknown
        ) from error


class HeldCommitter:
    """Stateless: memory only; callbacks and provenance wait for the whole flow, which
    runs `held_callbacks` when it succeeds and `held_failure_callbacks` when it fails."""

    def __init__(self, shard: QueueShard, content: ContentStore):
        self.shard = shard
        self.content = content
        self.held_callbacks: list[Callable[[], None]] = []
        self.held_failure_callbacks: list[Callable[[BaseException], None]] = []
        self.events: list[ProvenanceEvent] = []

    def commit(self, tx: Transaction) -> None:
        _apply_in_memory(self.shard, self.content, tx)
        self.events += [event_of_row(row) for row in tx.events]
        if tx.on_success is not None:
            self.held_callbacks.append(tx.on_success)
        if tx.on_failure is not None:
            self.held_failure_callbacks.append(tx.on_failure)

    def hold_claims(self, claims: Iterable[ContentClaim]) -> None:
        """As `DurableCommitter.hold_claims`; in memory no recovery replays a commit, so
        the claims are released now."""
        for claim in claims:
            self.content.decrement(claim)
