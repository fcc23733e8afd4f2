"""The failover drill on the Kafka workload: a 3-node cluster of real `custody node`
processes running examples/kafka-cluster.yaml (ConsumeKafka, UpdateAttribute,
PublishKafka exactly once) against the real ZooKeeper ensemble, HDFS and Kafka broker;
a producer outside the cluster writes keyed records to the input topic, and at the end
a read_committed consumer of the output topic must find every key exactly once, each
FlowFile received and sent once (provenance, cluster-wide), and no WAL may hold one.

The rounds are `custody drill --workload kafka`'s own (`DrillRunner` on a `LocalTarget`
with the Kafka workload), so the test and the tool cannot drift. Faults, in rotation:
kill, stop, expire, leader, adopter, broker (the Kafka broker SIGKILLed and restarted).

CUSTODY_KAFKA_DRILL_ROUNDS: rounds in all (default 12: 2 of each; with CUSTODY_LONG=1,
102: 17 of each); CUSTODY_KAFKA_DRILL_FAULTS: some faults only (comma-separated);
CUSTODY_KAFKA_DRILL_REPORT: a file for the JSON report (`custody drill --report`'s).
"""

from __future__ import annotations

import json
import os

import pytest

from cluster.drills.fault_kinds import BY_NAME, parse_faults, rotation
from cluster.drills.harness import SESSION_TIMEOUT
from cluster.drills.local import KAFKA_FAULTS, LocalTarget
from cluster.drills.report import drill_report, round_line, table
from cluster.drills.runner import DrillRunner

FAULTS = parse_faults(
    os.environ.get("CUSTODY_KAFKA_DRILL_FAULTS") or "kill,stop,expire,leader,adopter,broker", KAFKA_FAULTS, "local"
)
PER_FAULT = 17 if os.environ.get("CUSTODY_LONG") == "1" else 2
ROUNDS = int(os.environ.get("CUSTODY_KAFKA_DRILL_ROUNDS", str(PER_FAULT * len(FAULTS))))
pytestmark = [
    pytest.mark.zookeeper,
    pytest.mark.hdfs,
    pytest.mark.kafka,
    pytest.mark.slow,
    pytest.mark.timeout(300 + 40 * ROUNDS),
]


@pytest.fixture
def kafka_target(request, zookeeper_ensemble, hdfs_cluster, kafka_broker, tmp_path):
    target = LocalTarget(
        workdir=tmp_path, zookeeper=zookeeper_ensemble, hdfs=hdfs_cluster, kafka=kafka_broker, workload="kafka"
    )
    yield target
    if target.cluster is not None:
        if getattr(request.node, "rep_call", None) is None or request.node.rep_call.failed:
            target.dump_stacks()  # where each node was stuck, in its log
        print(target.tails())
    target.close()


def test_kafka_failover_drill(kafka_target, kafka_broker, tmp_path):
    target = kafka_target
    target.start_all()

    def after_round(entry):
        print(round_line(entry, ROUNDS), json.dumps(entry), flush=True)
        # After each fault: no key read twice from the output topic (read_committed).
        assert entry["sink_duplicates"] == 0, (entry, list(target.sink_duplicates().items())[:5])

    runner = DrillRunner(target, rotation(FAULTS, ROUNDS), on_round=after_round)
    check = runner.run()
    print(check.summary())
    assert check.ok, check.summary()
    # Every key the producer sent, and nothing else, was read once; every round fed more.
    assert check.delivery.expected >= target.kafka_workload.feed and check.created == check.delivery.expected
    result = drill_report(
        runner.rounds,
        FAULTS,
        check,
        runner.samples,
        target=target.kind,
        started_at=runner.started_at,
        workload="kafka",
    )
    path = os.environ.get("CUSTODY_KAFKA_DRILL_REPORT") or str(tmp_path / "drill.json")
    with open(path, "w") as out:
        json.dump(result, out, indent=2)
    print(table(result))
    assert result["ok"]
    assert result["faults"] == {
        fault: ROUNDS // len(FAULTS) + (i < ROUNDS % len(FAULTS)) for i, fault in enumerate(FAULTS)
    }
    failovers = [r for r in runner.rounds if BY_NAME[r["fault"]].fails_over]
    # Every failover round resumed a backlog (see test_cluster_flow_drill for the one
    # expiry that may legitimately find nothing to resume).
    unresumed = [
        r
        for r in failovers
        if "resume" not in r
        and not (r["fault"] == "expire" and r.get("nothing_to_resume") and r["detection"] > SESSION_TIMEOUT)
    ]
    assert not unresumed, unresumed
    if failovers:
        assert result["summary"]["all"]["detection"]["max"] < SESSION_TIMEOUT + 10
    # The broker came back and delivery went on, without a node lost.
    for entry in runner.rounds:
        if entry["fault"] == "broker":
            assert entry["twenty_delivered_after"] < 90 and not entry.get("sessions_lost"), entry
