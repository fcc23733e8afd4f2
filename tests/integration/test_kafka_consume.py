"""ConsumeKafka against the real broker: records become FlowFiles with Kafka's
attributes, each exactly once across crashes before and after the WAL commit and
across SIGKILLs of `custody run`; aborted transactions are never read; new partitions
and topics are picked up; the consumer group shows the lag; a broker that cannot be
reached, or a topic that does not exist, is one clear warning and nothing taken."""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cluster.drills.checker import check_delivery, ids_in_directory
from cluster.services.network import free_ports
from cluster.services.process import wait_until
from flow.processors.kafka.positions import TopicPartition, unpack

from .test_flow_sources import CrashAt, Node, SimulatedCrash, processor
from .test_kafka_services import in_transaction, transactional_producer
from .test_standalone_cli import ROOT, read_line_containing

pytestmark = [pytest.mark.kafka]

FLOW = ROOT / "examples" / "kafka-to-files.yaml"


def topic_with(broker, partitions: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"consume-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)
    return topic


def produce(broker, topic: str, values: list[str], **kwargs) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value.encode(), key=value.encode(), **kwargs)
    assert producer.flush(30) == 0


def consumer_of(broker, topic: str, **properties):
    base = {
        "bootstrap_servers": broker.bootstrap_servers,
        "topics": topic,
        "auto_offset_reset": "earliest",
        "metadata_refresh": "100 ms",
    }
    return processor("ConsumeKafka", "consume", {**base, **properties})


def drain(node: Node, consume, context, count: int, timeout: float = 60) -> list[bytes]:
    """Trigger until `count` FlowFiles are queued in "out"; their contents, sorted."""
    wait_until(
        lambda: node.trigger(consume, context, outgoing={"success": "out"}) or node.queues["out"].count >= count,
        timeout,
        f"{count} FlowFiles from ConsumeKafka",
        interval=0,
    )
    return node.contents("out")


def flowfiles(node: Node) -> list:
    found = node.queues["out"].poll(1 << 20)[0]
    node.queues["out"].requeue(found)
    return found


def test_records_become_flowfiles_with_the_attributes_kafka_gives(kafka_broker, tmp_path):
    topic = topic_with(kafka_broker, 2)
    produce(kafka_broker, topic, [f"r{i}" for i in range(6)], headers={"origin": b"test", "other": b"x"})
    node = Node(tmp_path, ["out"])
    consume, context = consumer_of(kafka_broker, topic, header_name_pattern="orig.*")
    assert drain(node, consume, context, 6) == [f"r{i}".encode() for i in range(6)]
    for flowfile in flowfiles(node):
        attributes = flowfile.attributes
        value = node.content.read(flowfile.content_claim).decode()
        assert attributes["kafka.topic"] == topic and attributes["kafka.partition"] in ("0", "1")
        assert attributes["kafka.key"] == value and attributes["origin"] == "test" and "other" not in attributes
        assert int(attributes["kafka.timestamp"]) > 0 and int(attributes["kafka.offset"]) >= 0
    # The committed state holds the position past each partition's last record.
    positions = unpack(node.shard.get_state("consume"), "consume")
    by_partition = {}
    for flowfile in flowfiles(node):
        tp = TopicPartition(topic, int(flowfile.attributes["kafka.partition"]))
        by_partition[tp] = max(by_partition.get(tp, 0), int(flowfile.attributes["kafka.offset"]) + 1)
    assert positions == by_partition


def test_each_record_is_taken_once_across_crashes_before_and_after_the_wal_commit(kafka_broker, tmp_path):
    topic = topic_with(kafka_broker, 3)
    values = [f"v{i:03d}" for i in range(60)]
    produce(kafka_broker, topic, values[:30])

    # Run 1: the FlowFiles and the positions commit; the node dies before anything else.
    node = Node(tmp_path, ["out"], CrashAt("after_wal", "consume", times=1))
    consume, context = consumer_of(kafka_broker, topic)
    with pytest.raises(SimulatedCrash):
        wait_until(
            lambda: node.trigger(consume, context, outgoing={"success": "out"}) or False, 30, "a crash", interval=0
        )
    node.crash()
    consume.on_stopped(context)

    # Run 2: its first commit dies before the WAL: those records are read again by run 3.
    node = Node(tmp_path, ["out"], CrashAt("before_wal", "consume", times=1))
    taken_by_run_1 = len(flowfiles(node))
    assert taken_by_run_1 > 0
    consume, context = consumer_of(kafka_broker, topic)
    produce(kafka_broker, topic, values[30:])
    with pytest.raises(SimulatedCrash):
        wait_until(
            lambda: node.trigger(consume, context, outgoing={"success": "out"}) or False, 30, "a crash", interval=0
        )
    node.crash()
    consume.on_stopped(context)

    # Run 3: nothing in the way; every record once.
    node = Node(tmp_path, ["out"])
    assert len(flowfiles(node)) == taken_by_run_1
    consume, context = consumer_of(kafka_broker, topic)
    delivered = [data.decode() for data in drain(node, consume, context, len(values))]
    report = check_delivery(values, delivered)
    assert (report.lost, report.duplicated, report.unexpected) == ([], {}, [])
    consume.on_stopped(context)


def test_an_aborted_transactions_records_are_never_taken(kafka_broker, tmp_path):
    topic = topic_with(kafka_broker, 1)
    producer = transactional_producer(kafka_broker, f"tx-{topic}")
    in_transaction(producer, topic, [b"one"])
    in_transaction(producer, topic, [b"aborted"], commit=False)
    in_transaction(producer, topic, [b"two"])
    node = Node(tmp_path, ["out"])
    consume, context = consumer_of(kafka_broker, topic)
    assert drain(node, consume, context, 2) == [b"one", b"two"]
    # Past the last commit marker: nothing more to take, and the position is past it.
    for _ in range(5):
        node.trigger(consume, context, outgoing={"success": "out"})
    assert node.contents("out") == [b"one", b"two"]
    assert unpack(node.shard.get_state("consume"), "consume") == {TopicPartition(topic, 0): 5}


def test_records_of_a_partition_read_together_become_one_demarcated_flowfile(kafka_broker, tmp_path):
    topic = topic_with(kafka_broker, 1)
    produce(kafka_broker, topic, [f'{{"n": {i}}}' for i in range(4)])
    node = Node(tmp_path, ["out"])
    consume, context = consumer_of(kafka_broker, topic, message_demarcator="\\n")
    wait_until(
        lambda: node.trigger(consume, context, outgoing={"success": "out"}) or "3" in _max_offsets(node),
        30,
        "the four records",
        interval=0,
    )
    lines = b"\n".join(node.contents("out")).split(b"\n")
    assert lines == [f'{{"n": {i}}}'.encode() for i in range(4)]
    counts = sum(int(flowfile.attributes["kafka.count"]) for flowfile in flowfiles(node))
    assert counts == 4 and all("kafka.key" not in f.attributes for f in flowfiles(node))


def test_record_mode_writes_a_partitions_messages_as_records_and_unreadable_ones_to_parse_failure(
    kafka_broker, tmp_path
):
    topic = topic_with(kafka_broker, 1)
    values = [
        '{"id": 0, "n": "a"}',
        '{"id": 1, "n": "b"}',
        "not json",
        '{"id": 3, "n": "d", "extra": 1.5}',  # a field the first lack: one record set still
        "[1, 2]",  # JSON, but no record
        '{"id": 5,\n "n": "f"}',  # on two lines: read by itself
        '{"id": "six"}',  # text where the others have numbers: a record set of its own
    ]
    produce(kafka_broker, topic, values)
    node = Node(tmp_path, ["out", "bad"])
    services = [
        ("in", "JsonTreeReader", {}),
        ("out", "JsonRecordSetWriter", {"output_grouping": "one-line-per-object"}),
    ]
    consume, context = processor(
        "ConsumeKafka",
        "consume",
        {
            "bootstrap_servers": kafka_broker.bootstrap_servers,
            "topics": topic,
            "auto_offset_reset": "earliest",
            "metadata_refresh": "100 ms",
            "record_reader": "in",
            "record_writer": "out",
        },
        services=services,
    )
    outgoing = {"success": "out", "parse.failure": "bad"}
    wait_until(
        lambda: (
            node.trigger(consume, context, outgoing=outgoing)
            or unpack(node.shard.get_state("consume"), "consume").get(TopicPartition(topic, 0)) == len(values)
        ),
        30,
        "every message taken",
        interval=0,
    )
    good = [f for f in node.queues["out"].poll(100)[0]]
    bad = [f for f in node.queues["bad"].poll(100)[0]]
    records = [json.loads(line) for f in good for line in node.content.read(f.content_claim).decode().splitlines()]
    assert [record["id"] for record in records] == [0, 1, 3, 5, "six"]
    assert records[2]["extra"] == 1.5 and records[0]["extra"] is None
    assert sum(int(f.attributes["record.count"]) for f in good) == 5
    assert sum(int(f.attributes["kafka.count"]) for f in good) == 5
    assert all(f.attributes["mime.type"] == "application/json" for f in good)
    assert [node.content.read(f.content_claim) for f in bad] == [b"not json", b"[1, 2]"]
    assert [f.attributes["kafka.offset"] for f in bad] == ["2", "4"]
    assert all(f.attributes["record.error.message"] and f.attributes["kafka.key"] for f in bad)


def _max_offsets(node: Node) -> set[str]:
    return {flowfile.attributes["kafka.max.offset"] for flowfile in flowfiles(node)}


def test_partitions_added_while_running_and_a_topic_created_later_are_picked_up(kafka_broker, tmp_path, caplog):
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    topic = topic_with(kafka_broker, 1)
    missing = f"later-{uuid.uuid4().hex[:12]}"
    produce(kafka_broker, topic, ["a0"])
    node = Node(tmp_path, ["out"])
    consume, context = consumer_of(kafka_broker, f"{topic},{missing}")
    with caplog.at_level(logging.WARNING):
        assert drain(node, consume, context, 1) == [b"a0"]
    assert any(
        missing in record.getMessage() and "cannot be consumed" in record.getMessage() for record in caplog.records
    )

    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    admin.create_topics([NewTopic(missing, num_partitions=1, replication_factor=1)])[missing].result(30)
    wait_until(lambda: len(admin.list_topics(timeout=5).topics[topic].partitions) == 3, 30, "three partitions")
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for partition in (1, 2):
        producer.produce(topic, f"p{partition}".encode(), partition=partition)
    producer.produce(missing, b"late")
    assert producer.flush(30) == 0
    # Records written before the consumer saw the new partitions are taken too: a new
    # partition starts at its first record.
    assert drain(node, consume, context, 4) == [b"a0", b"late", b"p1", b"p2"]


def test_the_consumer_group_shows_the_committed_positions_for_lag_tools(kafka_broker, tmp_path):
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka import TopicPartition as KafkaPartition
    from confluent_kafka.admin import AdminClient

    topic = topic_with(kafka_broker, 1)
    produce(kafka_broker, topic, [f"g{i}" for i in range(7)])
    node = Node(tmp_path, ["out"])
    group = f"lag-{topic}"
    consume, context = consumer_of(kafka_broker, topic, group_id=group)
    drain(node, consume, context, 7)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})

    def reported() -> int:
        request = ConsumerGroupTopicPartitions(group, [KafkaPartition(topic, 0)])
        result = admin.list_consumer_group_offsets([request])[group].result(10)
        return result.topic_partitions[0].offset

    wait_until(lambda: node.trigger(consume, context, outgoing={"success": "out"}) or reported() == 7, 30, "lag")


def test_a_broker_that_cannot_be_reached_is_one_warning_and_nothing_taken(tmp_path, caplog):
    (port,) = free_ports(1)
    node = Node(tmp_path, ["out"])
    consume, context = processor(
        "ConsumeKafka", "consume", {"bootstrap_servers": f"127.0.0.1:{port}", "topics": "anything"}
    )
    with caplog.at_level(logging.WARNING):
        started = time.monotonic()
        node.trigger(consume, context, outgoing={"success": "out"})
        node.trigger(consume, context, outgoing={"success": "out"})
    lines = [r.getMessage() for r in caplog.records if "cannot read the topics' metadata" in r.getMessage()]
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0], lines
    assert time.monotonic() - started < 30 and node.queues["out"].count == 0 and context.yielded
    consume.on_stopped(context)


def _custody_run(data_dir: Path, broker, topic: str, log) -> subprocess.Popen:
    command = [sys.executable, "-m", "cluster.cli", "run", "--flow", str(FLOW), "--data-dir", str(data_dir)]
    for name, value in (("bootstrap_servers", broker.bootstrap_servers), ("topic", topic), ("out", data_dir / "out")):
        command += ["--param", f"{name}={value}"]
    return subprocess.Popen(
        command + ["--status-interval", "0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True
    )


def test_custody_run_takes_every_record_once_through_sigkills(kafka_broker, tmp_path):
    seed = int(os.environ.get("CUSTODY_DRILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    count, kills = 3_000, 5
    topic = topic_with(kafka_broker, 3)
    values = [f"rec-{i:05d}" for i in range(count)]
    produce(kafka_broker, topic, values)
    data_dir, log_path = tmp_path / "node", tmp_path / "node.log"
    out = data_dir / "out"
    marks = sorted(rng.sample(range(count // 10, count - count // 10), kills))
    with open(log_path, "ab") as log:
        for mark in marks + [count]:
            process = _custody_run(data_dir, kafka_broker, topic, log)
            try:
                read_line_containing(process, "node running", 60)
                _wait_for_files(process, out, mark, 120, seed, log_path)
            finally:
                process.kill()  # SIGKILL
                process.communicate(timeout=30)
    delivered = ids_in_directory(str(out))
    report = check_delivery(values, delivered)
    assert (len(report.lost), report.duplicated, report.unexpected) == (0, {}, []), f"seed {seed}: {report}"


def _wait_for_files(process: subprocess.Popen, out: Path, count: int, timeout: float, seed: int, log: Path) -> None:
    def delivered() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"seed {seed}: the node exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        return out.is_dir() and len([name for name in os.listdir(out) if not name.startswith(".")]) >= count

    wait_until(delivered, timeout, f"seed {seed}: {count} records delivered to {out}", interval=0.005)


def test_a_topic_deleted_while_consumed_is_one_warning_and_its_positions_are_dropped(kafka_broker, tmp_path, caplog):
    from confluent_kafka.admin import AdminClient

    kept, doomed = topic_with(kafka_broker, 1), topic_with(kafka_broker, 2)
    produce(kafka_broker, kept, ["k0"])
    produce(kafka_broker, doomed, ["d0", "d1"])
    node = Node(tmp_path, ["out"])
    consume, context = consumer_of(kafka_broker, f"{kept},{doomed}")
    assert drain(node, consume, context, 3) == [b"d0", b"d1", b"k0"]
    assert {tp.topic for tp in unpack(node.shard.get_state("consume"), "consume")} == {kept, doomed}

    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    admin.delete_topics([doomed])[doomed].result(30)
    wait_until(lambda: doomed not in admin.list_topics(timeout=5).topics, 30, f"{doomed} to be deleted")
    produce(kafka_broker, kept, ["k1"])
    with caplog.at_level(logging.WARNING):
        assert drain(node, consume, context, 4) == [b"d0", b"d1", b"k0", b"k1"]
        wait_until(
            lambda: (
                node.trigger(consume, context, outgoing={"success": "out"})
                or {tp.topic for tp in unpack(node.shard.get_state("consume"), "consume")} == {kept}
            ),
            30,
            "the deleted topic's positions to be dropped",
            interval=0,
        )
    gone = [r.getMessage() for r in caplog.records if f"topic {doomed} no longer exists" in r.getMessage()]
    assert len(gone) == 1, gone
    consume.on_stopped(context)


def test_a_topic_left_out_of_the_topics_for_a_while_goes_on_where_it_was(kafka_broker, tmp_path):
    first, second = topic_with(kafka_broker, 1), topic_with(kafka_broker, 1)
    produce(kafka_broker, first, ["a0", "a1"])
    produce(kafka_broker, second, ["b0"])
    node = Node(tmp_path, ["out"])
    consume, context = consumer_of(kafka_broker, f"{first},{second}")
    assert drain(node, consume, context, 3) == [b"a0", b"a1", b"b0"]
    consume.on_stopped(context)

    # The operator drops the first topic from the list; the second goes on and commits.
    produce(kafka_broker, first, ["a2"])
    produce(kafka_broker, second, ["b1"])
    consume, context = consumer_of(kafka_broker, second)
    assert drain(node, consume, context, 4) == [b"a0", b"a1", b"b0", b"b1"]
    assert unpack(node.shard.get_state("consume"), "consume")[TopicPartition(first, 0)] == 2
    consume.on_stopped(context)

    # Back in the list: it goes on from its position, nothing read twice or skipped.
    consume, context = consumer_of(kafka_broker, f"{first},{second}")
    report = check_delivery(["a0", "a1", "a2", "b0", "b1"], [v.decode() for v in drain(node, consume, context, 5)])
    assert (report.lost, report.duplicated, report.unexpected) == ([], {}, []), report
    consume.on_stopped(context)
