"""PublishKafka against the real broker, on real local repositories: records with
their keys, headers and partitions, each read once by a read_committed consumer;
the crash between the Kafka commit and the WAL commit, a fenced old owner, records
the broker refuses, and a broker that dies and comes back. Every test counts the
lost, duplicated and unexpected ids of the output topic (`check_delivery`)."""

from __future__ import annotations

import json
import logging
import shutil
import threading
import uuid

import pytest

from cluster.drills.checker import check_delivery
from cluster.services.process import wait_until
from flow.commit import CommitHooks
from flow.errors import CommitError, FlowDefinitionError, NotAdmitted
from flow.loading import parse_flow, standard_registry
from flow.processor import ProcessContext
from flow.processors.kafka.progress import PARTITIONS, key, partition, unpack
from flow.processors.kafka.publish import ERROR_ATTRIBUTE, PublishKafka
from flow.session import ProcessSession

from .kafka_helpers import new_topic, read_records
from .test_flow_sources import CrashAt, Node, SimulatedCrash

pytestmark = [pytest.mark.kafka]

PUBLISH = "publish"
QUEUES = ["in", "ok", "failed"]
NOW_MS = 1_000  # the sessions' clock: a FlowFile penalized now is not polled at it


@pytest.fixture
def publishers():
    """Makes configured PublishKafka instances, and stops them (closing their producers) after the test."""
    made = []

    def make(broker, topic: str, services=(), **properties):
        registry = standard_registry()
        registry.register(PublishKafka)
        configured = {
            "bootstrap_servers": broker.bootstrap_servers,
            "topic": topic,
            "transactional_id_prefix": f"test-{uuid.uuid4().hex[:8]}",
            "progress_topic": f"progress-{uuid.uuid4().hex[:8]}",
            "transaction_timeout": "10 s",
            **properties,
        }
        return again(configured, registry, services)

    def again(configured, registry=None, services=()):
        """Another instance with the same configuration (a new process, a new owner)."""
        if registry is None:
            registry = standard_registry()
            registry.register(PublishKafka)
        definition = parse_flow(
            {
                "services": [{"id": sid, "type": kind, "properties": props} for sid, kind, props in services],
                "processors": [
                    {
                        "id": PUBLISH,
                        "type": "PublishKafka",
                        "properties": configured,
                        "auto_terminate": list(PublishKafka.relationships),
                    }
                ],
            },
            registry=registry,
        )
        processor = PublishKafka(PUBLISH)
        context = ProcessContext(PUBLISH, definition.processors[PUBLISH].properties, {}, has_incoming=True)
        processor.configured = configured
        made.append((processor, context))
        return processor, context

    make.again = again
    yield make
    for processor, context in made:
        processor.on_stopped(context)


def seed(node: Node, items: list[str], attributes=None, contents=None) -> None:
    """FlowFiles into the queue "in", committed: each item its content (unless
    `contents` says), with `attributes(n)`."""
    session = ProcessSession(
        component_id="seed",
        component_type="Test",
        committer=node.committer,
        content=node.content,
        shard=node.shard,
        outgoing={"success": [node.queues["in"]]},
        clock_ms=lambda: NOW_MS,
    )
    flowfiles = [session.create(attributes=attributes(n) if attributes else {}) for n in range(len(items))]
    bodies = contents or [item.encode() for item in items]
    for flowfile in session.write_bytes_many(flowfiles, bodies):
        session.transfer(flowfile, "success")
    session.commit()


def trigger(node: Node, processor: PublishKafka, context: ProcessContext, gate=None) -> None:
    """One task, as the traditional engine runs it."""
    context.yielded = False
    session = ProcessSession(
        component_id=PUBLISH,
        component_type=PublishKafka.type_name,
        committer=node.committer,
        content=node.content,
        shard=node.shard,
        incoming=[node.queues["in"]],
        outgoing={"success": [node.queues["ok"]], "failure": [node.queues["failed"]]},
        clock_ms=lambda: NOW_MS,
        gate=gate,
    )
    processor.on_trigger(context, session)
    if not session.is_closed:
        session.commit() if session.touched else session.rollback()


def queued(node: Node, queue: str, now_ms: int = NOW_MS) -> list:
    """The FlowFiles of `queue` that a session polling at `now_ms` gets (not penalized then)."""
    flowfiles = node.queues[queue].poll(1 << 20, now_ms)[0]
    node.queues[queue].requeue(flowfiles)
    return flowfiles


def delivered(broker, topic: str, isolation: str = "read_committed") -> list[str]:
    return [message.value().decode() for message in read_records(broker, topic, isolation)]


def items(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{n}" for n in range(count)]


def test_records_carry_key_headers_and_partition_from_attributes_each_once(kafka_broker, tmp_path, publishers):
    topic = new_topic(kafka_broker, partitions=3)
    node = Node(tmp_path, QUEUES)
    sent = items("a", 12)
    seed(node, sent, lambda n: {"kafka.key": f"k{n}", "part": str(n % 3), "h.trace": f"t{n}", "other": "x"})
    publish, context = publishers(kafka_broker, topic, partition="${part}", attributes_as_headers=r"h\..*")
    trigger(node, publish, context)

    assert len(queued(node, "ok")) == 12 and node.queues["in"].count == 0
    records = read_records(kafka_broker, topic)
    report = check_delivery(sent, [record.value().decode() for record in records])
    assert report.ok, report.summary()
    for record in records:
        n = int(record.value().decode().split("-")[1])
        assert record.key() == f"k{n}".encode() and record.partition() == n % 3
        assert record.headers() == [("h.trace", f"t{n}".encode())]
    # The transaction wrote its progress record: the transactional id's, naming the batch.
    progress = read_records(kafka_broker, publish.configured["progress_topic"])
    transactional_id = f"{publish.configured['transactional_id_prefix']}-{node.shard.id}-{PUBLISH}"
    assert [record.key() for record in progress] == [key(transactional_id)]
    assert unpack(progress[-1].value(), "test") == {f.id for f in queued(node, "ok")}
    # ... in the id's own partition of the 16 of the topic PublishKafka created.
    assert [record.partition() for record in progress] == [partition(transactional_id, PARTITIONS)]


def crashed_between_the_commits(kafka_broker, tmp_path, publishers, topic: str, sent: list[str]):
    """`sent` published by a process that dies after the Kafka commit, before the WAL
    records the session: the node as a new process finds it, and the publisher's
    configuration."""
    node = Node(tmp_path, QUEUES, CrashAt("before_wal", PUBLISH))
    seed(node, sent)
    publish, context = publishers(kafka_broker, topic)
    with pytest.raises(SimulatedCrash):
        trigger(node, publish, context)
    node.crash()
    return Node(tmp_path, QUEUES), publish.configured


def test_records_committed_in_kafka_whose_wal_commit_never_happened_are_not_sent_again(
    kafka_broker, tmp_path, publishers
):
    topic = new_topic(kafka_broker)
    sent = items("b", 8)
    node, configured = crashed_between_the_commits(kafka_broker, tmp_path, publishers, topic, sent)
    # A new process: the WAL still queues all 8; a new producer reads the progress back.
    assert node.queues["in"].count == 8
    restarted, context = publishers.again(configured)
    trigger(node, restarted, context)
    assert node.queues["in"].count == 0 and len(queued(node, "ok")) == 8
    report = check_delivery(sent, delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    # Not even sent and aborted: the log holds each record once.
    assert sorted(delivered(kafka_broker, topic, "read_uncommitted")) == sorted(sent)


class StorageDownOnce(CommitHooks):
    """The first WAL write of the publisher fails (the node's storage is down)."""

    def __init__(self):
        self.failed = False

        def before_wal(component_id):
            if component_id == PUBLISH and not self.failed:
                self.failed = True
                raise OSError("the WAL's storage is unreachable")

        super().__init__(before_wal=before_wal)


def test_flowfiles_whose_wal_commit_failed_after_the_kafka_commit_are_routed_without_a_send(
    kafka_broker, tmp_path, publishers
):
    topic = new_topic(kafka_broker)
    sent = items("c", 5)
    node = Node(tmp_path, QUEUES, StorageDownOnce())
    seed(node, sent)
    publish, context = publishers(kafka_broker, topic)
    with pytest.raises(CommitError):
        trigger(node, publish, context)
    assert node.queues["in"].count == 5  # rolled back: queued again
    trigger(node, publish, context)
    assert node.queues["in"].count == 0 and len(queued(node, "ok")) == 5
    assert sorted(delivered(kafka_broker, topic, "read_uncommitted")) == sorted(sent)


class PausingGate:
    """A node's commit gate that, once armed, holds the task that asks it (the
    publisher, just before its Kafka commit) until released: a paused old owner."""

    def __init__(self):
        self.armed = False
        self.reached = threading.Event()
        self.release = threading.Event()

    def admit(self, component_id):
        if self.armed:
            self.reached.set()
            assert self.release.wait(60)

    def committed(self, component_id):
        pass

    def failed(self, component_id, error):
        pass


def held_at_commit(node: Node, publish: PublishKafka, context: ProcessContext, gate: PausingGate):
    """A task started on a thread of its own with `gate` armed: it stops just before its
    Kafka commit until the gate is released. The thread, and what the task raised."""
    gate.armed = True
    failures: list[BaseException] = []

    def task():
        try:
            trigger(node, publish, context, gate)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            failures.append(error)

    thread = threading.Thread(target=task)
    thread.start()
    return thread, failures


def paused_old_owner(kafka_broker, tmp_path, publishers, topic: str, first: list[str], second: list[str]):
    """An owner in `tmp_path / "old"` that delivered `first` and is held just before the
    Kafka commit of `second`: the node, its publisher and context, the gate, the task's
    thread and what it raised."""
    old = Node(tmp_path / "old", QUEUES)
    seed(old, first)
    gate = PausingGate()
    publish, context = publishers(kafka_broker, topic)
    trigger(old, publish, context, gate)  # its producer made, delivering as it should
    seed(old, second)
    task, failures = held_at_commit(old, publish, context, gate)
    assert gate.reached.wait(30), "the old owner never reached its Kafka commit"
    return old, publish, context, gate, task, failures


def test_a_paused_old_owner_is_fenced_and_the_new_owner_delivers_everything_once(
    kafka_broker, tmp_path, publishers, caplog
):
    topic = new_topic(kafka_broker)
    first, second = items("d", 4), items("e", 6)
    old, publish, context, gate, task, failures = paused_old_owner(
        kafka_broker, tmp_path, publishers, topic, first, second
    )
    # The new owner adopts the shard as the old one left it (its directory, copied).
    shutil.copytree(tmp_path / "old", tmp_path / "new")
    new = Node(tmp_path / "new", QUEUES)
    assert new.queues["in"].count == 6
    adopter, adopter_context = publishers.again(publish.configured)
    with caplog.at_level(logging.ERROR):
        trigger(new, adopter, adopter_context)
        assert new.queues["in"].count == 0
        gate.release.set()
        task.join(30)
    assert not task.is_alive() and not failures, failures
    assert context.yielded and old.queues["in"].count == 6  # the old owner rolled back
    transactional_id = f"{publish.configured['transactional_id_prefix']}-{old.shard.id}-{PUBLISH}"
    assert f"fenced by another producer with transactional id {transactional_id}" in caplog.text
    report = check_delivery(first + second, delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    # The old owner's records reached the log, in a transaction that was aborted.
    assert sorted(delivered(kafka_broker, topic, "read_uncommitted")) == sorted(first + second + second)


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_records_the_broker_refuses_go_to_failure_and_the_rest_of_the_batch_is_delivered(
    kafka_broker, tmp_path, publishers, guarantee
):
    topic = new_topic(kafka_broker, config={"max.message.bytes": "4096"})
    small = items("f", 7)
    node = Node(tmp_path, QUEUES)
    # Over the topic's limit (refused by the broker, with the records of its batch),
    # over the producer's (refused before it is read), and to a partition the topic lacks.
    refused = {b"x" * 10_000: "MSG_SIZE_TOO_LARGE", b"y" * 1_200_000: "MSG_SIZE_TOO_LARGE", b"z": "_UNKNOWN_PARTITION"}
    seed(
        node,
        small + ["big", "huge", "nowhere"],
        attributes=lambda n: {"part": "7"} if n == 9 else {},
        contents=[item.encode() for item in small] + list(refused),
    )
    publish, context = publishers(kafka_broker, topic, partition="${part}", delivery_guarantee=guarantee)
    trigger(node, publish, context)

    report = check_delivery(small, delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    assert queued(node, "failed") == []  # penalized
    failed = queued(node, "failed", now_ms=1 << 62)
    found = {node.content.read(f.content_claim)[:1]: f.attributes[ERROR_ATTRIBUTE] for f in failed}
    assert {content[:1]: error.split(":")[0] for content, error in refused.items()} == {
        first: error.split(":")[0] for first, error in found.items()
    }, found
    assert len(queued(node, "ok")) == 7 and node.queues["in"].count == 0


def test_a_dead_broker_keeps_the_flowfiles_queued_and_they_are_delivered_once_it_is_back(
    kafka_broker, tmp_path, publishers, caplog
):
    topic = new_topic(kafka_broker)
    before, during = items("g", 3), items("h", 5)
    node = Node(tmp_path, QUEUES)
    seed(node, before)
    publish, context = publishers(kafka_broker, topic)
    trigger(node, publish, context)
    # The broker is killed once the first transaction's commit markers are written (its
    # records readable, read_committed): this test is about an outage between
    # transactions. Killed between a commit and its markers, Kafka 4.4 restarted can
    # leave that transaction hanging for good (its coordinator, elected before the
    # partitions have a leader again, skips their markers: "Couldn't find leader
    # endpoint ... likely deleted"), and a new producer cannot read its progress back.
    # (`delivered` reads each partition to its high watermark: it waits for the markers.)
    assert sorted(delivered(kafka_broker, topic)) == sorted(before)
    assert delivered(kafka_broker, publish.configured["progress_topic"])
    seed(node, during)
    kafka_broker.kill()
    try:
        with caplog.at_level(logging.WARNING):
            trigger(node, publish, context)
        assert context.yielded
        assert len(queued(node, "in")) == 5  # queued, and not penalized
        assert caplog.text.count("nothing is lost, the FlowFiles stay queued") == 1
    finally:
        kafka_broker.restart()

    def drained() -> bool:
        trigger(node, publish, context)
        return node.queues["in"].count == 0

    with caplog.at_level(logging.WARNING):
        wait_until(drained, 90, "the publisher to deliver after the broker came back", interval=0.5)
    assert "Kafka takes records again" in caplog.text
    assert len(queued(node, "ok")) == 8 and queued(node, "failed") == []
    report = check_delivery(before + during, delivered(kafka_broker, topic))
    assert report.ok, report.summary()


def test_at_least_once_delivers_without_transactions_or_progress_records(kafka_broker, tmp_path, publishers):
    from confluent_kafka.admin import AdminClient

    topic = new_topic(kafka_broker)
    sent = items("i", 4)
    node = Node(tmp_path, QUEUES)
    seed(node, sent)
    publish, context = publishers(kafka_broker, topic, delivery_guarantee="at_least_once")
    trigger(node, publish, context)
    report = check_delivery(sent, delivered(kafka_broker, topic, "read_uncommitted"))
    assert report.ok, report.summary()
    assert len(queued(node, "ok")) == 4
    topics = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers}).list_topics(timeout=30).topics
    assert publish.configured["progress_topic"] not in topics


def test_a_demarcated_flowfile_is_one_record_a_piece_all_in_its_transaction(kafka_broker, tmp_path, publishers):
    topic = new_topic(kafka_broker)
    node = Node(tmp_path, QUEUES)
    lines = [items("d", 3), items("e", 2), []]
    seed(node, ["d", "e", "empty"], contents=[("\n".join(batch) + "\n").encode() if batch else b"" for batch in lines])
    publish, context = publishers(kafka_broker, topic, message_demarcator="\\n")
    trigger(node, publish, context)
    # Every FlowFile to success (the empty one sent no record); every line one record, once.
    assert len(queued(node, "ok")) == 3 and node.queues["in"].count == 0
    report = check_delivery(items("d", 3) + items("e", 2), delivered(kafka_broker, topic))
    assert report.ok, report.summary()


def test_a_transaction_the_broker_aborts_at_its_timeout_is_sent_again_in_a_new_one(
    kafka_broker, tmp_path, publishers, caplog
):
    topic = new_topic(kafka_broker)
    first, sent = items("s", 1), items("t", 5)
    node = Node(tmp_path, QUEUES)
    seed(node, first)
    gate = PausingGate()
    publish, context = publishers(kafka_broker, topic, transaction_timeout="1 s")
    trigger(node, publish, context, gate)  # its producer made and delivering
    seed(node, sent)
    task, failures = held_at_commit(node, publish, context, gate)
    assert gate.reached.wait(30), "the task never reached its Kafka commit"
    # The transaction stays open past its timeout: the broker aborts it (it looks every
    # transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s by default), and
    # the partition's last stable offset then reaches its end, the abort marker.
    assert _stable_and_end(kafka_broker, topic)[0] < _stable_and_end(kafka_broker, topic)[1]
    wait_until(lambda: len(set(_stable_and_end(kafka_broker, topic))) == 1, 40, "the broker to abort the transaction")
    assert delivered(kafka_broker, topic) == first
    gate.armed = False
    gate.release.set()
    task.join(60)
    assert not task.is_alive() and not failures, failures
    assert node.queues["in"].count == 5 and context.yielded  # rolled back, nothing lost
    trigger(node, publish, context)
    assert node.queues["in"].count == 0
    report = check_delivery(first + sent, delivered(kafka_broker, topic))
    assert report.ok, report.summary()
    assert sorted(delivered(kafka_broker, topic, "read_uncommitted")) == sorted(first + sent + sent)


def _stable_and_end(broker, topic: str) -> tuple[int, int]:
    """Partition 0's last stable offset (where a read_committed reader must stop while a
    transaction is open) and its end, as the broker answers each isolation level."""
    from confluent_kafka import Consumer, TopicPartition

    offsets = []
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap_servers, "group.id": "marks", "isolation.level": isolation}
        )
        try:
            offsets.append(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1])
        finally:
            consumer.close()
    return offsets[0], offsets[1]


# -- made ready for a shard being adopted (`prepare_adopted`) ---------------------------
# The preparation fences the old owner's producer before any task of the new owner
# runs and reads the progress back, and the first task takes the producer it made; a
# preparation the node is not admitted for fences nothing.


def _prepared(adopter: PublishKafka, context, shard_id: str, admit=lambda: None):
    adopter.prepare_adopted(context, shard_id, admit)
    assert adopter._prepared is not None and adopter._prepared.done()
    return adopter._prepared


def test_the_preparation_fences_the_old_owner_before_the_new_owner_runs_a_task(
    kafka_broker, tmp_path, publishers, caplog
):
    topic = new_topic(kafka_broker)
    first, second = items("p", 3), items("s", 6)
    old, publish, context, gate, task, failures = paused_old_owner(
        kafka_broker, tmp_path, publishers, topic, first, second
    )
    shutil.copytree(tmp_path / "old", tmp_path / "new")
    new = Node(tmp_path / "new", QUEUES)
    adopter, adopter_context = publishers.again(publish.configured)
    made_for, producer, ids = _prepared(adopter, adopter_context, new.shard.id).result()
    # The last progress record names the first batch (its WAL commit was not known durable then).
    assert made_for.endswith(f"-{old.shard.id}-{PUBLISH}") and len(ids) == len(first)
    # Fenced already: the old owner, let go, cannot commit.
    with caplog.at_level(logging.ERROR):
        gate.release.set()
        task.join(30)
    assert not task.is_alive() and not failures, failures
    assert context.yielded and old.queues["in"].count == 6
    assert f"fenced by another producer with transactional id {made_for}" in caplog.text
    # The first task takes the producer made ready: no other is made. It says where its
    # time went (the adopted shard's first records out); a later task says nothing.
    later = items("t", 2)
    with caplog.at_level(logging.INFO, logger=f"flow.processor.{PUBLISH}"):
        trigger(new, adopter, adopter_context)
        seed(new, later)
        trigger(new, adopter, adopter_context)
    assert adopter._producer is producer and adopter._prepared is None
    assert new.queues["in"].count == 0 and len(queued(new, "ok")) == 11
    said = [record.getMessage() for record in caplog.records if "the first task of" in record.getMessage()]
    assert len(said) == 1 and f"the first task of {made_for} (6 FlowFiles) took" in said[0], said
    assert all(f"{step} " in said[0] for step in ("producer", "content", "Kafka transaction", "WAL commit")), said
    report = check_delivery(first + second + later, delivered(kafka_broker, topic))
    assert report.ok, report.summary()


def test_the_progress_read_back_by_the_preparation_keeps_committed_records_from_being_sent_again(
    kafka_broker, tmp_path, publishers
):
    topic = new_topic(kafka_broker)
    sent = items("q", 5)
    node, configured = crashed_between_the_commits(kafka_broker, tmp_path, publishers, topic, sent)
    adopter, adopter_context = publishers.again(configured)
    _, _, ids = _prepared(adopter, adopter_context, node.shard.id).result()
    assert len(ids) == 5
    trigger(node, adopter, adopter_context)
    assert node.queues["in"].count == 0 and len(queued(node, "ok")) == 5
    assert sorted(delivered(kafka_broker, topic, "read_uncommitted")) == sorted(sent)  # each sent once


def test_a_preparation_the_node_is_not_admitted_for_fences_nothing(kafka_broker, tmp_path, publishers):
    topic = new_topic(kafka_broker)
    sent = items("r", 4)
    old = Node(tmp_path / "old", QUEUES)
    seed(old, sent)
    gate = PausingGate()
    publish, context = publishers(kafka_broker, topic)
    task, failures = held_at_commit(old, publish, context, gate)
    assert gate.reached.wait(30)
    adopter, adopter_context = publishers.again(publish.configured)

    def refused():
        raise NotAdmitted("this node lost its session")

    with pytest.raises(NotAdmitted):
        _prepared(adopter, adopter_context, old.shard.id, refused).result()
    gate.release.set()
    task.join(30)
    assert not task.is_alive() and not failures, failures
    assert old.queues["in"].count == 0  # its commit went through: nobody fenced it
    adopter.release_prepared()
    assert adopter._prepared is None
    report = check_delivery(sent, delivered(kafka_broker, topic))
    assert report.ok, report.summary()


def test_a_preparation_given_up_while_it_waits_to_fence_never_fences_the_producer_that_runs_the_shard(
    kafka_broker, tmp_path, publishers
):
    """The shard's runtime makes its own producer once the preparation was given up
    (`release_prepared`: its adoption moved on): a fence the preparation still made
    after that would end the producer that runs the shard."""
    topic = new_topic(kafka_broker)
    first, later = items("u", 3), items("v", 3)
    node = Node(tmp_path, QUEUES)
    seed(node, first)
    publish, context = publishers(kafka_broker, topic)
    stale, stale_context = publishers.again(publish.configured)
    admitted, go = threading.Event(), threading.Event()

    def held():  # admitted, then held just before its fence
        admitted.set()
        assert go.wait(60)

    preparing = threading.Thread(target=stale.prepare_adopted, args=(stale_context, node.shard.id, held))
    preparing.start()
    assert admitted.wait(30), "the preparation never asked to be admitted"
    made = []

    def runtime():  # the runtime's order: the preparation given up, then its own producer
        stale.release_prepared()
        trigger(node, publish, context)
        made.append(publish._producer)

    running = threading.Thread(target=runtime)
    running.start()
    # On the old code the release returned at once and the runtime's producer was made
    # here; now the release waits for the held fence, and this join ends at its bound.
    running.join(3)
    go.set()
    running.join(60)
    preparing.join(60)
    assert not running.is_alive() and not preparing.is_alive()
    assert stale._prepared is None and stale._producer is None  # it made nothing, fenced nothing
    seed(node, later)
    trigger(node, publish, context)
    assert publish._producer is made[0], "the runtime's producer was fenced and made again"
    assert node.queues["in"].count == 0 and len(queued(node, "ok")) == 6
    report = check_delivery(first + later, delivered(kafka_broker, topic))
    assert report.ok, report.summary()


RECORD_SERVICES = (
    ("csv-in", "CSVReader", {}),
    ("json-in", "JsonTreeReader", {}),
    ("json-lines", "JsonRecordSetWriter", {"output_grouping": "one-line-per-object"}),
    ("json-array", "JsonRecordSetWriter", {}),
)


def test_record_mode_sends_each_record_as_a_message_keyed_by_its_field(kafka_broker, tmp_path, publishers):
    topic = new_topic(kafka_broker, partitions=2)
    node = Node(tmp_path, QUEUES)
    contents = [
        "id,name,score\nr-0,\u00e9mile,1.5\nr-1,b,\nr-2,c,3\n",
        "id,name,score\n",  # no records: delivered as nothing, to success
        "id,name,score\nr-3,d,4\n",
        'id,name,score\nr-4,"unclosed,5\n',  # a record that cannot be read: the FlowFile to failure, whole
    ]
    seed(node, [str(n) for n in range(len(contents))], contents=[text.encode() for text in contents])
    publish, context = publishers(
        kafka_broker,
        topic,
        services=RECORD_SERVICES,
        record_reader="csv-in",
        record_writer="json-lines",
        message_key_field="id",
    )
    trigger(node, publish, context)

    assert len(queued(node, "ok")) == 3 and node.queues["in"].count == 0
    [failed] = queued(node, "failed")
    assert failed.attributes["record.error.message"] and "record.error.index" in failed.attributes
    assert node.content.read(failed.content_claim) == contents[3].encode()  # as it was
    records = read_records(kafka_broker, topic)
    report = check_delivery([f"r-{n}" for n in range(4)], [record.key().decode() for record in records])
    assert report.ok, report.summary()
    by_key = {record.key().decode(): json.loads(record.value()) for record in records}
    assert by_key["r-0"] == {"id": "r-0", "name": "\u00e9mile", "score": 1.5}
    assert by_key["r-1"]["score"] is None and by_key["r-3"]["name"] == "d"
    # A record's messages are in the FlowFile's order within a partition (the key chooses it).
    assert all(not record.value().endswith(b"\n") for record in records)


def test_record_mode_with_an_array_writer_sends_each_record_as_an_array_of_one(kafka_broker, tmp_path, publishers):
    """As NiFi's JSON writer writes a message when its grouping is an array."""
    topic = new_topic(kafka_broker)
    node = Node(tmp_path, QUEUES)
    seed(node, ["x"], contents=[b'[{"id": 1}, {"id": 2, "tags": ["a"]}]'])
    publish, context = publishers(
        kafka_broker, topic, services=RECORD_SERVICES, record_reader="json-in", record_writer="json-array"
    )
    trigger(node, publish, context)
    assert delivered(kafka_broker, topic) == ['[{"id":1,"tags":null}]', '[{"id":2,"tags":["a"]}]']


@pytest.mark.parametrize(
    ("properties", "problem"),
    [
        ({"record_reader": "json-in"}, "record_writer"),
        ({"record_writer": "json-lines"}, "record_reader"),
        (
            {"record_reader": "json-in", "record_writer": "json-lines", "message_demarcator": "\\n"},
            "message_demarcator",
        ),
        ({"message_key_field": "id"}, "message_key_field"),
    ],
)
def test_record_mode_half_configured_is_refused_at_load(properties, problem):
    flow = {
        "services": [{"id": sid, "type": kind, "properties": props} for sid, kind, props in RECORD_SERVICES],
        "processors": [
            {
                "id": PUBLISH,
                "type": "PublishKafka",
                "properties": {"bootstrap_servers": "127.0.0.1:9", "topic": "t", **properties},
                "auto_terminate": ["success", "failure"],
            }
        ],
    }
    with pytest.raises(FlowDefinitionError, match=problem):
        parse_flow(flow)
