"""Kafka to Kafka through `custody run` (examples/kafka-to-kafka.yaml: ConsumeKafka,
UpdateAttribute, PublishKafka), killed with SIGKILL at random moments: every input
record appears in the output topic exactly once to a consumer that reads with
read_committed, checked from outside by key (`cluster.drills.checker`: lost,
duplicated and unexpected counted).

The broker is not killed here. A single-node broker SIGKILLed while it commits a
transaction can, once restarted, be elected transaction coordinator on a metadata image
in which the transaction's partitions have no leader yet, and then drops its commit
markers ("Couldn't find leader endpoint ... likely deleted"): the partitions keep a
hanging transaction that read_committed consumers stop at, until an operator aborts it
(`kafka-transactions.sh find-hanging`, `abort`). No client can prevent it, and this
test, which kills the broker in the middle of the node's commits on purpose, met it in
two CI runs. The broker's death under running nodes is drilled by
`tests/integration/test_kafka_drill.py` (the `broker` fault) and the compose test.

CI: 2,500 records, 3 kills of the node. CUSTODY_LONG=1: 40,000 records and 12 kills.
Seed: CUSTODY_DRILL_SEED (default random, printed on failure)."""

from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster.drills.checker import check_delivery
from cluster.services.process import wait_until

from .kafka_helpers import new_topic, read_records
from .test_kafka_consume import produce
from .test_standalone_cli import ROOT, read_line_containing

pytestmark = [pytest.mark.kafka]

FLOW = ROOT / "examples" / "kafka-to-kafka.yaml"
LONG = os.environ.get("CUSTODY_LONG") == "1"
COUNT = 40_000 if LONG else 2_500
KILLS = 12 if LONG else 3
_LOG = logging.getLogger(__name__)  # librdkafka's complaints


def custody_run(data_dir: Path, broker, source: str, output: str, log, flow: Path = FLOW, **params) -> subprocess.Popen:
    """`custody run` of `flow` from `source` to `output` (and `params`), as a user starts it."""
    command = [sys.executable, "-m", "cluster.cli", "run", "--flow", str(flow), "--data-dir", str(data_dir)]
    given = {"bootstrap_servers": broker.bootstrap_servers, "input": source, "output": output, **params}
    for name, value in given.items():
        command += ["--param", f"{name}={value}"]
    return subprocess.Popen(
        command + ["--status-interval", "0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True
    )


class OutputCounter:
    """How many records the output topic's partitions hold, aborted ones and markers
    included (their high watermarks): a cheap, growing measure of progress."""

    def __init__(self, broker, topic: str):
        from confluent_kafka import Consumer

        self.topic = topic
        self.consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap_servers, "group.id": f"count-{topic}", "logger": _LOG}
        )

    def __call__(self) -> int:
        from confluent_kafka import TopicPartition

        partitions = self.consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions
        return sum(
            self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1] for p in partitions
        )


def test_kafka_to_kafka_is_exactly_once_through_sigkills(kafka_broker, tmp_path):
    seed = int(os.environ.get("CUSTODY_DRILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    source, output = new_topic(kafka_broker, 3), new_topic(kafka_broker, 3)
    keys = [f"k-{i:06d}" for i in range(COUNT)]
    produce(kafka_broker, source, keys)
    data_dir, log_path = tmp_path / "node", tmp_path / "node.log"
    progress = OutputCounter(kafka_broker, output)
    # Kill marks in the output's growth (records and transaction markers: about 1.2 per
    # input record), spread so that each run delivers some and leaves some.
    marks = sorted(rng.sample(range(COUNT // 10, COUNT), KILLS))
    try:
        kill_at_marks(
            lambda log: custody_run(data_dir, kafka_broker, source, output, log),
            progress,
            marks,
            lambda: _delivered(kafka_broker, output) >= COUNT,
            rng,
            seed,
            log_path,
        )
    finally:
        progress.consumer.close()
    records = read_records(kafka_broker, output)
    report = check_delivery(keys, [message.key().decode() for message in records])
    assert (len(report.lost), report.duplicated, report.unexpected) == (0, {}, []), f"seed {seed}: {report}"
    assert all(dict(message.headers() or []).get("stage") == b"stamped" for message in records)
    every = read_records(kafka_broker, output, "read_uncommitted")
    print(f"seed {seed}: {len(records)} records read_committed, {len(every) - len(records)} aborted in the log")


def kill_at_marks(start, progress, marks: list[int], done, rng: random.Random, seed: int, log_path: Path) -> None:
    """Start the node (`start(log)`), SIGKILL it once `progress()` reaches each of
    `marks` (plus a random moment), then start it once more and wait for `done()`."""
    with open(log_path, "ab") as log:
        for attempt, mark in enumerate(marks):
            process = start(log)
            try:
                read_line_containing(process, "node running", 60)
                wait_until(
                    lambda process=process, mark=mark: alive(process, seed, log_path) and progress() >= mark,
                    180,
                    f"seed {seed}, attempt {attempt}: the output topic to grow to {mark}",
                    interval=0.01,
                )
                time.sleep(rng.uniform(0.0, 0.3))  # where in the cycle of transactions the kill lands
            finally:
                process.kill()  # SIGKILL
                process.communicate(timeout=30)
        # The last run drains the input.
        process = start(log)
        try:
            read_line_containing(process, "node running", 60)
            wait_until(
                lambda: alive(process, seed, log_path) and done(),
                300,
                f"seed {seed}: every record in the output",
                interval=0.5,
            )
        finally:
            process.terminate()
            process.communicate(timeout=60)


def alive(process: subprocess.Popen, seed: int, log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"seed {seed}: the node exited with {process.returncode}:\n{log.read_text()[-3000:]}")
    return True


def _delivered(broker, topic: str) -> int:
    return len(read_records(broker, topic))
