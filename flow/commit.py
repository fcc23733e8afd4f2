"""Committers: how a session's `Transaction` becomes durable, or is held.

`DurableCommitter` (traditional engine) follows the commit order of `session`: content
sync, one WAL transaction, queues, claimant counts, provenance, then `on_success`.
`HeldCommitter` (stateless engine) applies the transaction to in-memory queues only
and holds `on_success` and the provenance events until the whole flow succeeds.

A durable commit is consulted at fixed points: the node's `CommitGate` (production:
may this shard still be written?) and then the `CommitHooks` fault seams (tests).

A failed WAL write follows the WAL's rule (`repositories.flowfile`): the WAL rolls
before it acknowledges anything else, so a commit it refused is either definitely not
applied (the session releases everything at once) or of unknown outcome
(`OutcomeUnknownError`: the session rolls back in memory, but what the transaction
references - its content claims, its outbox slot - is released only when the WAL says
no recovery can replay it any more, `WriteAheadLog.when_settled`). No other commit is
acknowledged meanwhile, so nothing can be built on the rolled-back state that a
replay would contradict.

Each durable commit is counted by outcome in `DurableCommitter.outcomes` (`COMMITTED`;
`REFUSED` by the gate or a seam; `FAILED` in storage, with nothing in the WAL;
`UNKNOWN`), and the duration of each one that stood in `durations`
(`repositories.instruments`; the admin API publishes both per shard).

Lock plan (DurableCommitter): `_slots_lock` guards the free list of outbox slots and
the failure counters; everything else is the WAL's, the queues' and the repositories'
own locking (and the instruments' own locks).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from repositories.flowfile import Delete, OutcomeUnknownError, Put, SwapIn, WriteAheadLogError
from repositories.instruments import ByLabel, Counter, LatencyHistogram
from repositories.provenance import EventBatch
from repositories.provenance.event_batch import event_of_row
from repositories.seams import FaultSeams

from . import provenance_outbox
from .errors import CommitError
from .session import Transaction

log = logging.getLogger(__name__)

# Outcomes of a durable commit, as `DurableCommitter.outcomes` counts them.
COMMITTED = "committed"  # the WAL holds it (or it had nothing to write)
REFUSED = "refused"      # the gate (or a seam) refused it; no storage call failed
FAILED = "failed"        # the content sync or the WAL write failed; the WAL holds nothing of it
UNKNOWN = "unknown"      # the WAL did not confirm it; the next roll decides
OUTCOMES = (COMMITTED, REFUSED, FAILED, UNKNOWN)


class CommitGate(Protocol):
    """The node's production gate on every durable commit (a clustered node refuses
    writes to a shard it may no longer own, and learns when a commit got through).
    Not a fault seam: it is consulted on every commit, before the seams."""

    def admit(self, component_id: str) -> None:
        """Raise to refuse the commit; called before the content sync and again before the WAL write."""

    def committed(self, component_id: str) -> None:
        """The WAL holds the transaction (called where the `after_wal` seam is); should not
        raise: if it does, that is logged and the commit stands, as the WAL holds it."""

    def failed(self, component_id: str, error: BaseException) -> None:
        """The WAL did not acknowledge the commit (nothing was written, or its outcome is
        unknown) and the session rolls back; must not raise (it is logged if it does)."""


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


def _tell_failed(component_id: str, error: BaseException, who: str, report: Callable[[str, BaseException], None]):
    try:
        report(component_id, error)
    except Exception:  # noqa: BLE001 - the commit has failed already; say so, not this
        log.exception("%s: %s raised", component_id, who)


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def _apply_to_queues(shard, tx: Transaction) -> None:
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
            log.warning("queue %s: swapping after a commit failed (%s); it is tried again after the next one",
                        queue.id, str(error).splitlines()[0][:300])


def _apply_claims(content, tx: Transaction) -> None:
    deltas = tx.claim_deltas
    for resource, delta in deltas.items():  # increments first: a shared claim never touches 0
        for _ in range(delta):
            content.increment(resource)
    for resource, delta in deltas.items():
        for _ in range(-delta):
            content.decrement(resource)


class DurableCommitter:
    """Makes a session's transaction durable in the commit order of `flow.session`.
    At each point the `gate` (production) is consulted first, then the `hooks` (fault
    seams of a test)."""

    def __init__(self, shard, content, provenance, *, clock_ms: Callable[[], int] | None = None,
                 gate: CommitGate | None = None, hooks: CommitHooks | None = None, outbox: bool = True):
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

    def hold_claims(self, claims) -> None:
        """The content claims a session wrote before its commit failed with
        `CommitError.wal_written` (the WAL transaction's outcome is unknown): released
        once the WAL has settled it, not now (a replay would need the content)."""
        claims, content = list(claims), self.content

        def release() -> None:
            for claim in claims:
                content.decrement(claim)
        self.shard.wal.when_settled(release)

    def _failed(self, component: str, error: BaseException) -> None:
        """One line when this shard's commits start failing (storage down, a fenced
        shard), one when they succeed again; not one per attempt."""
        with self._slots_lock:
            first = self._failing_since is None
            if first:
                self._failing_since, self._failures = time.monotonic(), 0
            self._failures += 1
        if first:
            log.error("shard %s: commits fail (%s: %s); every session rolls back and is retried, nothing "
                      "committed is lost", self.shard.id, component, _first_line(error))

    def _succeeded(self) -> None:
        if self._failing_since is None:
            return
        with self._slots_lock:
            since, failures, self._failing_since = self._failing_since, self._failures, None
        if since is not None:
            log.warning("shard %s: commits succeed again after %d failed over %.1fs", self.shard.id, failures,
                        time.monotonic() - since)

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
        component = tx.component_id
        updates = [Put(flowfile.to_record()) for flowfile in tx.puts]
        updates += [Delete(flowfile_id) for flowfile_id in tx.deletes]
        # A SwapIn with no Put for its FlowFiles: the WAL forgets them with the file.
        updates += [SwapIn(summary.location) for _, summary in tx.swap_drops]
        now = self._clock_ms()
        if tx.state is not None:
            # After a state commit of unknown outcome the WAL may hold entries memory
            # does not: the next one deletes every entry not in its state.
            written = self._unsettled_state_ids.get(component)
            updates += self.shard.state_updates(component, tx.state, now, written=written or (),
                                                whole=written is not None)
        slot = batch = None
        # in_storage: a failure now is the storage's (FAILED), not a refusal (REFUSED).
        outcome_unknown = in_storage = False
        gate, hooks = self.gate, self.hooks
        try:
            # 0. The events, encoded once: the outbox record carries the batch that
            # provenance registers. (Events it cannot encode fail the commit here.)
            if tx.events and self.provenance is not None:
                batch = EventBatch.from_rows(tx.events, now)
                if self.outbox:
                    slot = self._take_slot()
                    updates.append(Put(provenance_outbox.outbox_record(
                        slot, self.provenance.next_event_id, batch, now).to_record()))
            # 1. Content durable before any record points at it.
            if tx.wrote_content:
                if gate is not None:
                    gate.admit(component)
                hooks.before_content_sync(component)
                in_storage = True
                self.content.sync()
                # Another session's sync may have been the one told that bytes of
                # this session's claims were lost: ask about our own claims too.
                self.content.check_durable(f.content_claim for f in tx.puts if f.content_claim is not None)
                in_storage = False
            # 2. One WAL transaction: the commit point.
            if updates:
                # Asked again: the gate may have closed during the content sync.
                if gate is not None:
                    gate.admit(component)
                hooks.before_wal(component)
                in_storage = True
                try:
                    self.shard.wal.update(updates)
                except Exception as error:
                    # Any other WAL error refused the transaction with nothing applied;
                    # an error that is not the WAL's says nothing, so it counts as unknown.
                    outcome_unknown = isinstance(error, OutcomeUnknownError) or not isinstance(error, WriteAheadLogError)
                    raise
                if tx.state is not None:
                    self._unsettled_state_ids.pop(component, None)  # written whole: settled
            self._succeeded()
        except Exception as error:
            if slot is not None:
                if outcome_unknown:
                    # A replay of the transaction would bring back this slot's record:
                    # another commit must not overwrite it before the WAL settles it.
                    self.shard.wal.when_settled(functools.partial(self._return_slot, slot))
                else:
                    self._return_slot(slot)
            if outcome_unknown and tx.state is not None:
                # A replay may bring its entries back, or not: the next state commit of
                # the component writes its whole state and deletes those entries.
                self._unsettled_state_ids[component] = sorted(set(self._unsettled_state_ids.get(component, ())) | {
                    update.record.id for update in updates if isinstance(update, Put)
                    and update.record.id.startswith(self.shard.state_entry_id(component, ""))})
            self.outcomes.of(UNKNOWN if outcome_unknown else FAILED if in_storage else REFUSED).add()
            self._failed(component, error)
            if gate is not None:
                _tell_failed(component, error, "the commit gate's failed()", gate.failed)
            _tell_failed(component, error, "the commit_failed seam", hooks.commit_failed)
            where = ("the WAL did not confirm it (its outcome is unknown until the WAL rolls; what it references "
                     "is held until then)") if outcome_unknown else "nothing was written to the WAL"
            raise CommitError(f"{component}: commit failed, {where}; the session rolls back: {error}",
                              wal_written=outcome_unknown) from error
        # From here on the commit stands: the WAL holds it, durably and in its memory. A
        # failure is logged, never turned into a rollback (a test's simulated crash,
        # a BaseException, still propagates, and the session is then left as it is).
        if updates:
            if gate is not None:
                try:
                    gate.committed(component)
                except Exception:  # noqa: BLE001
                    log.exception("%s: the commit gate's committed() raised; the commit stands", component)
            hooks.after_wal(component)
        try:
            # 3. Memory follows the WAL.
            if tx.state is not None:
                self.shard.set_state_committed(component, tx.state)
            _apply_to_queues(self.shard, tx)
            # 4. Claimant counts.
            _apply_claims(self.content, tx)
            # 5. Provenance (the outbox record covers a crash before this returns).
            if batch is not None:
                hooks.before_provenance(component)
                self.provenance.register_batch(batch)
        except Exception:  # noqa: BLE001
            log.exception("%s: committed to the WAL, but applying it failed; a restart rebuilds memory "
                          "from the WAL and provenance from the outbox", component)
        finally:
            if slot is not None:
                self._return_slot(slot)
        self.outcomes.of(COMMITTED).add()
        self.durations.observe(time.perf_counter() - started)
        # 6. The source may acknowledge now, not before: a source that records what it
        # took in this transaction (`flow.processors.intake`) takes it exactly once.
        if tx.on_success is not None:
            tx.on_success()


class HeldCommitter:
    """Stateless: memory only; callbacks and provenance wait for the whole flow, which
    runs `held_callbacks` when it succeeds and `held_failure_callbacks` when it fails."""

    def __init__(self, shard, content):
        self.shard = shard
        self.content = content
        self.held_callbacks: list[Callable[[], None]] = []
        self.held_failure_callbacks: list[Callable[[BaseException], None]] = []
        self.events: list = []

    def commit(self, tx: Transaction) -> None:
        if tx.state is not None:
            self.shard.set_state_committed(tx.component_id, tx.state)
        _apply_to_queues(self.shard, tx)
        _apply_claims(self.content, tx)
        self.events += [event_of_row(row) for row in tx.events]
        if tx.on_success is not None:
            self.held_callbacks.append(tx.on_success)
        if tx.on_failure is not None:
            self.held_failure_callbacks.append(tx.on_failure)
