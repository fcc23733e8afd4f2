"""What the Kafka tests share: a fresh topic, a transactional producer, and a reader
that reads a topic to its end at either isolation level."""

from __future__ import annotations

import uuid

from cluster.services.kafka import KafkaBroker
from cluster.services.process import wait_until
from flow.processors.kafka.delivery import log_end


def new_topic(broker: KafkaBroker, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"test-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config or {})])[
        topic
    ].result(30)
    return topic


def transactional_producer(broker: KafkaBroker, transactional_id: str, transaction_timeout_ms: int | None = None):
    from confluent_kafka import Producer

    config: dict[str, object] = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": transactional_id}
    if transaction_timeout_ms is not None:
        config["transaction.timeout.ms"] = transaction_timeout_ms
    producer = Producer(config)
    producer.init_transactions(60)
    return producer


def in_transaction(producer, topic: str, values: list[bytes], commit: bool = True) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.flush(30)  # the records are in the log before the abort marks them aborted
        producer.abort_transaction(30)


def read_records(broker: KafkaBroker, topic: str, isolation: str = "read_committed") -> list:
    """Every record (confluent_kafka `Message`) a consumer at `isolation` sees in each
    partition of `topic`, partition by partition in offset order, reading until its
    position in each reaches that partition's end (transaction markers and aborted
    records count towards it)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, partition, 0) for partition in partitions])
        # Each partition's high watermark, not the last stable offset a read_committed
        # consumer is told: a transaction left open would hide committed records after it.
        # A broker just started again serves its metadata before it leads every partition
        # again (NOT_LEADER_FOR_PARTITION until it does).
        settings = {"bootstrap.servers": broker.bootstrap_servers, "group.id": "watermarks"}
        (marks,) = wait_until(lambda: (log_end(settings, topic, partitions),), 60, f"{topic}'s log ends")
        ends = {p: high for p, (low, high) in marks.items() if high > low}  # an empty one has no position to reach
        records: list = []

        def at_end() -> bool:
            for message in consumer.consume(num_messages=500, timeout=0.5):
                if message.error():
                    raise AssertionError(message.error())
                records.append(message)
            positions = consumer.position([TopicPartition(topic, p) for p in ends])
            return all(position.offset >= ends[position.partition] for position in positions)

        wait_until(at_end, 60, f"a {isolation} consumer to read {topic} to offsets {ends}", interval=0)
        return sorted(records, key=lambda message: (message.partition(), message.offset()))
    finally:
        consumer.close()


def read_all(broker: KafkaBroker, topic: str, isolation: str = "read_committed") -> list[bytes]:
    """The values of `read_records`."""
    return [message.value() for message in read_records(broker, topic, isolation)]
