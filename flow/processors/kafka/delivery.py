"""How PublishKafka's records reach Kafka: its producer (transactional or idempotent),
a round of sends with the refusals it met, and the progress topic created and read back.

A round produces its records and waits until the brokers acknowledged or refused each
one, or until every broker is down, or until half the transaction timeout has passed
(librdkafka's `message.timeout.ms`). A refusal is a record's own (a partition the
topic lacks) or may be its batch's: Kafka refuses a whole ProduceRequest batch that
holds one record over the topic's `max.message.bytes`, so `split_refusals` sends such
records again in halves until one is refused alone. Every other failure is
`Undelivered`: the task rolls back, and `discard` says the producer cannot go on (a
commit whose outcome is unknown, a producer fenced): a later task makes a new one,
whose `init_transactions` settles what the old one left and whose read back of the
progress topic says which FlowFiles a committed transaction holds.

librdkafka's errors are sorted in `_codes`; confluent_kafka is imported only where a
client is made, as ConsumeKafka does.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ...errors import NotAdmitted
from ...processor import ProcessContext
from . import progress
from .connection import BrokerErrors, client_config, describe_settings

if TYPE_CHECKING:
    from ...flowfile import FlowFile

# In every log line that says a producer was fenced (drills look for it in a zombie's log).
PRODUCER_FENCED = "producer fenced"
BROKER_WAIT_S = 10.0  # init_transactions, a commit, an abort, creating a topic, a watermark
_STEP_S = 0.2  # how often a wait for deliveries looks at the brokers' state
_RESET_STEP_S = 0.001  # how often a read back looks whether its consumer's position was reset (`_last_record`)
_READ_STEP_S = 0.02  # how long reading the progress topic back waits for more at once: the end may be a
# transaction marker, which moves the position without a message to return
# How long the broker holds the progress reader's fetch when it has nothing to return
# (librdkafka's fetch.wait.max.ms, 500 by default): the read waits on the critical path of
# a takeover, and near the end of the window each fetch may return nothing.
_READ_FETCH_WAIT_MS = 10


class Record(NamedTuple):
    """What one FlowFile sends: one Kafka record per item of `values` (one, the pieces
    of its content between demarcators, or its records written one by one), all with its
    key (or each with its own of `keys`), partition and headers."""

    flowfile: FlowFile
    topic: str
    key: bytes | None
    partition: int | None
    headers: list[tuple[str, bytes]]
    values: list[bytes]
    keys: list[bytes | None] | None = None  # each value's own key, in place of `key` (record mode)


class Refusal(NamedTuple):
    """A record the brokers (or librdkafka, before sending it) refused. `batch_wide`:
    the refusal may be its broker batch's, not its own (`split_refusals`)."""

    error: Any  # confluent_kafka.KafkaError
    batch_wide: bool


def split_refusals(
    count: int, refusals: Mapping[int, Refusal], *, transactional: bool
) -> tuple[list[list[int]], list[int], list[int]]:
    """What follows a round that sent `count` records (by index) and had `refusals`:
    the groups to send again (each one round), the delivered records, the failed ones.
    A transactional round with a refusal was aborted, so its other records go again;
    records refused together by a batch-wide error go again in two halves, until one
    is refused alone, which is then its own refusal."""
    if not refusals:
        return [], list(range(count)), []
    failed = sorted(i for i, refusal in refusals.items() if not refusal.batch_wide)
    suspects = sorted(i for i, refusal in refusals.items() if refusal.batch_wide)
    others = [i for i in range(count) if i not in refusals]
    again = [others] if transactional and others else []
    if len(suspects) == 1:
        failed = sorted(failed + suspects)
    elif suspects:
        half = len(suspects) // 2
        again += [suspects[:half], suspects[half:]]
    return again, [] if transactional else others, failed


class Undelivered(Exception):
    """The task delivered nothing for sure (a broker unreachable, a transaction aborted,
    the producer fenced or failed): its session rolls back. `discard`: the producer's
    state is unknown or over, and a new one is made on a later task. `aborted`: the
    transaction failed and was aborted, and the producer goes on."""

    def __init__(self, reason: str, *, discard: bool, fenced: bool = False, aborted: bool = False):
        super().__init__(reason)
        self.discard = discard
        self.fenced = fenced
        self.aborted = aborted


class _ProducerErrors(BrokerErrors):
    """`BrokerErrors`, and whether librdkafka said that every broker is down: a wait for
    deliveries ends then, rather than at its deadline, and no transaction begins on
    that producer again."""

    def __init__(self) -> None:
        super().__init__()
        self.brokers_down = False
        self.outages = 0  # how many times librdkafka said so

    def __call__(self, error) -> None:
        super().__call__(error)
        if error.code() == _codes().all_brokers_down:
            self.brokers_down = True
            self.outages += 1


class Admission(Protocol):
    """What a transaction asks of its session before it commits: whether the node may
    still commit for the shard (`ProcessSession.check_admitted`: raises `NotAdmitted`)."""

    def check_admitted(self) -> None: ...


class SinkProducer:
    """One librdkafka producer and what it is doing: transactional (`transactional_id`)
    or idempotent. Used by the task that holds the processor's lock."""

    def __init__(self, context: ProcessContext, transactional_id: str | None):
        from confluent_kafka import Producer

        self.transactional_id = transactional_id
        self.errors = _ProducerErrors()
        timeout_ms = int(context["transaction_timeout"] * 1000)
        self.delivery_s = timeout_ms / 2000
        self.config = client_config(context.properties, context.logger)  # also the admin client's, the reader's
        self.settings = describe_settings(self.config)
        producer_config = dict(self.config, error_cb=self.errors)
        producer_config.update(
            {
                "acks": "all",
                "enable.idempotence": True,
                "message.max.bytes": progress.MAX_RECORD_BYTES,
                "message.timeout.ms": timeout_ms // 2,
                # Only a refusal is reported (`_send`): a delivered record costs no call
                # back into Python, and flush() still waits for every one.
                "delivery.report.only.error": True,
            }
        )
        if transactional_id is not None:
            producer_config.update({"transactional.id": transactional_id, "transaction.timeout.ms": timeout_ms})
        self.progress_topic = context.get("progress_topic")
        self.progress_key = progress.key(transactional_id or "")
        self.progress_partition = 0  # set once the topic's partitions are known (`progress.partition`)
        self.producer: Any = Producer(producer_config)
        self.in_transaction = False
        self.abort_failure: str | None = None  # why the last quiet abort failed (`_abort`)

    def init_transactions(self) -> None:
        """Fence every earlier producer with this transactional id (its open transaction
        is aborted, one it was committing is finished first).

        librdkafka asks for the transaction coordinator only through a broker it is
        already connected to: a producer just made, still connecting, finds none and
        asks again when its coordinator timer fires, 500 ms later. A metadata request
        first (one round trip) leaves it connected, and the init goes straight on."""
        try:
            self.producer.list_topics(timeout=BROKER_WAIT_S)
            self.producer.init_transactions(BROKER_WAIT_S)
        except _kafka_exception() as exception:
            raise self._failure("initializing transactions", exception) from None

    def transaction(self, session: Admission, records: list[Record], marker: bytes) -> dict[int, Refusal]:
        """`records` and the progress record `marker`, in one transaction, committed
        unless a record was refused (then aborted: the refusals are returned). Raises
        `Undelivered`, or `NotAdmitted` when the node may no longer commit for the shard."""
        producer = self.producer
        producer.poll(0)  # serves librdkafka's error callbacks: an outage since the last transaction
        if self.errors.brokers_down:
            # A broker restarted meanwhile may have dropped the last transaction's markers
            # (`hanging`): a new transaction would join what a partition holds open, and
            # its own end decide it. A new producer finishes that first, as decided.
            raise Undelivered(self.errors.explain(f"every broker was down ({self.settings})"), discard=True)
        try:
            producer.begin_transaction()
        except _kafka_exception() as exception:
            raise self._failure("beginning a transaction", exception) from None
        self.in_transaction = True
        try:
            refusals = self._send(records, (self.progress_topic, self.progress_partition, self.progress_key, marker))
            if refusals:
                self._abort()
                return refusals
            session.check_admitted()  # the side effect: not for a node deposed meanwhile
            try:
                producer.commit_transaction(BROKER_WAIT_S)
            except _kafka_exception() as exception:
                raise self._failure("committing the transaction", exception) from None
        except NotAdmitted:
            self._abort(quiet=True)
            raise
        except Undelivered as failure:
            if self.in_transaction and not failure.fenced and not self._abort(quiet=True):
                failure.discard = True
            raise
        self.in_transaction = False
        return {}

    def send(self, records: list[Record]) -> dict[int, Refusal]:
        """`records`, without a transaction; the refused ones."""
        return self._send(records, None)

    def _send(self, records: list[Record], marker: tuple | None) -> dict[int, Refusal]:
        """Produce `records` (and the progress record `marker`: topic, partition, key, value) and
        wait until the brokers acknowledged or refused each."""
        codes = _codes()
        producer = self.producer
        reports: dict[int, Any] = {}
        refusals: dict[int, Refusal] = {}
        deadline = time.monotonic() + self.delivery_s + 1.0

        def on_delivery(index: int) -> Callable:
            # Called for refused records only (`delivery.report.only.error`): a
            # FlowFile's first refusal is the one kept, unless it was only purged (by
            # an abort another refusal caused) and a refusal of its own follows.
            def report(error: Any, _message: Any) -> None:
                kept = reports.get(index)
                if kept is None or kept.code() in codes.purged:
                    reports[index] = error

            return report

        callbacks = [on_delivery(index) for index in range(len(records) + 1)]
        sends: list[tuple[Any, ...]] = [
            (index, r.topic, value, r.key if r.keys is None else r.keys[place], r.partition, r.headers)
            for index, r in enumerate(records)
            for place, value in enumerate(r.values)
        ]
        if marker is not None:
            topic, partition, key, value = marker
            sends.append((len(records), topic, value, key, partition, None))
        for index, topic, value, key, partition, headers in sends:
            arguments: dict[str, Any] = {"key": key, "headers": headers, "on_delivery": callbacks[index]}
            if partition is not None:
                arguments["partition"] = partition
            while True:
                try:
                    producer.produce(topic, value, **arguments)
                    break
                except BufferError:  # librdkafka's queue is full: let it drain
                    self._wait(lambda: producer.flush(_STEP_S) == 0, deadline)
                except _kafka_exception() as exception:
                    error = exception.args[0] if exception.args else None
                    if error is None or error.fatal() or index == len(records):
                        raise self._failure("producing a record", exception) from None
                    refusals[index] = Refusal(error, batch_wide=False)  # refused here: its own
                    break
        self._wait(lambda: producer.flush(_STEP_S) == 0, deadline)
        for index, error in sorted(reports.items()):
            if error is None or error.code() in codes.purged:
                # Purged by a transaction another record's refusal failed: sent again with the others.
                continue
            if index == len(records):
                raise Undelivered(
                    f"the progress record was refused by {self.progress_topic}: {reason(error)}",
                    discard=error.fatal(),
                )
            if error.fatal() or error.code() in codes.fenced:
                raise self._failure_of(error)
            if error.code() not in codes.refusals:
                raise Undelivered(self.errors.explain(f"a record was not delivered: {reason(error)}"), discard=True)
            refusals[index] = Refusal(error, batch_wide=error.code() in codes.batch_wide)
        return refusals

    def _wait(self, done: Callable[[], bool], deadline: float) -> None:
        """Until `done()` (which waits a little itself); raises `Undelivered` when every
        broker is down or at `deadline`."""
        while True:
            try:
                if done():
                    return
            except _kafka_exception() as exception:  # a fatal error, raised by poll/flush
                raise self._failure("waiting for deliveries", exception) from None
            if self.errors.brokers_down:
                raise Undelivered(self.errors.explain(f"every broker is down ({self.settings})"), discard=True)
            if time.monotonic() > deadline:
                raise Undelivered(
                    self.errors.explain(f"records not acknowledged within {self.delivery_s:g} s ({self.settings})"),
                    discard=True,
                )

    def _abort(self, quiet: bool = False) -> bool:
        """Abort the open transaction; False (when `quiet`, else `Undelivered`) if that
        failed: the producer is then discarded, and the next one's init_transactions
        aborts it."""
        try:
            self.producer.abort_transaction(BROKER_WAIT_S)
        except _kafka_exception() as exception:
            if not quiet:
                raise self._failure("aborting the transaction", exception) from None
            error = exception.args[0] if exception.args else None
            self.abort_failure = str(self._failure_of(error)) if hasattr(error, "code") else str(exception)
            return False
        self.in_transaction = False
        return True

    def _failure(self, what: str, exception: BaseException) -> Undelivered:
        error: Any = exception.args[0] if exception.args else None
        if not hasattr(error, "code"):
            return Undelivered(f"{what}: {exception}", discard=True)
        if error.txn_requires_abort() and not error.fatal():
            # The broker aborted it (its transaction timeout) or a send failed: abort and go on.
            try:
                self.producer.abort_transaction(BROKER_WAIT_S)
                self.in_transaction = False
                return Undelivered(f"{what}: {reason(error)}; the transaction was aborted", discard=False, aborted=True)
            except _kafka_exception():
                pass
        if error.code() in _codes().fenced:
            return self._failure_of(error)
        # Fatal, or an outcome unknown (a commit that timed out): a new producer's
        # init_transactions settles it, and the progress topic read back says which.
        return Undelivered(self.errors.explain(f"{what}: {reason(error)} ({self.settings})"), discard=True)

    def _failure_of(self, error) -> Undelivered:
        if error.code() in _codes().fenced:
            return Undelivered(
                f"{PRODUCER_FENCED} by another producer with transactional id {self.transactional_id}: this "
                f"shard has a new owner or another node uses the same prefix ({reason(error)})",
                discard=True,
                fenced=True,
            )
        return Undelivered(f"the producer failed: {reason(error)}", discard=True)

    def discard(self) -> None:
        """Drop a producer whose state is unknown, without waiting for the brokers: what
        it still holds is purged, and its open transaction is left to the next
        producer's init_transactions (or to the broker's transaction timeout)."""
        try:
            self.producer.purge()
            self.producer.poll(0)
        except _kafka_exception():
            pass
        self.producer = None

    def close(self, timeout: float) -> None:
        """Abort an open transaction and flush, each for at most `timeout`, then drop."""
        try:
            if self.in_transaction:
                self.producer.abort_transaction(timeout)
            self.producer.flush(timeout)
        except _kafka_exception():
            pass
        self.discard()


def reason(error) -> str:
    return f"{error.name()}: {error.str()}"


def log_end(
    settings: Mapping, topic: str, partitions: Iterable[int] = (0,), asker: Any = None
) -> dict[int, tuple[int, int]]:
    """Each partition's low and high watermarks (`settings`: a consumer's). Asked by a
    read_uncommitted client: a read_committed one is answered the last stable offset
    instead of the high watermark, which an open transaction holds back. `asker`: such
    a client already made (left open), else one is made for the question."""
    from confluent_kafka import Consumer, TopicPartition

    own = asker is None
    if own:
        asker = Consumer({**settings, "isolation.level": "read_uncommitted"})
    try:
        return {
            p: asker.get_watermark_offsets(TopicPartition(topic, p), timeout=BROKER_WAIT_S, cached=False)
            for p in partitions
        }
    finally:
        if own:
            asker.close()


class ProgressReader:
    """The two clients that read a transactional id's progress back: a read_committed
    consumer (the reader) and a read_uncommitted one (the log end's asker). Made when a
    new producer begins, before its fencing: a client's first connection costs a
    connect, an ApiVersions and a metadata round trip (0.3 s and more seen on a loaded
    broker), which then overlap the fencing instead of following it. `close()` ends
    both; a reader is used for one read back."""

    def __init__(self, config: Mapping, transactional_id: str) -> None:
        from confluent_kafka import Consumer

        self.settings = {
            **config,
            "group.id": f"custody-progress-{transactional_id}",  # never joined nor committed: assign only
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": _READ_FETCH_WAIT_MS,
        }
        self.reader = Consumer({**self.settings, "isolation.level": "read_committed"})
        try:
            self.asker = Consumer({**self.settings, "isolation.level": "read_uncommitted"})
        except BaseException:
            self.reader.close()
            raise

    def partitions(self, topic: str) -> int:
        """The topic's partition count as the reader's metadata says (0: no such topic
        yet, or its partitions not served). Raises `KafkaException`."""
        found = self.reader.list_topics(topic, timeout=BROKER_WAIT_S).topics.get(topic)
        return len(found.partitions) if found is not None and found.error is None else 0

    def close(self) -> None:
        self.reader.close()
        self.asker.close()


def create_progress_topic(config: Mapping, topic: str) -> int:
    """The progress topic's partition count; the topic is created when missing, with
    `progress.PARTITIONS` partitions, compacted (only each transactional id's last
    record matters), the brokers' default replication. Another creator winning the
    race is as good. Raises `Undelivered`."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(dict(config))
    wanted = NewTopic(topic, num_partitions=progress.PARTITIONS, config={"cleanup.policy": "compact"})
    deadline = time.monotonic() + BROKER_WAIT_S
    try:
        future = admin.create_topics([wanted])[topic]
        try:
            future.result(BROKER_WAIT_S)
        except KafkaException as exception:
            error = exception.args[0] if exception.args else None
            if getattr(error, "code", lambda: None)() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        while True:  # a topic just made may be missing from the metadata for a moment
            found = admin.list_topics(topic, timeout=BROKER_WAIT_S).topics.get(topic)
            if found is not None and found.error is None and found.partitions:
                return len(found.partitions)
            if time.monotonic() > deadline:
                why = found.error if found is not None else "not in the metadata"
                raise Undelivered(
                    f"the progress topic {topic} exists but its partitions cannot be read: {why}", discard=True
                )
            time.sleep(_READ_STEP_S)
    except Undelivered:
        raise
    except Exception as error:  # noqa: BLE001 - the broker's refusal, the future's timeout
        raise Undelivered(f"cannot create the progress topic {topic}: {error}", discard=True) from None


def read_back(
    config: Mapping,
    topic: str,
    transactional_id: str,
    transaction_timeout: float,
    partition: int = 0,
    clients: ProgressReader | None = None,
) -> frozenset[str]:
    """The ids of the last progress record of `transactional_id` in `topic` (empty
    when there is none), read_committed, from the end backwards (`progress.windows`),
    in `partition` (`progress.partition`), then, when that holds none and is not 0, in
    partition 0, where earlier releases wrote every record.

    The end is the partition's log end (its high watermark), not its last stable
    offset: producers share the partition, and another producer's open transaction (a
    dead node's, until its shard's adopter aborts it) keeps the last stable offset below
    records this transactional id committed after that transaction began. Reading only
    to it would find an older record of this id, and send again FlowFiles a later
    committed transaction holds. So the reader waits until such a transaction ends, at
    most `transaction_timeout` later. `clients`: those made ahead (`ProgressReader`),
    closed here; else made now. Raises `Undelivered`."""
    from confluent_kafka import KafkaException

    try:
        made = clients or ProgressReader(config, transactional_id)
    except KafkaException as exception:
        raise Undelivered(f"reading the progress topic {topic}: {exception}", discard=True) from None
    deadline = time.monotonic() + transaction_timeout + BROKER_WAIT_S
    try:
        places = sorted({partition, 0})
        watermarks = _retried(lambda: log_end(made.settings, topic, places, made.asker), BROKER_WAIT_S)
        key = progress.key(transactional_id)
        for place in dict.fromkeys((partition, 0)):
            found = _last_record(made.reader, topic, place, watermarks[place], key, deadline)
            if found is not None:
                try:
                    return progress.unpack(found.value(), f"{topic}[{place}]@{found.offset()}")
                except progress.ProgressRecordError as error:
                    raise Undelivered(
                        f"{error}: it says which FlowFiles a committed transaction holds, so nothing is sent "
                        "until it is readable",
                        discard=True,
                    ) from None
        return frozenset()
    except KafkaException as exception:
        raise Undelivered(f"reading the progress topic {topic}: {exception}", discard=True) from None
    finally:
        made.close()


def _retried(ask: Callable[[], Any], patience: float) -> Any:
    """`ask()`, asked again for `patience` seconds while the broker answers that a
    partition is not served yet (a topic just made: its partitions are unknown, then
    without a leader, for up to a second or two) or with an error it calls retriable."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + patience
    while True:
        try:
            return ask()
        except KafkaException as exception:
            error = exception.args[0] if exception.args else None
            waiting = error is not None and (error.retriable() or error.code() in _codes().not_served)
            if not waiting or time.monotonic() > deadline:
                raise
        time.sleep(_READ_STEP_S)


def _last_record(consumer, topic: str, partition: int, watermarks: tuple[int, int], key: bytes, deadline: float):
    """The last record with `key` in `partition` below its high watermark, read in
    windows from the end backwards; None when it holds none."""
    from confluent_kafka import TopicPartition

    low, high = watermarks

    def position() -> int:
        return consumer.position([TopicPartition(topic, partition)])[0].offset

    def in_time(end: int) -> None:
        if time.monotonic() > deadline:
            raise Undelivered(
                f"reading the progress topic {topic} (partition {partition}) back to offset {end} took "
                "longer than its transaction timeout",
                discard=True,
            )

    for start, end in progress.windows(low, high):
        found = None
        consumer.assign([TopicPartition(topic, partition, start)])
        # assign() resets the position on librdkafka's own thread, a moment later: until
        # then position() still says where the last window's read ended, past this
        # window's end, and the window would seem read with nothing consumed (an adopter
        # then found no progress record and sent the last batch again). Nothing is
        # consumed meanwhile, so once it is below the end it is this window's.
        while position() >= end:
            in_time(end)
            time.sleep(_RESET_STEP_S)
        while position() < end:
            in_time(end)
            for message in consumer.consume(num_messages=500, timeout=_READ_STEP_S):
                error: Any = message.error()
                if error is not None:
                    if error.code() == _codes().partition_eof:
                        continue
                    raise Undelivered(f"reading the progress topic {topic}: {error.str()}", discard=True)
                if (message.offset() or 0) < end and message.key() == key:
                    found = message
        if found is not None:
            return found
    return None


class _Codes(NamedTuple):
    refusals: frozenset  # a record's own refusal: it goes to failure
    batch_wide: frozenset  # ... that a broker gives each record of the batch
    fenced: frozenset
    purged: frozenset
    all_brokers_down: int
    partition_eof: int
    not_served: frozenset  # a partition not served yet: asked again


@functools.cache
def _codes() -> _Codes:
    """librdkafka's error codes as PublishKafka sorts them (confluent_kafka is imported
    only where a producer is made)."""
    from confluent_kafka import KafkaError as E

    batch_wide = frozenset({E.MSG_SIZE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_RECORD})
    own = {
        E.INVALID_MSG_SIZE,
        E.INVALID_TIMESTAMP,
        E._UNKNOWN_PARTITION,
        E._UNKNOWN_TOPIC,
        E.UNKNOWN_TOPIC_OR_PART,
        E.TOPIC_AUTHORIZATION_FAILED,
        E.TOPIC_EXCEPTION,
        E.POLICY_VIOLATION,
    }
    return _Codes(
        refusals=batch_wide | own,
        batch_wide=batch_wide,
        fenced=frozenset({E._FENCED, E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH}),
        purged=frozenset({E._PURGE_QUEUE, E._PURGE_INFLIGHT}),
        all_brokers_down=E._ALL_BROKERS_DOWN,
        partition_eof=E._PARTITION_EOF,
        not_served=frozenset(
            {E._UNKNOWN_PARTITION, E.UNKNOWN_TOPIC_OR_PART, E.NOT_LEADER_FOR_PARTITION, E.LEADER_NOT_AVAILABLE}
        ),
    )


def _kafka_exception() -> type[BaseException]:
    from confluent_kafka import KafkaException

    return KafkaException
