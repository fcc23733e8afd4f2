"""Kafka to Kafka: records/s through Custody exactly once, beside a plain transactional loop.

An input topic is filled once with `--records` records of 100 bytes (keyed by their
index). Then, in one run, rounds alternate between:

  * `custody`: a standalone node (local WAL and content, as a node holds them) runs
    ConsumeKafka -> UpdateAttribute -> PublishKafka, exactly once: the positions read
    commit in the WAL with the FlowFiles, and each batch goes out in one Kafka
    transaction with its progress record. Timed from the node's start until a
    read_committed reader has seen every record in the output topic.
  * `anchor`: confluent-kafka's transactional consume-transform-produce loop (KIP-447):
    read a batch (read_committed), add the same header UpdateAttribute adds, produce
    it, `send_offsets_to_transaction`, commit. The same batch size. It keeps no WAL,
    no content repository, no provenance and has no failover.

Also in each round: `custody_at_least_once` (PublishKafka's idempotent producer, no
transactions), and `custody_demarcated`: exactly once, with ConsumeKafka joining the
records of a partition read in one task into one FlowFile and PublishKafka splitting
it again (`message_demarcator`, as a NiFi flow that moves small records does), so one
FlowFile carries a batch instead of a record; and `custody_records`: exactly once in
record mode, from a second input topic of as many JSON records of about the same size
(`{"id": n, "pad": "x..."}`): ConsumeKafka reads each message with JsonTreeReader and
writes a partition's batch as one FlowFile of JSON lines, PublishKafka reads them back
and sends each record as a message keyed by its id (the anchor moves its raw records
without parsing them). `ratio_vs_transactional_loop` = median custody records/s over the median
of the anchor (the goal is at least 0.5); `round_ratios` are each round's ratio.

The broker is the harness's (`cluster.services.kafka`), started for the run in a
temporary directory, unless `--bootstrap-servers` names one.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RECORD_BYTES = 100
HEADER = ("stage", b"stamped")


def add_arguments(parser) -> None:
    parser.add_argument("--records", type=int, help="records per run (default 1,000,000; --quick 100,000)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of the input and output topics")
    parser.add_argument("--batch", type=int, default=1000, help="records per session and per transaction")
    parser.add_argument("--rounds", type=int, help="runs of each side, in alternating order (default 3; --quick 1)")
    parser.add_argument("--threads", type=int, default=2, help="the node's task threads")
    parser.add_argument("--bootstrap-servers", help="a broker to use instead of starting the harness's")
    parser.add_argument("--dir", help="directory to run in (default: a fresh temporary directory)")


def run(args) -> dict:
    quick = getattr(args, "quick", False)
    records = args.records or (100_000 if quick else 1_000_000)
    rounds = args.rounds or (1 if quick else 3)
    with (
        run_directory(args.dir, "custody-bench-kafka-") as root,
        broker_servers(args.bootstrap_servers, root) as servers,
    ):
        source, json_source = _new_topic(servers, args.partitions), _new_topic(servers, args.partitions)
        _fill(servers, source, records)
        _fill(servers, json_source, records, json_records=True)
        sides = {
            "anchor": lambda out: _anchor(servers, source, out, records, args.batch),
            "custody": lambda out: _custody(servers, source, out, records, args, root, "exactly_once"),
            "custody_at_least_once": lambda out: _custody(servers, source, out, records, args, root, "at_least_once"),
            "custody_demarcated": lambda out: _custody(
                servers, source, out, records, args, root, "exactly_once", demarcator="\\n"
            ),
            "custody_records": lambda out: _custody(
                servers, json_source, out, records, args, root, "exactly_once", record_mode=True
            ),
        }
        seconds: dict[str, list[float]] = {name: [] for name in sides}
        order = list(sides)
        for round_number in range(rounds):
            for name in order[round_number % len(order) :] + order[: round_number % len(order)]:
                seconds[name].append(sides[name](_new_topic(servers, args.partitions)))
        rates = {name: [records / s for s in times] for name, times in seconds.items()}
        custody, anchor = statistics.median(rates["custody"]), statistics.median(rates["anchor"])
        return {
            "records": records,
            "record_bytes": RECORD_BYTES,
            "batch": args.batch,
            "partitions": args.partitions,
            "rounds": rounds,
            "records_per_sec": round(custody, 1),
            "anchor_records_per_sec": round(anchor, 1),
            "ratio_vs_transactional_loop": round(custody / anchor, 3),
            "at_least_once_records_per_sec": round(statistics.median(rates["custody_at_least_once"]), 1),
            "demarcated_records_per_sec": round(statistics.median(rates["custody_demarcated"]), 1),
            "ratio_demarcated_vs_transactional_loop": round(statistics.median(rates["custody_demarcated"]) / anchor, 3),
            "record_mode_records_per_sec": round(statistics.median(rates["custody_records"]), 1),
            "ratio_record_mode_vs_transactional_loop": round(statistics.median(rates["custody_records"]) / anchor, 3),
            "round_ratios": [round(c / a, 3) for c, a in zip(rates["custody"], rates["anchor"], strict=True)],
            "seconds": {name: [round(s, 2) for s in times] for name, times in seconds.items()},
        }


@contextmanager
def run_directory(directory: str | None, prefix: str) -> Iterator[Path]:
    """`directory` (kept), or a fresh temporary one removed after the run."""
    root = Path(directory or tempfile.mkdtemp(prefix=prefix))
    root.mkdir(parents=True, exist_ok=True)
    try:
        yield root
    finally:
        if not directory:
            shutil.rmtree(root, ignore_errors=True)


@contextmanager
def broker_servers(servers: str | None, root: Path) -> Iterator[str]:
    """`servers`, or the harness's broker's, started under `root` for the run, with both
    of the JIT's compilers (`peak`), as a broker on a machine of its own runs."""
    if servers:
        yield servers
        return
    from cluster.services.kafka import KafkaBroker

    broker = KafkaBroker(root / "services", peak=True)
    broker.start()
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


def _new_topic(servers: str, partitions: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(60)
    return topic


def _fill(servers: str, topic: str, records: int, json_records: bool = False) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": servers, "linger.ms": 20, "batch.size": 1 << 20})
    for n in range(records):
        key = b"%010d" % n
        value = key + b"x" * (RECORD_BYTES - len(key))
        if json_records:  # as many bytes: {"id":"0000000001","pad":"xx..."}
            value = b'{"id":"%s","pad":"%s"}' % (key, b"x" * (RECORD_BYTES - len(key) - 20))
        while True:
            try:
                producer.produce(topic, value, key=key)
                break
            except BufferError:
                producer.poll(0.1)
        if n % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError(f"the input topic {topic} was not filled within 120 s")


class _Counter(threading.Thread):
    """Counts the records a read_committed reader sees in `topic` until `target`."""

    def __init__(self, servers: str, topic: str, target: int):
        super().__init__(name="bench-kafka-counter", daemon=True)
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": f"bench-counter-{uuid.uuid4().hex}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([topic])
        self.target, self.count = target, 0
        self.done = threading.Event()
        self.finished_at = 0.0

    def run(self) -> None:
        try:
            while self.count < self.target:
                self.count += sum(1 for m in self.consumer.consume(10_000, 0.2) if m.error() is None)
            self.finished_at = time.perf_counter()
        finally:
            self.consumer.close()
            self.done.set()

    def wait(self, timeout: float, what: str) -> float:
        if not self.done.wait(timeout) or self.count < self.target:
            raise RuntimeError(f"{what}: {self.count} of {self.target} records in the output within {timeout:.0f} s")
        return self.finished_at


def _anchor(servers: str, source: str, out: str, records: int, batch: int) -> float:
    from confluent_kafka import Consumer, Producer, TopicPartition

    counter = _Counter(servers, out, records)
    counter.start()
    consumer = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": f"bench-anchor-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    producer = Producer({"bootstrap.servers": servers, "transactional.id": f"bench-anchor-{out}", "linger.ms": 5})
    started = time.perf_counter()
    producer.init_transactions(60)
    metadata = consumer.list_topics(source, timeout=30)
    consumer.assign([TopicPartition(source, p, 0) for p in metadata.topics[source].partitions])
    taken = 0
    try:
        while taken < records:
            messages = [m for m in consumer.consume(batch, 1.0) if m.error() is None]
            if not messages:
                continue
            producer.begin_transaction()
            for message in messages:
                headers = list(message.headers() or []) + [HEADER]
                producer.produce(out, message.value(), key=message.key(), headers=headers)
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata()
            )
            producer.commit_transaction(60)
            taken += len(messages)
        return counter.wait(600, "the transactional loop") - started
    finally:
        consumer.close()


def _custody(
    servers: str,
    source: str,
    out: str,
    records: int,
    args,
    root: Path,
    guarantee: str,
    demarcator: str | None = None,
    record_mode: bool = False,
) -> float:
    from cluster.node.standalone import NodeSettings, StandaloneNode
    from flow.loading import parse_flow

    definition = parse_flow(
        {
            "name": "bench-kafka",
            "services": [
                {"id": "json", "type": "JsonTreeReader"},
                {
                    "id": "lines",
                    "type": "JsonRecordSetWriter",
                    "properties": {"output_grouping": "one-line-per-object"},
                },
            ],
            "processors": [
                {
                    "id": "consume",
                    "type": "ConsumeKafka",
                    "properties": {
                        "bootstrap_servers": servers,
                        "topics": source,
                        "auto_offset_reset": "earliest",
                        "max_poll_records": args.batch,
                        **({"message_demarcator": demarcator} if demarcator else {}),
                        **({"record_reader": "json", "record_writer": "lines"} if record_mode else {}),
                    },
                    "auto_terminate": ["parse.failure"] if record_mode else [],  # none: the input is all JSON
                },
                {"id": "stamp", "type": "UpdateAttribute", "properties": {HEADER[0]: HEADER[1].decode()}},
                {
                    "id": "publish",
                    "type": "PublishKafka",
                    "properties": {
                        "bootstrap_servers": servers,
                        "topic": out,
                        **({} if record_mode else {"key": "${kafka.key}"}),
                        "attributes_as_headers": HEADER[0],
                        "delivery_guarantee": guarantee,
                        "batch_size": args.batch,
                        "transactional_id_prefix": f"bench-{out}",
                        **({"message_demarcator": demarcator} if demarcator else {}),
                        **(
                            {"record_reader": "json", "record_writer": "lines", "message_key_field": "id"}
                            if record_mode
                            else {}
                        ),
                    },
                    "auto_terminate": ["success"],
                },
            ],
            "connections": [
                {"source": "consume", "relationships": ["success"], "destination": "stamp"},
                {"source": "stamp", "destination": "publish"},
                {"source": "publish", "relationships": ["failure"], "destination": "publish"},
            ],
        }
    )
    counter = _Counter(servers, out, records)
    counter.start()
    node = StandaloneNode(definition, str(root / f"node-{out}"), NodeSettings(threads=args.threads))
    node.start(paused=True)
    started = time.perf_counter()
    node.resume()
    try:
        return counter.wait(1800, f"custody ({guarantee})") - started
    finally:
        node.stop()
