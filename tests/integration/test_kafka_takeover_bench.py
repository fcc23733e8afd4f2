"""`custody bench kafka-takeover` on the harness broker: each takeover it times
follows a dead owner whose transaction was left open, and both producers end it."""

from __future__ import annotations

import argparse

from benchmarks import kafka_takeover

from .kafka_helpers import read_all


def test_each_takeover_follows_an_owner_killed_mid_transaction_and_ends_its_transaction(kafka_broker, tmp_path):
    servers = kafka_broker.bootstrap_servers
    args = argparse.Namespace(rounds=2, bootstrap_servers=servers, dir=str(tmp_path), quick=False)
    result = kafka_takeover.run(args)
    assert [len(result["seconds"][side]) for side in ("custody", "anchor")] == [2, 2]
    assert result["producer_ready_s"] > 0 and result["anchor_init_s"] > 0
    assert result["first_transaction_s"] > 0 and result["next_transaction_s"] > 0
    # A warm-up and four timed takeovers, each after an owner that wrote 20 records and
    # died; after the warm-up and each of Custody's two, its producer's two batches.
    sent = 3 * 2 * kafka_takeover.BATCH
    written = read_all(kafka_broker, result["output_topic"], "read_uncommitted")
    assert len(written) == 5 * 20 + sent
    assert len(read_all(kafka_broker, result["output_topic"])) == sent  # only those were committed
    # ... and ended by its new owner: no partition holds a transaction open (its last
    # stable offset, what a read_committed client is told, is its log end).
    assert _ends(kafka_broker, result["output_topic"], "read_committed") == _ends(
        kafka_broker, result["output_topic"], "read_uncommitted"
    )


def _ends(broker, topic: str, isolation: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    settings = {"bootstrap.servers": broker.bootstrap_servers, "group.id": "ends", "isolation.level": isolation}
    consumer = Consumer(settings)
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in sorted(partitions)]
    finally:
        consumer.close()
