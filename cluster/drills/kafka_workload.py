"""The Kafka workload of the failover drills (`custody drill --workload kafka`): Kafka in,
Kafka out, exactly once, checked from outside as a Kafka user reads it.

The nodes run examples/kafka-cluster.yaml: ConsumeKafka reads the input topic (each
partition held by one shard at a time, the dead shard's moved with it), UpdateAttribute
stamps each record, and PublishKafka writes it to the output topic, five FlowFiles a
Kafka transaction every 100 ms, under the transactional id of its shard (an adopter's
producer fences the dead owner's). PublishKafka is the slow step, so the queue in front
of it grows past its swap threshold and a node that dies leaves a backlog.

Outside the cluster:

* `KafkaInput`, a producer with idempotence on, writes keyed records (`k0000001`, ...)
  to the input topic, round-robin over its partitions; a key counts as sent once the
  broker acknowledged it. Before each round the drill keeps at least one feed of
  records in flight (`KafkaWorkload.prepare_round`), as the flow workload's sources make
  their own;
* `OutputTopic`, a consumer with `isolation.level=read_committed`, reads the output
  topic as it grows and counts each key it holds: records of an aborted or fenced
  transaction are never seen, a key seen twice is a duplicate.

`KafkaWorkload.check` counts, once every node stopped, the keys lost, duplicated and
unexpected in the output topic (`checker.check_delivery`), with the provenance of
every node (each FlowFile received once and sent once) and the FlowFiles left in WALs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable

from flow.processors.kafka.connection import LibrdkafkaLog
from flow.processors.kafka.delivery import log_end

from ..services.process import ServiceError, wait_until
from .checker import ClusterReport, check_delivery, cluster_provenance
from .harness import PROJECT_ROOT

FLOW = os.path.join(PROJECT_ROOT, "examples", "kafka-cluster.yaml")
QUEUE = "stamp/success/publish"  # the queue in front of PublishKafka, where a backlog builds up
PARTITIONS_PER_NODE = 2
# Records a node takes a feed: at 50 a second each (PublishKafka's 5 every 100 ms), a
# feed lasts about 12 s, so a round's fault meets records in flight.
FEED_PER_NODE = 600
READ_BATCH = 1_000
# Each output record's headers (the flow stamps them): the input record it was made of, the FlowFile that sent it.
INPUT_HEADERS = ("drill.input", "drill.flowfile")
BROKER_WAIT_S = 30.0
log = logging.getLogger(__name__)


def _client(config: dict) -> dict:
    """librdkafka's settings for the drill's own clients: its log lines (a refused
    connection several times a second while the broker fault holds it down) at most one
    a minute of each kind."""
    return {**config, "logger": LibrdkafkaLog(log)}


class KafkaInput:
    """The producer outside the cluster. Not thread-safe: the round loop feeds it."""

    def __init__(self, bootstrap_servers: str, topic: str, partitions: int):
        self.bootstrap_servers, self.topic, self.partitions = bootstrap_servers, topic, partitions
        self.sent: list[str] = []  # the keys the broker acknowledged, in order

    def send(self, count: int) -> list[str]:
        """`count` new keyed records, spread evenly over the partitions; returns once the
        broker acknowledged each (ServiceError naming the first refusal otherwise)."""
        from confluent_kafka import Producer

        producer = Producer(
            _client({"bootstrap.servers": self.bootstrap_servers, "enable.idempotence": True, "linger.ms": 5})
        )
        first = len(self.sent)
        keys = [f"k{first + index:07d}" for index in range(count)]
        refused: list[str] = []

        def report(error, message) -> None:
            if error is not None:
                refused.append(f"{message.key().decode()}: {error}")

        for index, key in enumerate(keys):
            value = f"{key} drill record {first + index}".encode()
            producer.produce(self.topic, value, key.encode(), partition=index % self.partitions, on_delivery=report)
            producer.poll(0)
        left = producer.flush(BROKER_WAIT_S)
        if left or refused:
            raise ServiceError(
                f"the drill's producer could not write {count} records to {self.topic}: "
                + (f"{left} unacknowledged after {BROKER_WAIT_S:.0f} s" if left else f"refused {refused[:3]}")
            )
        self.sent += keys
        return keys


class OutputTopic:
    """The output topic as a read_committed consumer sees it, read as it grows.
    Thread-safe: the drill's sampler counts while the round loop checks."""

    def __init__(self, bootstrap_servers: str, topic: str):
        from confluent_kafka import Consumer

        self.topic = topic
        self._settings = _client({"bootstrap.servers": bootstrap_servers, "group.id": "custody-drill-watermarks"})
        self._lock = threading.Lock()
        self._consumer = Consumer(
            _client(
                {
                    "bootstrap.servers": bootstrap_servers,
                    "group.id": f"custody-drill-reader-{uuid.uuid4().hex[:12]}",
                    "isolation.level": "read_committed",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                }
            )
        )
        self._assigned: list[int] = []
        # key -> where each record carrying it was read (`record_place`: a duplicate's report)
        self._places: dict[str, list[str]] = {}

    def delivered(self) -> int:
        """Records read so far (each duplicate counted)."""
        with self._lock:
            self._read()
            return sum(len(places) for places in self._places.values())

    def duplicates(self) -> dict[str, list[str]]:
        """Keys read more than once -> where each record carrying it was read, as
        `SinkDirectory.duplicates` gives the files that carry an id: the partition and
        offset, the record's timestamp, the input record it was made of and the FlowFile
        that sent it (`INPUT_HEADERS`): one FlowFile sent twice, one input record taken
        twice, or a key the input topic holds twice."""
        with self._lock:
            self._read()
            return {key: list(places) for key, places in self._places.items() if len(places) > 1}

    def keys(self) -> list[str]:
        """Every key read, once per record."""
        with self._lock:
            return [key for key, places in self._places.items() for _ in places]

    def read_to_end(self, timeout: float = 60.0) -> None:
        """Read until the consumer's position in each partition reaches its high
        watermark as it is now (transaction markers and aborted records count towards
        it): every transaction has ended and its committed records were read. (Not the
        last stable offset a read_committed consumer is told: a transaction left open
        would hide the committed records after it, and they would count as lost.)"""
        from confluent_kafka import TopicPartition

        def found() -> bool:
            with self._lock:
                return self._assign()

        wait_until(found, timeout, f"the topic {self.topic} to be found")
        ends = {p: high for p, (_, high) in log_end(self._settings, self.topic, self._assigned).items()}

        def at_end() -> bool:
            with self._lock:
                self._read()
                positions = self._consumer.position([TopicPartition(self.topic, p) for p in self._assigned])
                return all(ends[p.partition] == 0 or p.offset >= ends[p.partition] for p in positions)

        wait_until(at_end, timeout, f"a read_committed consumer to read {self.topic} to its end", interval=0)

    def close(self) -> None:
        with self._lock:
            self._consumer.close()

    def _assign(self) -> bool:
        """Read every partition of the topic from its start, once it exists; whether it does."""
        from confluent_kafka import TopicPartition

        if not self._assigned:
            topics = self._consumer.list_topics(self.topic, timeout=10).topics
            if self.topic not in topics or topics[self.topic].error is not None:
                return False
            self._assigned = sorted(topics[self.topic].partitions)
            self._consumer.assign([TopicPartition(self.topic, p, 0) for p in self._assigned])
        return True

    def _read(self) -> None:
        """What arrived since the last read (the lock is held)."""
        if not self._assign():
            return
        while True:
            messages = self._consumer.consume(num_messages=READ_BATCH, timeout=0.2)
            for message in messages:
                if message.error() is None:
                    key = (message.key() or b"").decode(errors="replace")
                    self._places.setdefault(key, []).append(record_place(message))
            if len(messages) < READ_BATCH:
                return


def record_place(message) -> str:
    """Where a record of the output topic was read, and what sent it."""
    headers = dict(message.headers() or [])
    made_of, sent_by = ((headers.get(name) or b"?").decode(errors="replace") for name in INPUT_HEADERS)
    _, stamp = message.timestamp()
    return (
        f"{message.topic()}[{message.partition()}]@{message.offset()} at {stamp / 1000:.3f}, made of {made_of}, "
        f"by FlowFile {sent_by}"
    )


def progress_naming(bootstrap_servers: str, topic: str, flowfiles: set[str]) -> dict[str, str]:
    """For a duplicate's report: each of `flowfiles` -> the records of PublishKafka's
    progress topic that name it (`flow.processors.kafka.progress`): the transactional id,
    partition, offset and time of each, and whether a read_committed reader sees it
    (else its transaction was aborted, or is still open)."""
    from confluent_kafka import Consumer, TopicPartition

    from flow.processors.kafka.progress import ProgressRecordError, unpack

    def read(isolation: str) -> dict[tuple[int, int], tuple[str, float, frozenset[str]]]:
        group = f"custody-drill-progress-{uuid.uuid4().hex[:12]}"
        settings = {"bootstrap.servers": bootstrap_servers, "group.id": group}
        consumer = Consumer(_client({**settings, "isolation.level": isolation, "enable.auto.commit": False}))
        records = {}
        try:
            partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
            ends = log_end(_client(settings), topic, partitions)
            consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
            deadline = time.monotonic() + BROKER_WAIT_S / 3  # a transaction left open stops read_committed
            while time.monotonic() < deadline:
                positions = consumer.position([TopicPartition(topic, p) for p in partitions])
                if all(
                    p.offset >= ends[p.partition][1] or ends[p.partition][0] == ends[p.partition][1] for p in positions
                ):
                    break
                for message in consumer.consume(num_messages=READ_BATCH, timeout=0.2):
                    if message.error() is not None:
                        continue
                    try:
                        named = unpack(message.value(), topic)
                    except ProgressRecordError:
                        continue
                    key = (message.key() or b"").decode(errors="replace")
                    place = (message.partition() or 0, message.offset() or 0)
                    records[place] = (key, message.timestamp()[1] / 1000, named)
        finally:
            consumer.close()
        return records

    try:
        committed, written = read("read_committed"), read("read_uncommitted")
    except Exception as error:  # noqa: BLE001 - a report's detail; the duplicate is reported all the same
        return {flowfile: f"progress topic {topic} not read: {error}" for flowfile in flowfiles}
    said: dict[str, list[str]] = {}
    for (partition, offset), (key, stamp, named) in sorted(written.items()):
        state = "committed" if (partition, offset) in committed else "NOT committed"
        for flowfile in named & flowfiles:
            said.setdefault(flowfile, []).append(f"{key} {topic}[{partition}]@{offset} at {stamp:.3f} {state}")
    return {flowfile: "named by " + ", ".join(lines) for flowfile, lines in said.items()}


class KafkaWorkload:
    """The Kafka workload of one drill run, on the broker at `bootstrap_servers`: its
    topics (named for the run), its producer and its reader."""

    name = "kafka"
    flow = FLOW
    queue = QUEUE

    def __init__(self, bootstrap_servers: str, run: str, nodes: int, *, feed_per_node: int = FEED_PER_NODE):
        self.bootstrap_servers, self.run = bootstrap_servers, run
        self.partitions = PARTITIONS_PER_NODE * nodes
        self.feed = feed_per_node * nodes
        self.input_topic, self.output_topic = f"{run}-in", f"{run}-out"
        self.input = KafkaInput(bootstrap_servers, self.input_topic, self.partitions)
        self.output: OutputTopic | None = None
        self._named: dict[str, str] = {}  # a duplicate's FlowFile -> the progress records naming it

    def create_topics(self) -> None:
        """The input topic with `partitions` partitions, the output topic with as many."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(_client({"bootstrap.servers": self.bootstrap_servers}))
        futures = admin.create_topics(
            [NewTopic(topic, self.partitions, 1) for topic in (self.input_topic, self.output_topic)],
            operation_timeout=BROKER_WAIT_S,
        )
        for topic, future in futures.items():
            try:
                future.result(BROKER_WAIT_S)
            except Exception as error:  # noqa: BLE001 - one clear error, whatever the client raised
                raise ServiceError(f"could not create the drill's topic {topic}: {error}") from error
        self.output = OutputTopic(self.bootstrap_servers, self.output_topic)

    def node_config(self, bootstrap_servers: str | None = None) -> dict:
        """`FlowCluster.start`'s flow and parameters for every node of the run; the nodes
        reach the broker at `bootstrap_servers` (by default where the drill does)."""
        return {
            "flow": self.flow,
            "parameters": {
                "bootstrap_servers": bootstrap_servers or self.bootstrap_servers,
                "input": self.input_topic,
                "output": self.output_topic,
                "group": self.run,
                "prefix": self.run,
                "progress_topic": f"{self.run}-progress",
            },
        }

    def flow_document(self, bootstrap_servers: str) -> dict:
        """The workload's flow as a document for a rolling deploy (what `custody flow
        deploy` sends), with this run's parameters: topics, group and transactional ids
        named for the run, the broker where the nodes reach it."""
        from flow.definition import read_flow_document

        document = read_flow_document(self.flow)
        document["parameters"] = {**document.get("parameters", {}), **self.node_config(bootstrap_servers)["parameters"]}
        return document

    def prepare_round(self) -> None:
        """Keep at least one feed of records in flight: send one when fewer are."""
        if len(self.input.sent) - self.delivered() < self.feed:
            self.send_feed()

    def send_feed(self) -> None:
        """One feed of records more (`feed`, spread over every partition)."""
        self.input.send(self.feed)

    # -- the sink view (`flow_cluster.FlowWorkloadViews.sink_view`) -------------------------
    def delivered(self) -> int:
        return self.output.delivered() if self.output is not None else 0

    def duplicates(self) -> dict[str, list[str]]:
        """`OutputTopic.duplicates`, each place followed by the progress records that name
        the FlowFile it was sent by (`progress_naming`): which transactional ids sent
        it, in which transactions, committed or not."""
        found = self.output.duplicates() if self.output is not None else {}
        flowfiles = {place.rsplit(" ", 1)[-1] for places in found.values() for place in places}
        new = flowfiles - set(self._named)
        if new:  # read once for each: the drill asks after every round
            naming = progress_naming(self.bootstrap_servers, f"{self.run}-progress", new)
            self._named.update({flowfile: naming.get(flowfile) or "named by no progress record" for flowfile in new})
        return {
            key: [f"{place}; {self._named[place.rsplit(' ', 1)[-1]]}" for place in places]
            for key, places in found.items()
        }

    def pending(self) -> int:
        """Keys sent and not yet read from the output topic (duplicates aside)."""
        if self.output is None:
            return len(self.input.sent)
        self.output.delivered()
        return len(set(self.input.sent) - set(self.output.keys()))

    # -- the end ------------------------------------------------------------------------------
    def check(
        self, provenance_directories: Iterable[str], wal_counts: dict, *, events: list | None = None
    ) -> ClusterReport:
        """Once every node stopped: the output topic read to its end, read_committed, and
        its keys counted against those sent; each FlowFile that ConsumeKafka received
        from this run's input topic sent once (provenance, cluster-wide); no FlowFile
        left in a WAL. `events`, if given, are the cluster's provenance events read
        elsewhere (a compose target's `StoredEvent`s), instead of those in
        `provenance_directories`."""
        from repositories.provenance import EventType

        if self.output is None:
            raise ServiceError("the drill's topics were never created")
        self.output.read_to_end()
        if events is None:
            events = cluster_provenance(provenance_directories)
        # This run's: a compose project's nodes keep the provenance of earlier drills, and
        # ConsumeKafka's transit URI ends with the topic it read.
        received = Counter(
            e.flowfile_uuid
            for e in events
            if e.event_type is EventType.RECEIVE
            and e.component_id == "consume"
            and (e.transit_uri or "").endswith(f"/{self.input_topic}")
        )
        sends = Counter(e.flowfile_uuid for e in events if e.event_type is EventType.SEND)
        return ClusterReport(
            delivery=check_delivery(self.input.sent, self.output.keys()),
            created=len(received),
            created_twice=sorted(u for u, n in received.items() if n > 1),
            sends_missing=sorted(set(received) - set(sends)),
            sends_duplicated={u: n for u, n in sorted(sends.items()) if n > 1},
            live_flowfiles=dict(wal_counts),
        )

    def close(self) -> None:
        if self.output is not None:
            self.output.close()
            self.output = None


class WorkloadFeed:
    """A drill target's `prepare_round` and `more_work` (see `targets.DrillTarget`) for
    either workload: the Kafka workload's records come from the drill's producer, the
    files workload's from the nodes' own sources. Mixed into a target that sets
    `kafka_workload` (None for the files workload)."""

    kafka_workload: KafkaWorkload | None = None

    def prepare_round(self) -> None:
        if self.kafka_workload is not None:
            self.kafka_workload.prepare_round()

    def more_work(self) -> bool:
        if self.kafka_workload is None:
            return False  # a new incarnation makes more
        self.kafka_workload.send_feed()
        return True


def run_name() -> str:
    """A name of its own for a drill run's topics, group and transactional ids."""
    return time.strftime("drill-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
