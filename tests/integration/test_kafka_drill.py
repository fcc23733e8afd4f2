"""The failover drill on the Kafka workload: a 3-node cluster of real `custody node`
processes running examples/kafka-cluster.yaml (ConsumeKafka, UpdateAttribute,
PublishKafka exactly once) against the real ZooKeeper ensemble, HDFS and a Kafka broker of its own;
a producer outside the cluster writes keyed records to the input topic, and at the end
a read_committed consumer of the output topic must find every key exactly once, each
FlowFile received and sent once (provenance, cluster-wide), and no WAL may hold one.

The rounds are `custody drill --workload kafka`'s own (`DrillRunner` on a `LocalTarget`
with the Kafka workload), so the test and the tool cannot drift. Faults, in rotation:
kill, stop, expire, leader, adopter, broker (the Kafka broker SIGKILLed in the middle
of the nodes' transactions and restarted: a single combined-mode node killed between
a transaction's commit and its markers can come back and drop the markers; the
publishers finish such a transaction as its coordinator decided, `hanging`).

CUSTODY_KAFKA_DRILL_ROUNDS: rounds in all (default 12: 2 of each; with CUSTODY_LONG=1,
102: 17 of each); CUSTODY_KAFKA_DRILL_FAULTS: some faults only (comma-separated);
CUSTODY_KAFKA_DRILL_REPORT: a file for the JSON report (`custody drill --report`'s).
"""

from __future__ import annotations

import os

import pytest

from cluster.drills.fault_kinds import parse_faults
from cluster.drills.local import KAFKA_FAULTS, LocalTarget
from cluster.services.kafka import KafkaBroker

from .drill_rounds import report_path, run_drill

LONG = os.environ.get("CUSTODY_LONG") == "1"
FAULTS = parse_faults(
    os.environ.get("CUSTODY_KAFKA_DRILL_FAULTS") or "kill,stop,expire,leader,adopter,broker",
    KAFKA_FAULTS,
    "local",
)
PER_FAULT = 17 if LONG else 2
ROUNDS = int(os.environ.get("CUSTODY_KAFKA_DRILL_ROUNDS", str(PER_FAULT * len(FAULTS))))
pytestmark = [
    pytest.mark.zookeeper,
    pytest.mark.hdfs,
    pytest.mark.kafka,
    pytest.mark.slow,
    pytest.mark.timeout(300 + 40 * ROUNDS),
]


@pytest.fixture
def drill_broker(tmp_path_factory):
    """A broker of the drill's own. Its broker rounds kill it and start it again, and
    each start reloads and re-elects every partition the broker holds: by the drill,
    the session's broker holds every Kafka test's topics (over 400 partitions). With
    both cores kept busy, a killed broker of 440 partitions served again after 15 s,
    one of a few topics after 8 s (and a loaded CI run's restarts of the session broker
    took from 16 s to more than 90 s). A drill's broker round also leaves no other
    test a broker it killed."""
    broker = KafkaBroker(tmp_path_factory.mktemp("drill-kafka"))
    try:
        broker.start()
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def kafka_target(request, zookeeper_ensemble, hdfs_cluster, drill_broker, tmp_path):
    target = LocalTarget(
        workdir=tmp_path, zookeeper=zookeeper_ensemble, hdfs=hdfs_cluster, kafka=drill_broker, workload="kafka"
    )
    yield target
    if target.cluster is not None:
        if getattr(request.node, "rep_call", None) is None or request.node.rep_call.failed:
            target.dump_stacks()  # where each node was stuck, in its log
        print(target.tails())
    target.close()


def test_kafka_failover_drill(kafka_target, tmp_path):
    target = kafka_target
    target.start_all()

    runner, _ = run_drill(target, FAULTS, ROUNDS, report_path("CUSTODY_KAFKA_DRILL_REPORT", tmp_path), workload="kafka")
    # Every key the producer sent, and nothing else, was read once; every round fed more.
    check = runner.report
    assert check.delivery.expected >= target.kafka_workload.feed and check.created == check.delivery.expected
    # The broker came back and delivery went on, without a node lost.
    for entry in runner.rounds:
        if entry["fault"] == "broker":
            assert entry["twenty_delivered_after"] < 90 and not entry.get("sessions_lost"), entry
