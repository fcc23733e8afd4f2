"""ConsumeKafka in a cluster of real `custody node` processes (ZooKeeper, HDFS, the
Kafka broker): each partition is read by one shard at a time (its hold in ZooKeeper),
and when a node is SIGKILLed its adopter frees the dead shard's partitions at the
positions its WAL committed, so that the survivor takes them over; when the node comes
back, the survivor releases half of them to it: every record is delivered once,
counted by id from outside (`cluster.drills.checker`)."""

from __future__ import annotations

import signal
import time

import pytest

from cluster.drills.checker import check_delivery, ids_in_directory
from cluster.services.process import wait_until

from .kafka_helpers import new_topic
from .test_kafka_consume import produce
from .test_standalone_cli import ROOT

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.kafka, pytest.mark.slow]

FLOW = ROOT / "examples" / "kafka-to-files.yaml"
COUNT = 2_000
MORE = 1_000  # after the killed node is back


def holders(cluster, processor: str = "consume") -> dict[str, str | None]:
    """Each partition's holder, as ZooKeeper has it."""
    return {name: hold.holder for name, (hold, _) in cluster.store.kafka_holds(processor).all().items()}


def test_a_killed_nodes_partitions_move_to_the_survivor_and_each_record_is_taken_once(flow_cluster, kafka_broker):
    cluster = flow_cluster
    topic = new_topic(kafka_broker, 4)
    values = [f"rec-{i:05d}" for i in range(COUNT)]
    parameters = {"bootstrap_servers": kafka_broker.bootstrap_servers, "topic": topic}
    n1, n2 = cluster.start_joined(["n1", "n2"], flow=str(FLOW), parameters=parameters)
    produce(kafka_broker, topic, values[: COUNT // 2])
    # Each node's home shard holds two of the four partitions, and both deliver.
    wait_until(
        lambda: sorted(holders(cluster).values()) == sorted([n1.incarnation] * 2 + [n2.incarnation] * 2),
        60,
        "the four partitions held two by each node",
    )
    wait_until(lambda: len(ids_in_directory(cluster.sink)) >= COUNT // 4, 60, "records delivered")
    n1.signal(signal.SIGKILL)
    killed = time.monotonic()
    produce(kafka_broker, topic, values[COUNT // 2 :])
    wait_until(
        lambda: set(holders(cluster).values()) == {n2.incarnation}, 90, f"{n2.incarnation} to hold every partition"
    )
    moved = time.monotonic() - killed
    wait_until(lambda: len(ids_in_directory(cluster.sink)) >= COUNT, 120, "every record delivered")
    report = check_delivery(values, ids_in_directory(cluster.sink))
    assert (len(report.lost), report.duplicated, report.unexpected) == (0, {}, []), report

    # The node comes back as a new incarnation: the survivor releases two partitions
    # between two of its sessions, at its committed positions, and the newcomer takes them.
    back = cluster.start("n1")
    back.wait("joined", timeout=90)
    more = [f"more-{i:05d}" for i in range(MORE)]
    produce(kafka_broker, topic, more)
    wait_until(
        lambda: sorted(holders(cluster).values()) == sorted([back.incarnation] * 2 + [n2.incarnation] * 2),
        60,
        "the partitions spread over both nodes again",
    )
    wait_until(lambda: len(ids_in_directory(cluster.sink)) >= COUNT + MORE, 120, "the later records delivered")
    report = check_delivery(values + more, ids_in_directory(cluster.sink))
    assert (len(report.lost), report.duplicated, report.unexpected) == (0, {}, []), report
    print(f"the dead node's partitions were taken over {moved:.1f} s after its SIGKILL")
