"""Kafka to Kafka record by record through `custody run` (examples/kafka-records.yaml:
ConsumeKafka in record mode, QueryRecord, PublishKafka in record mode keyed by a
field), killed with SIGKILL at random moments: every record of the input's JSON
messages appears in the output topic exactly once to a read_committed consumer, as one
message keyed by its id, stamped by the query; every message that is not a record is
written once to the failure directory as it was. Both checked from outside, by key and
by content (`cluster.drills.checker`: lost, duplicated and unexpected counted).

CI: 2,000 records and 40 unreadable messages, 3 kills. CUSTODY_LONG=1: 30,000 records
and 12 kills. Seed: CUSTODY_DRILL_SEED (default random, printed on failure)."""

from __future__ import annotations

import json
import os
import random

import pytest

from cluster.drills.checker import check_delivery, ids_in_directory

from .kafka_helpers import new_topic, read_records
from .test_kafka_to_kafka import OutputCounter, custody_run, kill_at_marks
from .test_standalone_cli import ROOT

pytestmark = [pytest.mark.kafka]

FLOW = ROOT / "examples" / "kafka-records.yaml"
LONG = os.environ.get("CUSTODY_LONG") == "1"
COUNT = 30_000 if LONG else 2_000
BAD_EVERY = 50
KILLS = 12 if LONG else 3


def _messages(count: int) -> tuple[list[str], list[str], list[bytes]]:
    """The record ids, the unreadable messages, and every message in order."""
    ids, bad, values = [], [], []
    for n in range(count):
        ids.append(f"r-{n:06d}")
        values.append(json.dumps({"id": ids[-1], "n": n, "text": f"\u00e9t\u00e9 {n}"}).encode())
        if n % BAD_EVERY == BAD_EVERY - 1:
            bad.append(f"unreadable-{n:06d} {{not json")
            values.append(bad[-1].encode())
    return ids, bad, values


def _produce(broker, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def test_kafka_records_are_exactly_once_through_sigkills(kafka_broker, tmp_path):
    seed = int(os.environ.get("CUSTODY_DRILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    source, output = new_topic(kafka_broker, 3), new_topic(kafka_broker, 3)
    ids, bad, values = _messages(COUNT)
    _produce(kafka_broker, source, values)
    failed = tmp_path / "failed"
    progress = OutputCounter(kafka_broker, output)
    marks = sorted(rng.sample(range(COUNT // 10, COUNT), KILLS))
    try:
        kill_at_marks(
            lambda log: custody_run(tmp_path / "node", kafka_broker, source, output, log, FLOW, failed=failed),
            progress,
            marks,
            lambda: len(read_records(kafka_broker, output)) >= COUNT and len(ids_in_directory(str(failed))) >= len(bad),
            rng,
            seed,
            tmp_path / "node.log",
        )
    finally:
        progress.consumer.close()
    records = read_records(kafka_broker, output)
    report = check_delivery(ids, [message.key().decode() for message in records])
    assert (len(report.lost), report.duplicated, report.unexpected) == (0, {}, []), f"seed {seed}: {report}"
    for message in records:
        record = json.loads(message.value())
        assert record["id"] == message.key().decode() and record["stage"] == "stamped"
        assert record["text"] == f"\u00e9t\u00e9 {record['n']}"
    unreadable = check_delivery(bad, ids_in_directory(str(failed), lambda data: data.decode()))
    assert (len(unreadable.lost), unreadable.duplicated, unreadable.unexpected) == (0, {}, []), f"seed {seed}"
    every = read_records(kafka_broker, output, "read_uncommitted")
    print(
        f"seed {seed}: {KILLS} kills, {len(records)} records read_committed, {len(every) - len(records)} aborted "
        f"in the log; {len(bad)} unreadable messages delivered once"
    )
