"""PublishKafka: each FlowFile's content as one Kafka record, delivered exactly once.

A task polls a batch, produces one record per FlowFile (its key, partition and
headers from the FlowFile's attributes), waits for the brokers to acknowledge every
one (acks=all, idempotent producer), reports a SEND and routes the FlowFile to
success. A record the brokers refuse for itself alone (too large, a partition the
topic does not have, a topic that does not exist and is not created) goes to
`failure`, penalized, the broker's error in `kafka.error`; the rest of the batch is
delivered. A broker that cannot be reached loses nothing: the session rolls back, the
FlowFiles stay queued (not penalized: back-pressure builds up behind them), the
processor yields, logs one line for the outage, and delivers once a broker answers.

Exactly once (`delivery_guarantee: exactly_once`, the default), after Kafka Streams:
a transactional producer whose `transactional.id` is
`<transactional_id_prefix>-<shard id>-<processor id>`. A shard keeps its id when a
survivor adopts it, so the adopter's producer has the dead owner's transactional id,
and its `init_transactions` fences that owner: a paused old owner that wakes up fails
its next `commit_transaction` (producer fenced), and its records are never read by a
read_committed consumer. Each batch is one Kafka transaction holding its records and
one progress record (`progress`) naming the FlowFiles it delivers and those of
earlier committed transactions whose WAL commit is not known to be durable. The Kafka
transaction commits first, then the session. Where a crash can fall:

  * before the Kafka commit: the transaction is aborted (by the next producer's
    `init_transactions`, or by the broker at `transaction_timeout`); the FlowFiles are
    still queued in the WAL and are sent again, in a new transaction;
  * after the Kafka commit, before the WAL commit: the FlowFiles are queued again, and
    the progress record names them. The next producer reads it back (read_committed,
    after its `init_transactions`, so that no fenced producer can commit after it) and
    routes them to success without producing them (a SEND whose details say so);
  * after the WAL commit: nothing to do; the ids the progress record still names are
    forgotten once a batch holds every FlowFile the incoming queues hold.

A WAL commit that fails (the node's storage down) keeps its ids pending in memory, with
the same effect when its FlowFiles come back. A transaction that fails (an abortable
error, the broker's transaction timeout) is aborted and the session rolled back. A
fatal error (fenced) ends the producer: it is logged once, the session rolls back, the
processor yields, and a later task makes a new producer (which reads the progress
topic back again).

One caveat of naming FlowFiles by id: a FlowFile that a crash left named, and that the
flow routes back to this same processor (a loop) before its incoming queues have once
held nothing else, is routed to success without being sent.

At least once (`delivery_guarantee: at_least_once`): an idempotent producer, no
transactions and no progress topic; a crash between the brokers' acknowledgement and
the WAL commit sends the batch again.

`transaction_timeout` is Kafka's `transaction.timeout.ms`: the broker aborts a
transaction left open longer. It must be longer than a batch takes to send: a batch's
records must be acknowledged within half of it (librdkafka's `message.timeout.ms`),
and the commit follows.

How a round of records reaches Kafka, and what its failures mean, is `delivery`'s.

Lock plan: `_lock` is held by the one task that publishes at a time (a second one
yields): the producer, the pending ids and the outage flag belong to that task.
`on_stopped` takes it to close the producer. `_preparing` guards `_prepared` (the
producer a shard being adopted had made ready, `prepare_adopted`), `_taken` (the one
the task took) and `_claimed` (a task made or took its producer: no preparation
begins after); it is held for an assignment or a comparison, never while waiting,
and taken inside `_lock` (the task) or alone (the preparation's thread, which never
takes `_lock`: the task waits under `_lock` for the producer that thread makes).
`_fencing` is held by `prepare_adopted` from its first fencing request to the end of
its last, and waited for by `release_prepared` (never under `_lock`, at most
`FENCE_WAIT_S`). `_client` is held by whoever uses the producer: the task (inside
`_lock`, waiting for it), `on_stopped`, and the idle look (`idle`), which takes it
only when it is free and holds it for a poll, or after an outage for at most
`transactional.IDLE_PROBE_S` plus `IDLE_SETTLE_S`: a task never yields to the look.

An idle producer after an outage: a task serves the producer's librdkafka callbacks
before each transaction, and after an outage (every broker down) makes a new
producer, which finishes what the brokers' restart left open first (`hanging`). With
nothing queued no task runs, so a thread looks every second while no task uses the
producer: it serves the idle producer's callbacks, and after an outage finishes that
producer's own transactions that a partition holds open although their coordinator
decided them (`transactional.finish_idle_hanging`). Holding `_client`, nothing of the
id can begin meanwhile, and nothing is fenced: the next task still makes its new
producer.

A shard being adopted: its new owner's first task would fence the dead owner's
producer (`init_transactions`; the open transaction that producer left is ended first,
`hanging.settle`, or librdkafka would be told to wait and ask again only 500 ms later)
and read the progress back before it sends anything, after the shard's WAL is
recovered. `prepare_adopted` does both on a thread of its own while the WAL is being
recovered, and the first task takes the producer it made. Fencing early is as safe as
fencing late: the dead owner can only lose its producer sooner. What must not happen
is a fence that lands after the shard's runtime made its own producer: that producer,
the one that runs the shard, would be fenced by a preparation nobody takes. So the
node is admitted for the shard (its session holds, ZooKeeper names it the owner at the
adoption's epoch) just before each request that fences, and a preparation given up
(`release_prepared`: the adoption moved on, the runtime made its own) is refused at
its next fence, and the release waits for a fence already in flight to end (for
`FENCE_WAIT_S` at most: a node stopping must not wait on brokers that do not answer;
a fence later still costs the runtime's producer, which is made again, never a record).
"""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from ...errors import ExpressionError, NotAdmitted, UnreadableContent
from ...processor import ProcessContext, Processor, PropertyDescriptor
from ...records.errors import RecordError
from ...steps import Steps
from ..content_failures import ContentFailures
from ..expression_failures import ExpressionFailures, PropertyFailed, evaluate_all
from ..refusals import Refusals
from . import idle, progress
from .connection import CONNECTION_PROPERTIES, validate_connection
from .delivery import (
    Record,
    SinkProducer,
    Undelivered,
    reason,
    split_refusals,
)
from .demarcation import decode_demarcator, split_records
from .record_mode import PUBLISH_PROPERTIES, to_publish, validate_record_mode
from .tasks import run_alone
from .transactional import finish_idle_hanging, transactional_producer

if TYPE_CHECKING:
    from ...session import ProcessSession

EXACTLY_ONCE, AT_LEAST_ONCE = "exactly_once", "at_least_once"
ERROR_ATTRIBUTE = "kafka.error"
KEY_ATTRIBUTE = "kafka.key"
log = logging.getLogger(__name__)

CLOSE_WAIT_S = 5.0  # on_stopped: the flush and the abort
FENCE_WAIT_S = 1.0  # release_prepared: the longest wait for a fence in flight
BATCH_BYTES = 32 << 20  # content one task holds in memory (beyond its first FlowFile)
# A refused record may be refused with the others of its broker batch (a record over
# the topic's size limit fails the whole ProduceRequest batch): those are tried again
# in halves until each refusal is a record's own. At most this many Kafka transactions
# (or rounds of sends) a task; what is left undecided goes back to its queue.
MAX_ROUNDS = 20
_TOPIC = r"[A-Za-z0-9._\-]{1,249}"


class PublishKafka(Processor):
    type_name = "PublishKafka"
    description = (
        "Sends each FlowFile's content as one Kafka record, exactly once: one Kafka transaction a batch, with a "
        "progress record naming its FlowFiles, committed before the session. With a record reader and writer "
        "(record mode), each record of a FlowFile is one message."
    )
    properties = CONNECTION_PROPERTIES + (
        PropertyDescriptor("topic", "expression", required=True, description="the topic of each FlowFile's record"),
        PropertyDescriptor(
            "key",
            "expression",
            description=f"the record's key (empty: none); unset, the {KEY_ATTRIBUTE} attribute when present",
        ),
        PropertyDescriptor(
            "partition",
            "expression",
            description="the record's partition number (unset or empty: Kafka's partitioner chooses by key)",
        ),
        PropertyDescriptor(
            "message_demarcator",
            "string",
            description="when set, the content is split on this (escapes such as \\n allowed) and each piece is one "
            "record, all in the FlowFile's transaction; unset, the whole content is one record",
        ),
        *PUBLISH_PROPERTIES,
        PropertyDescriptor(
            "message_key_field",
            "string",
            description="record mode: the field of each record whose value is its message's key (unset: the key "
            "property's, for every record)",
        ),
        PropertyDescriptor(
            "attributes_as_headers", "regex", description="attributes whose names match become the record's headers"
        ),
        PropertyDescriptor(
            "delivery_guarantee",
            "choice",
            default=EXACTLY_ONCE,
            choices=(EXACTLY_ONCE, AT_LEAST_ONCE),
            description="exactly_once: a Kafka transaction a batch, with a progress record; at_least_once: an "
            "idempotent producer, and a crash before the WAL commit sends the batch again",
        ),
        PropertyDescriptor(
            "transactional_id_prefix",
            "string",
            default="custody",
            description="the transactional id is <prefix>-<shard id>-<processor id>: two clusters that publish "
            "through the same brokers need two prefixes",
        ),
        PropertyDescriptor(
            "progress_topic",
            "string",
            default="custody-sink-progress",
            description="the topic of the progress records (compacted; created when missing, with 16 partitions)",
        ),
        PropertyDescriptor("batch_size", "integer", default=500, minimum=1, maximum=10_000),
        PropertyDescriptor(
            "transaction_timeout",
            "duration",
            default=60.0,
            minimum=1.0,
            maximum=900.0,
            description="Kafka's transaction.timeout.ms: longer than a batch takes to send (its records must be "
            "acknowledged within half of it); at most the brokers' transaction.max.timeout.ms",
        ),
    )
    relationships = ("success", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        problems = validate_connection(properties) + validate_record_mode(properties, key_field="message_key_field")
        if properties.get("delivery_guarantee") == EXACTLY_ONCE:
            if not properties.get("transactional_id_prefix"):
                problems.append(("transactional_id_prefix", "required with delivery_guarantee exactly_once"))
            if not re.fullmatch(_TOPIC, properties.get("progress_topic") or ""):
                problems.append(("progress_topic", "not a Kafka topic name (letters, digits, '.', '_', '-')"))
        return problems

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._lock = threading.Lock()
        self._producer: SinkProducer | None = None
        self._pending = progress.PendingDeliveries()
        self._outage = False
        # (transactional id, producer, the ids read back), made ready for a shard being adopted.
        self._prepared: Future[tuple[str, SinkProducer, frozenset[str]]] | None = None
        self._taken: Future[tuple[str, SinkProducer, frozenset[str]]] | None = None
        self._claimed = False
        self._preparing = threading.Lock()
        self._fencing = threading.Lock()  # held by `prepare_adopted` while it fences
        self._client = threading.Lock()  # held while the producer is used (the lock plan above)
        # The idle look (its thread, its stop), the last task's admission check, and the
        # producer and outage count whose hanging transactions it last finished.
        self._idle: tuple[threading.Thread, threading.Event] | None = None
        self._admit: Callable[[], None] | None = None
        self._looked: tuple[SinkProducer | None, int] = (None, 0)

    def on_stopped(self, context: ProcessContext) -> None:
        looking = self._idle
        if looking is not None:  # no look begins while this waits for a task
            looking[1].set()
        with self._lock, self._client:
            if self._idle is not None:  # the one a task started meanwhile, too
                self._idle[1].set()
            self._idle, self._admit, self._looked = None, None, (None, 0)
            producer, self._producer = self._producer, None
            if producer is not None:
                producer.close(CLOSE_WAIT_S)
            with self._preparing:
                self._claimed, self._taken = False, None
        self.release_prepared()

    def prepare_adopted(self, context: ProcessContext, shard_id: str, admit: Callable[[], None]) -> None:
        if context["delivery_guarantee"] != EXACTLY_ONCE:
            return
        prepared: Future[tuple[str, SinkProducer, frozenset[str]]] = Future()
        with self._preparing:
            if self._claimed or self._prepared is not None:
                return
            self._prepared = prepared
        transactional_id = _transactional_id(context, shard_id, self.id)

        def admitted() -> None:  # its fences: never from a node deposed, nor once released
            admit()
            with self._preparing:  # still made ready, or taken by the task waiting for it
                if prepared is not self._prepared and prepared is not self._taken:
                    raise NotAdmitted(f"{self.id}: the producer made ready for shard {shard_id} was given up")

        try:
            made = transactional_producer(context, transactional_id, admitted, self._fencing)
            prepared.set_result((transactional_id, *made))
        except BaseException as error:  # noqa: BLE001 - the first task makes its own
            context.logger.info(
                "%s: the producer for shard %s was not made ready (its first task makes one): %s",
                self.id,
                shard_id,
                str(error).splitlines()[0][:300] if str(error) else type(error).__name__,
            )
            prepared.set_exception(error)

    def release_prepared(self) -> None:
        with self._preparing:
            prepared, self._prepared = self._prepared, None
        if prepared is not None:
            # A fence in flight ends first (none starts after: `admitted`), waited for a
            # moment only: a node stopping or dead must not wait on a broker that does not
            # answer, and a late fence costs the runtime's producer, never a record.
            if self._fencing.acquire(timeout=FENCE_WAIT_S):
                self._fencing.release()
            else:
                log.info("%s: a fence of the producer given up is still in flight after %.0f s", self.id, FENCE_WAIT_S)
            prepared.add_done_callback(_close_prepared)

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        run_alone(self._lock, context, lambda: self._publish_holding_client(context, session))

    def _publish_holding_client(self, context: ProcessContext, session: ProcessSession) -> None:
        with self._client:
            self._publish(context, session)

    # -- one task ---------------------------------------------------------------------

    def _publish(self, context: ProcessContext, session: ProcessSession) -> None:
        batch = _poll(session, context["batch_size"])
        if not batch:
            return
        exactly = context["delivery_guarantee"] == EXACTLY_ONCE
        steps, earlier = Steps(), self._producer
        try:
            producer = self._producer_for(context, session, exactly)
        except Undelivered as undelivered:
            self._give_up(context, session, undelivered)
            return
        except NotAdmitted:
            self._not_admitted(context, session)
            return
        steps.done("producer")
        if producer.transactional_id is not None:
            self._admit = session.check_admitted  # the idle look's: never for a node deposed
            if self._idle is None:
                stop = threading.Event()
                self._idle = (idle.watch(self.id, self._client, stop, lambda: self._look_while_idle(context)), stop)
        uri = f"kafka://{context['bootstrap_servers'].split(',')[0].strip()}"
        before = []
        if exactly:
            if len(batch) == session.queued():
                self._pending.keep_only(f.id for f in batch)
            before = [f for f in batch if f.id in self._pending]
            for flowfile in before:
                session.send(
                    flowfile,
                    _transit_uri(context, uri, flowfile),
                    details=f"delivered before, by a committed Kafka transaction of {producer.transactional_id}; "
                    "not sent again",
                )
                session.transfer(flowfile, "success")
        failures = ExpressionFailures(self.id, context, session, to_failure=True)
        unreadable = ContentFailures(self.id, context, session)
        refusals = Refusals(self.id, context, session, ERROR_ATTRIBUTE)
        records = []
        broken: list[tuple] = []  # (FlowFile, RecordError): record mode's records that cannot be read or written
        routed = {f.id for f in before}
        session.prefetch(f for f in batch if f.id not in routed)
        for flowfile in batch:
            if flowfile.id in routed:
                continue
            record = _record(context, session, flowfile, failures, unreadable, refusals, broken)
            if record is not None:
                records.append(record)
        for flowfile, error in broken:
            context.limited_log.warning("records", "%s: %s goes to failure: %s", self.id, flowfile.id, error)
            session.transfer(session.put_all_attributes(flowfile, error.attributes()), "failure")
        steps.done("content")
        try:
            delivered, refused, undecided = self._deliver(session, producer, records)
        except Undelivered as undelivered:
            self._give_up(context, session, undelivered)
            return
        except NotAdmitted:
            self._not_admitted(context, session)
            return
        for record in delivered:
            session.send(record.flowfile, f"{uri}/{record.topic}")
            session.transfer(record.flowfile, "success")
        for record, why in refused:
            refusals.refuse(record.flowfile, why)
        for record in undecided:
            session.transfer(record.flowfile)  # back to its queue, for the next task
        failures.log()
        unreadable.log()
        refusals.log()
        if self._outage:
            self._outage = False
            context.logger.warning("%s: Kafka takes records again", self.id)
        steps.done("Kafka transaction" if producer.transactional_id is not None else "Kafka send")
        self._commit(session, [f.id for f in before] + [r.flowfile.id for r in delivered])
        steps.done("WAL commit")
        if producer is not earlier and producer.transactional_id is not None:
            # A new producer's first task (an adopted shard's is its first record out):
            # where its time went, so that a drill's resume is explained by the log.
            context.logger.info(
                "%s: the first task of %s (%d FlowFiles) took %.2f s: %s",
                self.id,
                producer.transactional_id,
                len(batch),
                steps.total(),
                steps.said(),
            )

    def _deliver(self, session: ProcessSession, producer: SinkProducer, records: list[Record]):
        """Send `records`, in as few rounds (transactions) as refusals allow: the
        delivered records, the refused ones with the brokers' reason, and those left
        undecided after `MAX_ROUNDS`. Raises `Undelivered`."""
        groups = deque([(records, False)] if records else [])  # (records, tried once after an abort)
        delivered: list[Record] = []
        refused: list[tuple[Record, str]] = []
        rounds = 0
        while groups and rounds < MAX_ROUNDS:
            group, retried = groups.popleft()
            rounds += 1
            ids = [record.flowfile.id for record in group]
            if producer.transactional_id is not None:
                try:
                    marker = progress.pack(self._pending.record_for(ids))
                except progress.ProgressRecordError as error:
                    raise Undelivered(str(error), discard=False) from None
                try:
                    refusals = producer.transaction(session, group, marker)
                except Undelivered as failure:
                    # The transaction after one a refusal aborted fails too: librdkafka
                    # purges its records while it bumps the producer's epoch. Once more.
                    if not failure.aborted or retried:
                        raise
                    groups.appendleft((group, True))
                    continue
                if not refusals:
                    self._pending.kafka_committed(ids)
            else:
                refusals = producer.send(group)
            again, sent, failed = split_refusals(
                len(group), refusals, transactional=producer.transactional_id is not None
            )
            groups.extend(([group[i] for i in indexes], False) for indexes in again)
            delivered += [group[i] for i in sent]
            refused += [(group[i], reason(refusals[i].error)) for i in failed]
        return delivered, refused, [record for group, _ in groups for record in group]

    def _commit(self, session: ProcessSession, ids: list[str]) -> None:
        """Commit the session; once the WAL holds it, its FlowFiles are no longer pending.
        A failed commit (storage down) leaves them pending, and is raised."""
        failed: list[BaseException] = []
        session.commit_async(lambda: self._pending.wal_committed(ids), failed.append)
        if failed:
            raise failed[0]

    def _give_up(self, context: ProcessContext, session: ProcessSession, undelivered: Undelivered) -> None:
        """Nothing of this task was delivered for sure: roll back (the FlowFiles stay
        queued, not penalized), yield, and say so: at once when the outage begins, then
        at most once a minute while it lasts (the reason may change: a broker down, then
        a progress topic that cannot be read back)."""
        session.rollback()
        if undelivered.discard and self._producer is not None:
            self._producer.discard()
            self._producer = None
        context.yield_()
        if undelivered.fenced:
            context.limited_log.error(f"{self.id}:fenced", "%s: %s", self.id, undelivered)
        else:
            self._outage = True
            context.limited_log.warning(
                f"{self.id}:outage",
                "%s: %s; the session was rolled back, nothing is lost, the FlowFiles stay queued, and it is retried",
                self.id,
                undelivered,
            )

    def _not_admitted(self, context: ProcessContext, session: ProcessSession) -> None:
        """The commit gate refused before a Kafka commit (`check_admitted`): the node was
        deposed or its storage is down, and the transaction was aborted, so nothing of
        this task is visible. A producer whose abort failed (a newer owner's producer
        fenced it) is dropped; the FlowFiles stay queued for whoever owns the shard."""
        session.rollback()
        producer = self._producer
        aborted = "its Kafka transaction was aborted"
        if producer is not None and producer.in_transaction:
            aborted = f"its Kafka transaction's abort failed ({producer.abort_failure})"
            producer.discard()
            self._producer = None
        context.yield_()
        context.limited_log.warning(
            f"{self.id}:not-admitted",
            "%s: this node may not commit for shard %s now; %s and the session rolled back: nothing of it is "
            "visible to read_committed consumers, nothing is lost",
            self.id,
            session.shard_id,
            aborted,
        )

    def _look_while_idle(self, context: ProcessContext) -> None:
        """Holding `_client`, no task running: serve the idle producer's callbacks and,
        after an outage it has not been looked at for, finish its hanging transactions."""
        producer, admit = self._producer, self._admit
        if producer is None or producer.transactional_id is None or producer.in_transaction or admit is None:
            return
        producer.producer.poll(0)
        outages = producer.errors.outages
        if outages and self._looked != (producer, outages) and finish_idle_hanging(context, producer, admit):
            self._looked = (producer, outages)

    # -- the producer ------------------------------------------------------------------

    def _producer_for(self, context: ProcessContext, session: ProcessSession, exactly: bool) -> SinkProducer:
        """The task's producer: a new one after a failure, the first task, or a new
        transactional id (the one made ready for it, `prepare_adopted`, if any). A new
        transactional producer fences the earlier ones with its id, then reads the
        pending ids back from the progress topic."""
        transactional_id = _transactional_id(context, session.shard_id, self.id) if exactly else None
        current = self._producer
        if current is not None and current.transactional_id == transactional_id:
            return current
        if current is not None:
            current.close(CLOSE_WAIT_S)
            self._producer = None
        with self._preparing:
            prepared, self._prepared = self._prepared, None
            self._taken, self._claimed = prepared, True
        if prepared is not None:
            try:  # its fences go on: this task is who it makes the producer for
                made_for, producer, ids = prepared.result()
            except BaseException:  # noqa: BLE001 - it failed (`prepare_adopted` logged why): made again below
                pass
            else:
                if made_for == transactional_id:
                    self._pending.recovered(ids)
                    self._producer = producer
                    return producer
                producer.close(CLOSE_WAIT_S)
        if transactional_id is None:
            self._producer = SinkProducer(context, None)
            return self._producer
        # Its init_transactions fences whoever has the id: never from a node deposed.
        producer, ids = transactional_producer(context, transactional_id, session.check_admitted)
        self._pending.recovered(ids)
        self._producer = producer
        return producer


def _transactional_id(context: ProcessContext, shard_id: str, processor_id: str) -> str:
    """Derived from the cluster's prefix and the shard, stable across the shard's owners."""
    return f"{context['transactional_id_prefix']}-{shard_id}-{processor_id}"


def _close_prepared(prepared: Future) -> None:
    if prepared.exception() is None:
        prepared.result()[1].close(CLOSE_WAIT_S)


def _poll(session: ProcessSession, count: int) -> list:
    """Up to `count` FlowFiles, fewer when their content passes `BATCH_BYTES` (each
    record is held in memory until the brokers acknowledge it)."""
    batch: list = []
    size = 0
    while len(batch) < count and size < BATCH_BYTES:
        polled = session.get_batch(min(count - len(batch), 100))
        if not polled:
            break
        batch += polled
        size += sum(flowfile.size for flowfile in polled)
    return batch


def _record(context: ProcessContext, session: ProcessSession, flowfile, failures, unreadable, refusals, broken):
    """The record of `flowfile`; None when it was set aside (an expression that failed,
    unreadable content, a partition that is no number, content too large, records that
    cannot be read or written: those in `broken`, with their error)."""
    expressions = {name: context[name] for name in ("topic", "key", "partition") if context.get(name) is not None}
    try:
        values = evaluate_all(expressions, flowfile)
    except PropertyFailed as failed:
        failures.set_aside(flowfile, failed.prop, failed.error)
        return None
    topic = values["topic"]
    if not topic:
        refusals.refuse(flowfile, "the topic expression gives an empty topic name")
        return None
    key = values["key"] if "key" in values else flowfile.attributes.get(KEY_ATTRIBUTE)
    partition = None
    if values.get("partition"):
        text = values["partition"].strip()
        if not (text.isascii() and text.isdigit()):
            refusals.refuse(flowfile, f"_INVALID_ARG: partition {text[:100]!r} is not a partition number")
            return None
        partition = int(text)
    demarcator = context.get("message_demarcator")
    reader = context.get("record_reader")
    if not demarcator and reader is None and flowfile.size > progress.MAX_RECORD_BYTES:
        refusals.refuse(
            flowfile,
            f"MSG_SIZE_TOO_LARGE: the content's {flowfile.size} bytes are more than a record may hold "
            f"(message.max.bytes {progress.MAX_RECORD_BYTES})",
        )
        return None
    keys = None
    try:
        if reader is not None:
            writer, key_field = context["record_writer"], context.get("message_key_field")
            pieces, keys = to_publish(session, flowfile, reader, writer, key_field)
        else:
            value = session.read_bytes(flowfile)
            pieces = split_records(value, decode_demarcator(demarcator)) if demarcator else [value]
    except UnreadableContent as error:
        unreadable.set_aside(flowfile, error)
        return None
    except RecordError as error:
        broken.append((flowfile, error))
        return None
    pattern = context.get("attributes_as_headers")
    headers = []
    if pattern is not None:
        headers = [
            (name, text.encode("utf-8")) for name, text in flowfile.attributes.items() if pattern.fullmatch(name)
        ]
    return Record(flowfile, topic, key.encode("utf-8") if key else None, partition, headers, pieces, keys)


def _transit_uri(context: ProcessContext, uri: str, flowfile) -> str:
    try:
        return f"{uri}/{context['topic'].evaluate(flowfile)}"
    except ExpressionError:  # only the provenance event's address: the topic is not known
        return uri
