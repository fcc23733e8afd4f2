"""Kafka takeover: seconds until an adopter's PublishKafka producer is ready, beside a plain producer's init.

Each round, a dead owner first: a process makes a transactional producer, opens a
transaction, writes records to the output topic and a progress record, and SIGKILLs
itself, so that the id's transaction is left open (as a node killed mid-batch leaves
it). Then, for a new id each round, alternating:

  * `custody`: PublishKafka's new producer for the id, as an adopter makes it
    (`flow.processors.kafka.transactional.transactional_producer`): the dead owner's
    open transaction ended and its producer fenced, the id's and other ids' hanging
    transactions looked for, `init_transactions`, the progress read back. Timed from
    its start until it is ready to send.
  * `anchor`: confluent-kafka's own transactional producer for the id, timed from its
    making to the end of its `init_transactions` (which fences the dead owner too): what
    a Kafka application that takes over a transactional id pays, with no progress read
    back and no look for hanging transactions.

`time_ratio_vs_plain_init` = the median custody seconds over the median anchor
seconds: below 1, Custody's producer is ready sooner although it does more. Once
ready, Custody's producer sends two batches as PublishKafka does (`BATCH` records to
the output topic and the progress record, one transaction each): `first_transaction_s`
and `next_transaction_s` are their medians, what an adopter's first delivery waits for
beyond the producer, against a transaction of a producer already sending. The broker
is the harness's (`cluster.services.kafka`), started for the run in a temporary
directory, unless `--bootstrap-servers` names one.
"""

from __future__ import annotations

import logging
import statistics
import subprocess
import sys
import time
import uuid

from flow.processors.kafka import progress

from .kafka import _new_topic, broker_servers, run_directory

BATCH = 100  # records a transaction sends, as the drill's PublishKafka batches

# The dead owner: its transaction open on the output topic and the progress topic.
_DEAD_OWNER = """
import os, sys
from confluent_kafka import Producer
servers, transactional_id, out, progress = sys.argv[1:5]
producer = Producer({"bootstrap.servers": servers, "transactional.id": transactional_id})
producer.init_transactions()
producer.begin_transaction()
for n in range(20):
    producer.produce(out, b"x" * 100, key=str(n).encode())
producer.produce(progress, b"", key=transactional_id.encode())
producer.flush()
os.kill(os.getpid(), 9)
"""


def add_arguments(parser) -> None:
    parser.add_argument("--rounds", type=int, help="takeovers of each side, alternating (default 20; --quick 3)")
    parser.add_argument("--bootstrap-servers", help="a broker to use instead of starting the harness's")
    parser.add_argument("--dir", help="directory to run in (default: a fresh temporary directory)")


def run(args) -> dict:
    rounds = args.rounds or (3 if getattr(args, "quick", False) else 20)
    with (
        run_directory(args.dir, "custody-bench-kafka-takeover-") as root,
        broker_servers(args.bootstrap_servers, root) as servers,
    ):
        out, progress_topic = _new_topic(servers, 6), _new_topic(servers, 16)
        context = _context(servers, out, progress_topic)
        _custody(context, servers, out, progress_topic, "warm-up")  # the topics' leaders and clients' first use
        seconds: dict[str, list[float]] = {"custody": [], "anchor": [], "first": [], "next": []}
        for round_number in range(rounds):
            sides = ["custody", "anchor"] if round_number % 2 == 0 else ["anchor", "custody"]
            for side in sides:
                transactional_id = f"bench-takeover-{uuid.uuid4().hex[:12]}"
                if side == "custody":
                    ready, first, then = _custody(context, servers, out, progress_topic, transactional_id)
                    seconds[side].append(ready)
                    seconds["first"].append(first)
                    seconds["next"].append(then)
                else:
                    seconds[side].append(_anchor(servers, out, progress_topic, transactional_id))
        custody, anchor = statistics.median(seconds["custody"]), statistics.median(seconds["anchor"])
        return {
            "rounds": rounds,
            "output_topic": out,
            "producer_ready_s": round(custody, 4),
            "producer_ready_max_s": round(max(seconds["custody"]), 4),
            "anchor_init_s": round(anchor, 4),
            "anchor_init_max_s": round(max(seconds["anchor"]), 4),
            "time_ratio_vs_plain_init": round(custody / anchor, 3),
            "first_transaction_s": round(statistics.median(seconds["first"]), 4),
            "next_transaction_s": round(statistics.median(seconds["next"]), 4),
            "seconds": {side: [round(s, 4) for s in times] for side, times in seconds.items()},
        }


def _context(servers: str, out: str, progress_topic: str):
    from flow.loading import parse_flow, standard_registry
    from flow.processor import ProcessContext
    from flow.processors.kafka.publish import PublishKafka

    properties = {
        "bootstrap_servers": servers,
        "topic": out,
        "transactional_id_prefix": "bench-takeover",
        "progress_topic": progress_topic,
        "transaction_timeout": "60 s",
    }
    registry = standard_registry()
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "publish",
                    "type": "PublishKafka",
                    "properties": properties,
                    "auto_terminate": list(PublishKafka.relationships),
                }
            ]
        },
        registry=registry,
    )
    logger = logging.getLogger("benchmarks.kafka_takeover")
    return ProcessContext("publish", definition.processors["publish"].properties, {}, has_incoming=True, logger=logger)


def _dead_owner(servers: str, transactional_id: str, out: str, progress_topic: str) -> None:
    subprocess.run(
        [sys.executable, "-c", _DEAD_OWNER, servers, transactional_id, out, progress_topic], check=False, timeout=120
    )


def _custody(context, servers: str, out: str, progress_topic: str, transactional_id: str) -> tuple[float, ...]:
    """Seconds until the adopter's producer is ready, then of its first and its second
    transaction."""
    from flow.processors.kafka.transactional import transactional_producer

    _dead_owner(servers, transactional_id, out, progress_topic)
    started = time.perf_counter()
    producer, _ = transactional_producer(context, transactional_id, lambda: None)
    seconds = [time.perf_counter() - started]
    for _batch in range(2):
        started = time.perf_counter()
        producer.transaction(_Admitted(), _records(out), progress.pack([uuid.uuid4().hex]))
        seconds.append(time.perf_counter() - started)
    producer.close(5.0)
    return tuple(seconds)


class _Admitted:
    """The session's admission check, for a producer no cluster can depose."""

    def check_admitted(self) -> None:
        return None


def _records(out: str) -> list:
    from flow.flowfile import FlowFile
    from flow.processors.kafka.delivery import Record

    flowfiles = [FlowFile(uuid.uuid4().hex, {}, None, "bench", 100, 0, 0) for _ in range(BATCH)]
    return [Record(flowfile, out, str(n).encode(), None, [], [b"x" * 100]) for n, flowfile in enumerate(flowfiles)]


def _anchor(servers: str, out: str, progress_topic: str, transactional_id: str) -> float:
    from confluent_kafka import Producer

    _dead_owner(servers, transactional_id, out, progress_topic)
    started = time.perf_counter()
    producer = Producer({"bootstrap.servers": servers, "transactional.id": transactional_id})
    producer.init_transactions(60)
    seconds = time.perf_counter() - started
    producer.flush(5)
    return seconds
