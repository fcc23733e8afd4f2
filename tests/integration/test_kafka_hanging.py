"""Hanging transactions on the real broker: a transaction its coordinator decided
while a partition it wrote to never received the marker (what a single broker
restarted after a SIGKILL leaves when it drops markers as "likely deleted"). Made on
purpose (`kafka_hanging.leave_open`), then finished by `hanging.settle` with the
coordinator's decision, and by PublishKafka before its new producer reads its progress
back: without that, the read back waits at the open transaction until it gives up,
for good, and read_committed consumers of the output topic stop at it."""

from __future__ import annotations

import functools
import logging
import time
import uuid

import pytest

from cluster.drills.checker import check_delivery
from cluster.services.process import wait_until
from flow.processors.kafka import hanging, wire
from flow.processors.kafka.delivery import create_progress_topic
from flow.processors.kafka.progress import key, pack, partition

from .kafka_hanging import leave_open
from .kafka_helpers import in_transaction, new_topic, read_records, transactional_producer
from .test_flow_sources import Node
from .test_kafka_publish import PUBLISH, QUEUES, delivered, publishers, queued, seed, trigger  # noqa: F401
from .test_kafka_security import client_config

pytestmark = [pytest.mark.kafka]


def open_transactions(broker, topic: str, place: int = 0) -> list[wire.ActiveProducer]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with wire.Connection(host, int(port), None, 30) as connection:
        ask = functools.partial(wire.describe_producers, connection, {topic: [place]})
        return [p for p in wire.retried(ask, time.monotonic() + 30) if p.transaction_start >= 0]


def stable_offset(broker, topic: str) -> int:
    """Partition 0's last stable offset: where read_committed readers stop."""
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": "lso", "isolation.level": "read_committed"}
    )
    try:
        return reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)[1]
    finally:
        reader.close()


@pytest.mark.parametrize("commit", [True, False], ids=["committed", "aborted"])
def test_a_partition_left_open_gets_the_marker_of_its_coordinators_decision(kafka_broker, commit):
    other, left = new_topic(kafka_broker), new_topic(kafka_broker)
    transactional_id = f"hang-{uuid.uuid4().hex[:8]}"
    producer = transactional_producer(kafka_broker, transactional_id)
    in_transaction(producer, other, [b"decided"], commit=commit)
    state = leave_open(kafka_broker, transactional_id, left, 0, [(b"k", b"one"), (None, b"two")])
    assert stable_offset(kafka_broker, left) == 0  # the open transaction holds read_committed readers back
    [held] = open_transactions(kafka_broker, left)
    assert (held.producer_id, held.producer_epoch) == (state.producer_id, state.producer_epoch)

    settled = hanging.settle({"bootstrap.servers": kafka_broker.bootstrap_servers}, transactional_id, [left], 30)

    assert settled.failed == () and settled.skipped is None
    assert [(m.topic, m.partition, m.commit) for m in settled.written] == [(left, 0, commit)]
    assert open_transactions(kafka_broker, left) == []
    assert [m.value() for m in read_records(kafka_broker, left)] == ([b"one", b"two"] if commit else [])
    assert [m.value() for m in read_records(kafka_broker, left, "read_uncommitted")] == [b"one", b"two"]
    # The decided transaction's own partition is as its producer left it.
    assert [m.value() for m in read_records(kafka_broker, other)] == ([b"decided"] if commit else [])


def test_nothing_is_written_while_the_id_has_a_transaction_in_progress(kafka_broker):
    other, left = new_topic(kafka_broker), new_topic(kafka_broker)
    transactional_id = f"hang-{uuid.uuid4().hex[:8]}"
    producer = transactional_producer(kafka_broker, transactional_id)
    in_transaction(producer, other, [b"first"])
    leave_open(kafka_broker, transactional_id, left, 0, [(None, b"open")])
    producer.begin_transaction()
    producer.produce(other, b"second")
    producer.flush(30)  # the coordinator now holds the id Ongoing: its decision is not known yet

    settled = hanging.settle({"bootstrap.servers": kafka_broker.bootstrap_servers}, transactional_id, [left], 30)

    assert settled.written == () and settled.skipped == "its coordinator's state is Ongoing"
    assert len(open_transactions(kafka_broker, left)) == 1
    producer.abort_transaction(30)


@pytest.mark.parametrize("commit", [True, False], ids=["committed", "aborted"])
def test_publishkafka_finishes_its_own_hanging_transaction_before_it_reads_its_progress(
    kafka_broker,
    tmp_path,
    publishers,  # noqa: F811 - the fixture's value
    caplog,
    commit,
):
    """The shape a broker's restart leaves: the last transaction of the publisher's
    transactional id, decided at its coordinator, open on the output topic and on the
    id's progress partition, its progress record naming three of six queued FlowFiles.
    A new publisher delivers each of the six once: committed, the three are routed to
    success unsent; aborted, they are sent again."""
    topic, scratch = new_topic(kafka_broker), new_topic(kafka_broker)
    node = Node(tmp_path, QUEUES)
    sent = [f"h-{n}" for n in range(6)]
    seed(node, sent, lambda n: {"item": sent[n]})
    publish, context = publishers(kafka_broker, topic)
    transactional_id = f"{publish.configured['transactional_id_prefix']}-{node.shard.id}-{PUBLISH}"
    progress_topic = publish.configured["progress_topic"]
    place = partition(
        transactional_id, create_progress_topic({"bootstrap.servers": kafka_broker.bootstrap_servers}, progress_topic)
    )
    in_flight = queued(node, "in")[:3]
    producer = transactional_producer(kafka_broker, transactional_id)
    in_transaction(producer, scratch, [b"earlier"], commit=commit)
    del producer
    leave_open(kafka_broker, transactional_id, topic, 0, [(None, f.attributes["item"].encode()) for f in in_flight])
    leave_open(
        kafka_broker, transactional_id, progress_topic, place, [(key(transactional_id), pack(f.id for f in in_flight))]
    )

    with caplog.at_level(logging.WARNING):
        trigger(node, publish, context)

    assert node.queues["in"].count == 0 and len(queued(node, "ok")) == 6
    report = check_delivery(sent, delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    expected = sent if commit else sent + [f.attributes["item"] for f in in_flight]
    assert sorted(delivered(kafka_broker, topic, "read_uncommitted")) == sorted(expected)
    finished = [r.getMessage() for r in caplog.records if "hanging transaction" in r.getMessage()]
    assert len(finished) == 2 and all(("COMMIT" if commit else "ABORT") in line for line in finished), finished


def test_publishkafka_finishes_another_ids_hanging_transaction_on_the_progress_partition_they_share(
    kafka_broker,
    tmp_path,
    publishers,  # noqa: F811 - the fixture's value
    caplog,
):
    """The shape a broker's restart leaves when the producer whose commit it was had
    nothing more to send (its shard drained): its transaction, committed at its
    coordinator, open for good on the progress partition another publisher reads back.
    That publisher finishes it with the coordinator's decision and delivers; before, its
    read back waited at it for the transaction timeout, failed, and began again, for good."""
    topic, scratch = new_topic(kafka_broker), new_topic(kafka_broker)
    node = Node(tmp_path, QUEUES)
    sent = [f"o-{n}" for n in range(4)]
    seed(node, sent)
    publish, context = publishers(kafka_broker, topic)
    transactional_id = f"{publish.configured['transactional_id_prefix']}-{node.shard.id}-{PUBLISH}"
    progress_topic = publish.configured["progress_topic"]
    partitions = create_progress_topic({"bootstrap.servers": kafka_broker.bootstrap_servers}, progress_topic)
    place = partition(transactional_id, partitions)
    idle = next(t for t in (f"idle-{uuid.uuid4().hex[:8]}" for _ in range(10_000)) if partition(t, partitions) == place)
    producer = transactional_producer(kafka_broker, idle)
    in_transaction(producer, scratch, [b"its last"], commit=True)  # its coordinator: CompleteCommit
    state = leave_open(kafka_broker, idle, progress_topic, place, [(key(idle), pack(["a-flowfile-it-sent"]))])
    assert [p.producer_id for p in open_transactions(kafka_broker, progress_topic, place)] == [state.producer_id]

    with caplog.at_level(logging.WARNING):
        trigger(node, publish, context)

    assert node.queues["in"].count == 0 and len(queued(node, "ok")) == 4
    report = check_delivery(sent, delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    assert open_transactions(kafka_broker, progress_topic, place) == []
    finished = [r.getMessage() for r in caplog.records if "hanging transaction" in r.getMessage()]
    assert len(finished) == 1 and "another transactional id" in finished[0] and "COMMIT" in finished[0], finished
    # The idle id's committed progress record is now readable, as its coordinator decided.
    progress_keys = [m.key() for m in read_records(kafka_broker, progress_topic)]
    assert key(idle) in progress_keys


def delivered_then_left_open(broker, tmp_path, make, topic: str, first: list[str]):
    """A publisher that delivered `first`, then a transaction of its id (its producer's
    id and epoch) holding the record "left-open" open on `topic`[0], as a broker's
    restart leaves it. Returns the node, the publisher (made by `make`, the fixture), its context, its id."""
    node = Node(tmp_path, QUEUES)
    seed(node, first)
    publish, context = make(broker, topic)
    trigger(node, publish, context)
    assert sorted(delivered(broker, topic)) == sorted(first)
    transactional_id = f"{publish.configured['transactional_id_prefix']}-{node.shard.id}-{PUBLISH}"
    state = leave_open(broker, transactional_id, topic, 0, [(None, b"left-open")])
    assert [p.producer_id for p in open_transactions(broker, topic)] == [state.producer_id]
    return node, publish, context, transactional_id


def test_after_every_broker_was_down_no_transaction_joins_what_the_restart_left_open(
    kafka_broker,
    tmp_path,
    publishers,  # noqa: F811 - the fixture's value
    caplog,
):
    """After every broker was down, the producer that committed before begins nothing
    more: a partition may hold its last transaction open (the restart dropped the
    marker), and a new transaction's records there would join it and its end decide
    it. A new producer finishes it as decided first. The next batch here holds a record
    the broker refuses, so that its first transaction is aborted: one that had joined
    would have taken the committed record down with it."""
    topic = new_topic(kafka_broker, config={"max.message.bytes": "4096"})
    first, second = [f"a-{n}" for n in range(3)], [f"b-{n}" for n in range(4)]
    node, publish, context, _ = delivered_then_left_open(kafka_broker, tmp_path, publishers, topic, first)
    before = publish._producer
    kafka_broker.kill()
    kafka_broker.restart()
    seed(node, [*second, "big"], contents=[item.encode() for item in second] + [b"x" * 10_000])

    def drained() -> bool:
        trigger(node, publish, context)
        return node.queues["in"].count == 0

    with caplog.at_level(logging.WARNING):
        wait_until(drained, 90, "the publisher to deliver after the broker came back", interval=0.5)

    assert publish._producer is not before
    report = check_delivery([*first, *second, "left-open"], delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    assert len(queued(node, "failed", now_ms=1 << 62)) == 1
    assert "hanging transaction" in caplog.text and "wrote its COMMIT marker" in caplog.text


@pytest.mark.parametrize(
    "mechanism, protocol",
    [
        ("PLAIN", "SASL_SSL"),
        ("SCRAM-SHA-256", "SASL_SSL"),
        ("SCRAM-SHA-512", "SASL_SSL"),
        ("SCRAM-SHA-256", "SASL_PLAINTEXT"),
    ],
)
def test_the_markers_are_written_through_the_clients_sasl_and_tls(kafka_secure_broker, mechanism, protocol):
    broker = kafka_secure_broker
    other, left = new_topic(broker), new_topic(broker)
    transactional_id = f"hang-{uuid.uuid4().hex[:8]}"
    producer = transactional_producer(broker, transactional_id)
    in_transaction(producer, other, [b"decided"])
    leave_open(broker, transactional_id, left, 0, [(None, b"one")])

    settled = hanging.settle(client_config(broker, mechanism, protocol), transactional_id, [left], 30)

    assert [(m.topic, m.partition, m.commit) for m in settled.written] == [(left, 0, True)]
    assert [m.value() for m in read_records(broker, left)] == [b"one"]


def test_a_wrong_password_is_one_error_with_the_brokers_reason_and_no_password(kafka_secure_broker):
    config = client_config(kafka_secure_broker, "SCRAM-SHA-256", "SASL_PLAINTEXT")
    host, port = config["bootstrap.servers"].rsplit(":", 1)

    with pytest.raises(wire.WireError) as raised:
        hanging.brokers({**config, "sasl.password": "not-it"}, 10).connect(host, int(port))

    assert "SASL authentication" in str(raised.value) and "invalid credentials" in str(raised.value)
    assert "not-it" not in str(raised.value)
    hanging.brokers(config, 10).connect(host, int(port)).close()  # the right one is let in


def test_an_earlier_owners_open_transaction_is_aborted_and_its_producer_fenced_before_the_new_init(kafka_broker):
    """What an adopter meets: the dead owner's transaction open. With `fence_ms` the
    coordinator is made to abort it, and waited for, before librdkafka's
    init_transactions runs (which would otherwise be told to wait and ask again only
    500 ms later)."""
    from confluent_kafka import KafkaException

    topic = new_topic(kafka_broker)
    transactional_id = f"hang-{uuid.uuid4().hex[:8]}"
    dead = transactional_producer(kafka_broker, transactional_id)
    dead.begin_transaction()
    dead.produce(topic, b"never-committed")
    dead.flush(30)
    host, port = kafka_broker.bootstrap_servers.rsplit(":", 1)
    with wire.Connection(host, int(port), None, 30) as connection:
        before = wire.describe_transaction(connection, transactional_id)
    assert before is not None and before.state == "Ongoing"

    settled = hanging.settle(
        {"bootstrap.servers": kafka_broker.bootstrap_servers}, transactional_id, [topic], 30, fence_ms=10_000
    )

    with wire.Connection(host, int(port), None, 30) as connection:
        after = wire.describe_transaction(connection, transactional_id)
    assert settled.written == () and after is not None
    assert (after.state, after.producer_id) == ("CompleteAbort", before.producer_id)
    assert after.producer_epoch > before.producer_epoch
    assert open_transactions(kafka_broker, topic) == []
    assert read_records(kafka_broker, topic) == []  # read_committed reaches the end: nothing open, nothing visible
    transactional_producer(kafka_broker, transactional_id)  # the new producer's init goes through
    with pytest.raises(KafkaException):
        dead.commit_transaction(10)


def test_an_idle_publisher_finishes_its_own_transaction_that_a_brokers_restart_left_open(
    kafka_broker,
    tmp_path,
    publishers,  # noqa: F811 - the fixture's value
    caplog,
):
    """A publisher with nothing more to send runs no task: nothing served its producer's
    report that every broker was down, and a transaction that the restart left open on
    the output topic held every read_committed reader there until the next FlowFile
    came, which may be never. Its idle look finishes it as its coordinator decided, with
    nothing queued and no task run; the next FlowFiles still go out once each."""
    topic = new_topic(kafka_broker)
    first, second = [f"a-{n}" for n in range(3)], [f"b-{n}" for n in range(3)]
    node, publish, context, transactional_id = delivered_then_left_open(
        kafka_broker, tmp_path, publishers, topic, first
    )
    before = publish._producer

    with caplog.at_level(logging.WARNING):
        kafka_broker.kill()
        kafka_broker.restart()
        wait_until(
            lambda: open_transactions(kafka_broker, topic) == [],
            60,
            "the idle publisher to finish the transaction the restart left open",
            interval=0.2,
        )

    assert publish._producer is before and node.queues["in"].count == 0  # no task ran
    report = check_delivery([*first, "left-open"], delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    finished = [r.getMessage() for r in caplog.records if "hanging transaction" in r.getMessage()]
    assert len(finished) == 1 and transactional_id in finished[0] and "COMMIT" in finished[0], finished

    seed(node, second)

    def drained() -> bool:
        trigger(node, publish, context)
        return node.queues["in"].count == 0

    wait_until(drained, 60, "the publisher to deliver after the broker came back", interval=0.5)
    report = check_delivery([*first, "left-open", *second], delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    assert publish._idle is not None
    looking = publish._idle[0]
    publish.on_stopped(context)
    looking.join(5)
    assert not looking.is_alive()  # the look ends with the processor
