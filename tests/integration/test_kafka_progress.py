"""PublishKafka's progress topic read back against the real broker: the last progress
record of a transactional id is found also when another producer's transaction,
opened before it, is still open (the partition's last stable offset is then below
it). Every producer of a cluster writes its progress records into the one partition;
a dead node's open transaction stays open until its shard's adopter aborts it, or the
broker at its timeout. Found by the Kafka drill: the adopter read back an older record
of the shard and sent again the five FlowFiles of the last committed transaction."""

from __future__ import annotations

import time
import uuid

import pytest

from flow.processors.kafka import progress
from flow.processors.kafka.delivery import create_progress_topic, read_back

from .kafka_helpers import transactional_producer

pytestmark = [pytest.mark.kafka]


def _progress(producer, topic: str, transactional_id: str, ids: set[str], *, commit: bool = True) -> None:
    producer.begin_transaction()
    producer.produce(topic, progress.pack(frozenset(ids)), progress.key(transactional_id))
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)


def test_the_last_record_is_read_back_past_another_producers_open_transaction(kafka_broker):
    config = {"bootstrap.servers": kafka_broker.bootstrap_servers}
    topic = f"progress-{uuid.uuid4().hex[:8]}"
    create_progress_topic(config, topic)
    mine, theirs = f"mine-{uuid.uuid4().hex[:6]}", f"theirs-{uuid.uuid4().hex[:6]}"
    producer = transactional_producer(kafka_broker, mine)
    _progress(producer, topic, mine, {"a"})
    # Another shard's producer opens a transaction and stops there (its node died); the
    # broker aborts it at its timeout, 1 s, at its next look (every 10 s by default).
    other = transactional_producer(kafka_broker, theirs, transaction_timeout_ms=1_000)
    _progress(other, topic, theirs, {"x"}, commit=False)
    _progress(producer, topic, mine, {"b"})  # committed after the other one began
    began = time.monotonic()
    assert read_back(config, topic, mine, transaction_timeout=30.0) == frozenset({"b"})
    print(f"read back past the open transaction in {time.monotonic() - began:.1f} s (it waited for its abort)")
