"""PublishKafka's fencing across a real takeover, the zombie test: a cluster of two real
`custody node` processes (ZooKeeper, HDFS, the Kafka broker) runs
examples/generate-to-kafka.yaml (PublishKafka paced to a transaction every 100 ms); the
victim is SIGSTOPped while its producer holds a
Kafka transaction open, past its session timeout, so that the survivor adopts its shard
and, with the shard's transactional id, fences its producer and delivers its backlog;
then the victim is SIGCONTed as a zombie, which must stop
(its commit gate refuses the Kafka commit first, as its session is over, and the abort
then meets the fence; without the gate, the commit meets it). Its open transaction
must have been aborted, not committed.
A read_committed consumer of the output topic, outside the cluster, must then see every
id generated exactly once (`cluster.drills.checker.check_delivery`)."""

from __future__ import annotations

import logging
import re
import signal
import time
import uuid
from pathlib import Path

import pytest
import yaml

from cluster.drills.checker import check_delivery
from cluster.drills.runner import wait_moved
from cluster.node.events import NodeEvent
from cluster.services.process import ServiceError, wait_until

from .kafka_helpers import new_topic, read_records
from .test_standalone_cli import ROOT

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.kafka, pytest.mark.slow]

FLOW = ROOT / "examples" / "generate-to-kafka.yaml"
QUEUE = "generate/success/publish"
VICTIM, SURVIVOR = "n1", "n2"
COUNTS = {VICTIM: 1000, SURVIVOR: 100}
PARTITIONS = {VICTIM: 0, SURVIVOR: 1}  # each node's FlowFiles go to a partition of their own
# Before the victim is paused, its partition's committed end (records, and a marker a
# transaction) passes this offset ...
COMMITTED_FIRST = 50
BACKLOG = 200  # ... and it still has this many FlowFiles queued before PublishKafka
# A commit (or abort) that the producer sent before the SIGSTOP ends on the local broker
# within milliseconds: the stop is undone as soon as the transaction ends, and tried
# again. A transaction still open this long after the stop is held by the stopped
# producer: the broker ends it only at its transaction timeout (60 s) or when the
# adopter's init_transactions fences the producer (past the 4 s session timeout).
COMMITTING_S = 2.0
_LOG = logging.getLogger(__name__)  # librdkafka's own complaints
# PublishKafka's pace in this test: a transaction of `batch` (10) records every 100 ms.
PUBLISH_EVERY = "100 ms"


def paced_flow(directory: Path) -> Path:
    """The example flow with PublishKafka run every PUBLISH_EVERY: the victim's 1,000
    FlowFiles then take about 10 s to publish, so its backlog is there to be seen
    (unpaced, a node published them in 0.8 s on CI, less than one look at the broker
    and the admin API takes on a loaded machine, and the test waited for a backlog that
    was gone)."""
    flow = yaml.safe_load(FLOW.read_text())
    publish = next(processor for processor in flow["processors"] if processor["id"] == "publish")
    publish["scheduling"] = {**publish.get("scheduling", {}), "run_schedule": PUBLISH_EVERY}
    path = directory / "generate-to-kafka-paced.yaml"
    path.write_text(yaml.safe_dump(flow, sort_keys=False))
    return path


class PartitionEnds:
    """One partition's end as two consumers see it: the high watermark (every record
    written, those of open and aborted transactions too) and the last stable offset (a
    read_committed consumer's end: every transaction below it has ended). A transaction
    is open in the partition while the second is below the first."""

    def __init__(self, broker, topic: str, partition: int):
        from confluent_kafka import Consumer, TopicPartition

        self.partition = TopicPartition(topic, partition)
        self.consumers = {
            isolation: Consumer(
                {
                    "bootstrap.servers": broker.bootstrap_servers,
                    "group.id": f"ends-{uuid.uuid4().hex}",
                    "isolation.level": isolation,
                    "logger": _LOG,
                }
            )
            for isolation in ("read_uncommitted", "read_committed")
        }

    def end(self, isolation: str) -> int:
        return self.consumers[isolation].get_watermark_offsets(self.partition, timeout=5, cached=False)[1]

    def transaction_open(self) -> bool:
        # The high watermark first: a stable offset read after it and still below it
        # means a transaction was open when the stable offset was read.
        high = self.end("read_uncommitted")
        return self.end("read_committed") < high

    def close(self) -> None:
        for consumer in self.consumers.values():
            consumer.close()


def pause_inside_a_transaction(node, ends: PartitionEnds) -> tuple[float, int, int]:
    """SIGSTOP `node` while its producer holds a transaction open in `ends`' partition
    (records written, no commit sent): the wall-clock time of the stop, and the offsets
    [start, end) that the held transaction's records (and nothing else) may occupy."""

    def paused() -> tuple[float, int, int] | None:
        if not ends.transaction_open():
            return None
        node.signal(signal.SIGSTOP)
        stopped_at = time.time()
        held = None
        try:
            wait_until(lambda: not ends.transaction_open(), COMMITTING_S, "the transaction to end", interval=0.02)
        except ServiceError:
            held = (stopped_at, ends.end("read_committed"), ends.end("read_uncommitted"))
        finally:
            if held is None:  # it was committing: let it go on, and try again
                node.signal(signal.SIGCONT)
        return held

    return wait_until(paused, 60, f"{node.name} to be stopped inside a Kafka transaction", interval=0)


def test_a_paused_publishers_shard_is_taken_over_its_zombie_is_fenced_and_each_id_is_read_once(
    flow_cluster, kafka_broker, tmp_path
):
    began = time.monotonic()
    cluster = flow_cluster
    topic = new_topic(kafka_broker, partitions=2)
    prefix = f"zombie-{uuid.uuid4().hex[:8]}"
    common = {
        "bootstrap_servers": kafka_broker.bootstrap_servers,
        "topic": topic,
        "progress_topic": f"progress-{uuid.uuid4().hex[:8]}",
        "prefix": prefix,
    }

    flow = paced_flow(tmp_path)

    def config(name: str) -> dict:
        return {"flow": str(flow), "count": COUNTS[name], "parameters": {**common, "partition": PARTITIONS[name]}}

    # The survivor joins first, so that the victim's backlog is not drained while it starts.
    (survivor,) = cluster.start_joined([SURVIVOR], **config(SURVIVOR))
    victim_node = cluster.start(VICTIM, once=True, **config(VICTIM))
    victim = victim_node.wait(NodeEvent.JOINED, timeout=90)["incarnation"]
    ends = PartitionEnds(kafka_broker, topic, PARTITIONS[VICTIM])
    try:
        wait_until(
            lambda: ends.end("read_committed") >= COMMITTED_FIRST and cluster.queued(victim, QUEUE) >= BACKLOG,
            60,
            f"{victim} to commit records up to offset {COMMITTED_FIRST} with {BACKLOG} FlowFiles still queued",
        )
        stopped_at, held_from, held_to = pause_inside_a_transaction(victim_node, ends)
    finally:
        ends.close()

    # The survivor adopts the shard; its PublishKafka in the adopted shard makes a producer
    # with the shard's transactional id, whose init_transactions fences the stopped one
    # (aborting its open transaction), and commits a first batch.
    wait_moved(cluster, victim)
    assert cluster.shard(victim).owner == survivor.incarnation, cluster.shard(victim)
    first_output = min(wait_until(lambda: cluster.first_outputs(victim), 60, "the adopted shard's first delivery"))
    delivered = survivor.find(NodeEvent.FIRST_OUTPUT, shard=victim)[0]
    assert delivered["component"] == "publish", delivered
    recovered = survivor.find(NodeEvent.RECOVERED, shard=victim)[-1]
    assert recovered["flowfiles"] + recovered["swapped_flowfiles"] > 0, recovered  # a backlog to deliver

    # The zombie wakes inside its transaction: its producer is told it was fenced, its
    # shard is no longer its own (its session expired, its WAL was fenced), and with
    # --once the process exits instead of rejoining.
    victim_node.signal(signal.SIGCONT)
    dead = victim_node.wait(NodeEvent.DEAD, timeout=60, incarnation=victim)
    wait_until(lambda: victim_node.process.poll() is not None, 60, f"{victim}'s process to exit (--once)")
    assert victim_node.process.returncode == 0, victim_node.tail()
    log = _log(victim_node)
    # PublishKafka's own line when a send or commit meets the fence; librdkafka's (through
    # PublishKafka's logger) also when the commit gate refused first and the abort met it.
    fenced = re.findall(
        rf"fenced by another producer with transactional id {re.escape(prefix)}-{re.escape(victim)}-publish"
        r"|flow\.processor\.publish: .*fenced by a newer instance",
        log,
    )
    # Reported, not asserted: the line is written when the zombie's abort returns, which
    # a loaded machine may let its exit overtake. What the broker holds (below) is the proof.
    print(f"{victim}'s log shows the fence: {fenced[0] if fenced else 'not before its exit'}")

    cluster.wait_settled(timeout=120)
    committed = read_records(kafka_broker, topic)
    expected = [f"{name}-{i}" for name, count in COUNTS.items() for i in range(count)]
    report = check_delivery(expected, [message.key().decode() for message in committed])
    assert (len(report.lost), report.duplicated, report.unexpected) == (0, {}, []), report.summary()
    assert all(message.value() == message.key() for message in committed)  # each record's content is its id
    # The zombie's open transaction was aborted: its records are in the log, none committed.
    written = read_records(kafka_broker, topic, "read_uncommitted")
    held = range(held_from, held_to)
    victims = PARTITIONS[VICTIM]
    assert not [m.offset() for m in committed if m.partition() == victims and m.offset() in held]
    assert sum(1 for m in written if m.partition() == victims and m.offset() in held) == len(held)
    before = sum(1 for m in committed if m.partition() == victims and m.offset() < held_from)
    print(
        f"zombie test: {report.summary()}; {len(written) - len(committed)} aborted records in the log "
        f"(read_uncommitted {len(written)}), {len(held)} of them the zombie's open transaction; the victim had "
        f"committed {before} records when stopped, and its adopter recovered {recovered['flowfiles']} queued "
        f"FlowFiles; first delivery from the adopted shard {first_output - stopped_at:.1f} s after the SIGSTOP; "
        f"the zombie logged {fenced[0]!r}; its death: {dead['reason']}; {time.monotonic() - began:.0f} s in all"
    )


def _log(node) -> str:
    node.log.flush()
    with open(node.log.name, errors="replace") as log:
        return log.read()
