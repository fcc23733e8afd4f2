"""The Kafka broker the harness runs, against the real broker: Kafka's transactions as
confluent-kafka drives them (what a Kafka source and sink need to be exactly once), a
broker's death, `custody services` as a user types it, and the compose broker's probe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cluster.services.kafka import KafkaBroker
from cluster.services.network import HOST, free_ports, port_open

from .kafka_helpers import in_transaction, new_topic, read_all, transactional_producer

pytestmark = [pytest.mark.kafka]

ROOT = Path(__file__).resolve().parents[2]
CUSTODY = str(Path(sys.executable).parent / "custody")


def test_committed_transactions_are_read_and_an_aborted_ones_records_are_not(kafka_broker):
    topic = new_topic(kafka_broker)
    producer = transactional_producer(kafka_broker, f"tx-{topic}")
    in_transaction(producer, topic, [b"one", b"two"])
    in_transaction(producer, topic, [b"aborted"], commit=False)
    in_transaction(producer, topic, [b"three"])
    assert read_all(kafka_broker, topic) == [b"one", b"two", b"three"]
    # The aborted record is in the log: only read_committed hides it.
    assert read_all(kafka_broker, topic, "read_uncommitted") == [b"one", b"two", b"aborted", b"three"]


def test_a_killed_broker_keeps_committed_records_and_its_open_transaction_is_aborted(kafka_broker):
    topic = new_topic(kafka_broker)
    transactional_id = f"tx-{topic}"
    before = transactional_producer(kafka_broker, transactional_id)
    in_transaction(before, topic, [b"committed"])
    before.begin_transaction()
    before.produce(topic, b"in flight")
    before.flush(30)
    pid = kafka_broker.process.pid
    kafka_broker.kill()
    try:
        assert not port_open(kafka_broker.ports["broker"]) and not kafka_broker.healthy()
    finally:
        kafka_broker.restart()
    assert kafka_broker.process.pid != pid
    # The producer's successor, with the same transactional id, fences it: the broker
    # aborts the transaction left open, and the successor's commits go on.
    after = transactional_producer(kafka_broker, transactional_id)
    in_transaction(after, topic, [b"after restart"])
    assert read_all(kafka_broker, topic) == [b"committed", b"after restart"]
    assert b"in flight" in read_all(kafka_broker, topic, "read_uncommitted")


def test_a_dead_or_hung_session_broker_is_started_again_before_the_next_test(kafka_broker):
    topic = new_topic(kafka_broker)
    in_transaction(transactional_producer(kafka_broker, f"tx-{topic}"), topic, [b"kept"])
    assert kafka_broker.serving_or_restarted() is False  # serving: left alone
    first = kafka_broker.process.pid
    kafka_broker.kill()
    assert kafka_broker.serving_or_restarted() is True
    second = kafka_broker.process.pid
    assert second != first and kafka_broker.healthy()
    kafka_broker.process.pause()  # running, answering nothing
    assert kafka_broker.serving_or_restarted(patience=3.0) is True
    assert kafka_broker.process.pid != second and kafka_broker.healthy()
    assert read_all(kafka_broker, topic) == [b"kept"]


def test_the_broker_listens_on_loopback_only(kafka_broker):
    text = kafka_broker.config_path.read_text()
    listeners = next(line for line in text.splitlines() if line.startswith("listeners="))
    addresses = [listener.split("://", 1)[1] for listener in listeners.split("=", 1)[1].split(",")]
    assert addresses == [f"{HOST}:{kafka_broker.ports['broker']}", f"{HOST}:{kafka_broker.ports['controller']}"]


def test_the_compose_healthcheck_probe_answers_only_for_a_serving_broker(kafka_broker):
    """docker-compose.yml's probe, run as written (bash, /dev/tcp) against the harness's
    broker: the port in its command is the container's, replaced by this broker's."""
    test = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["kafka"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "custody-probe", "9092"]

    def probe(port: int) -> int:
        return subprocess.run(
            ["bash", str(ROOT / "cluster" / "docker" / "probe.sh"), str(port), *test[3:]],
            capture_output=True,
            timeout=10,
        ).returncode

    assert probe(kafka_broker.ports["broker"]) == 0
    assert probe(free_ports(1)[0]) == 1


def test_custody_services_up_only_kafka_starts_a_broker_and_down_stops_it(tmp_path):
    workdir = tmp_path / "services"

    def custody(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [CUSTODY, "services", "--workdir", str(workdir), *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ),
        )

    try:
        up = custody("up", "--only", "kafka")
        assert up.returncode == 0, up.stdout + up.stderr
        broker = KafkaBroker(workdir)
        assert f"kafka      UP    bootstrap_servers={broker.bootstrap_servers}" in up.stdout, up.stdout
        assert broker.healthy() and broker.process.alive()
        down = custody("down")
        assert down.returncode == 0, down.stdout + down.stderr
        assert not broker.process.alive() and not port_open(broker.ports["broker"])
    finally:
        KafkaBroker(workdir).stop()
