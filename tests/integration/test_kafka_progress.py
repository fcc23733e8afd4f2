"""PublishKafka's progress topic read back against the real broker.

The last progress record of a transactional id is found also when another producer's
transaction, opened before it in the same partition, is still open (the partition's
last stable offset is then below it): a dead node's open transaction stays open until
its shard's adopter aborts it, or the broker at its timeout. Found by the Kafka drill:
the adopter read back an older record of the shard and sent again the five FlowFiles
of the last committed transaction.

The topic Custody creates has 16 partitions and each id writes to its own
(`progress.partition`), so another shard's open transaction holds back the read only
when both ids share a partition; a topic an earlier release wrote (every record in
partition 0) is still read."""

from __future__ import annotations

import time
import uuid

import pytest

from flow.processors.kafka import progress
from flow.processors.kafka.delivery import create_progress_topic, read_back

from .kafka_helpers import transactional_producer

pytestmark = [pytest.mark.kafka]


def _progress(producer, topic: str, transactional_id: str, ids: set[str], *, place: int, commit: bool = True) -> None:
    producer.begin_transaction()
    producer.produce(topic, progress.pack(frozenset(ids)), progress.key(transactional_id), partition=place)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)


def _ids() -> tuple[str, str, str]:
    """Three transactional ids: two that share a partition of the progress topic, and
    one in another."""
    by_place: dict[int, list[str]] = {}
    while True:
        candidate = f"id-{uuid.uuid4().hex[:8]}"
        by_place.setdefault(progress.partition(candidate, progress.PARTITIONS), []).append(candidate)
        pair = next((ids for ids in by_place.values() if len(ids) >= 2), None)
        if pair is not None and len(by_place) >= 2:
            other = next(ids[0] for ids in by_place.values() if ids is not pair)
            return pair[0], pair[1], other


@pytest.fixture
def progress_topic(kafka_broker):
    config = {"bootstrap.servers": kafka_broker.bootstrap_servers}
    topic = f"progress-{uuid.uuid4().hex[:8]}"
    assert create_progress_topic(config, topic) == progress.PARTITIONS
    assert create_progress_topic(config, topic) == progress.PARTITIONS  # it exists: its count, read back
    return config, topic


def test_the_last_record_is_read_back_past_another_producers_open_transaction_in_its_partition(
    kafka_broker, progress_topic
):
    config, topic = progress_topic
    mine, theirs, _ = _ids()
    place = progress.partition(mine, progress.PARTITIONS)
    assert progress.partition(theirs, progress.PARTITIONS) == place
    producer = transactional_producer(kafka_broker, mine)
    _progress(producer, topic, mine, {"a"}, place=place)
    # Another shard's producer opens a transaction and stops there (its node died); the
    # broker aborts it at its timeout, 1 s, at its next look (every 10 s by default).
    other = transactional_producer(kafka_broker, theirs, transaction_timeout_ms=1_000)
    _progress(other, topic, theirs, {"x"}, place=place, commit=False)
    _progress(producer, topic, mine, {"b"}, place=place)  # committed after the other one began
    began = time.monotonic()
    assert read_back(config, topic, mine, 30.0, place) == frozenset({"b"})
    print(f"read back past the open transaction in {time.monotonic() - began:.1f} s (it waited for its abort)")


def test_an_open_transaction_in_another_partition_does_not_hold_the_read_back(kafka_broker, progress_topic):
    config, topic = progress_topic
    mine, _, elsewhere = _ids()
    place = progress.partition(mine, progress.PARTITIONS)
    producer = transactional_producer(kafka_broker, mine)
    # Open for up to a minute: a read held by it would take that long.
    other = transactional_producer(kafka_broker, elsewhere, transaction_timeout_ms=60_000)
    _progress(other, topic, elsewhere, {"x"}, place=progress.partition(elsewhere, progress.PARTITIONS), commit=False)
    _progress(producer, topic, mine, {"a", "b"}, place=place)
    began = time.monotonic()
    assert read_back(config, topic, mine, 60.0, place) == frozenset({"a", "b"})
    took = time.monotonic() - began
    other.abort_transaction(30)
    assert took < 10.0, f"the read back took {took:.1f} s: it waited for another partition's transaction"


def test_records_an_earlier_release_wrote_to_partition_0_are_read_until_the_id_writes_its_own(
    kafka_broker, progress_topic
):
    config, topic = progress_topic
    mine = next(i for i in (f"id-{uuid.uuid4().hex[:8]}" for _ in range(1000)) if progress.partition(i, 16) != 0)
    place = progress.partition(mine, progress.PARTITIONS)
    producer = transactional_producer(kafka_broker, mine)
    _progress(producer, topic, mine, {"old"}, place=0)  # as an earlier release wrote it
    assert read_back(config, topic, mine, 30.0, place) == frozenset({"old"})
    _progress(producer, topic, mine, {"new"}, place=place)
    assert read_back(config, topic, mine, 30.0, place) == frozenset({"new"})


def test_a_one_partition_topic_an_earlier_release_created_keeps_every_record_in_partition_0(kafka_broker):
    from confluent_kafka.admin import AdminClient, NewTopic

    config = {"bootstrap.servers": kafka_broker.bootstrap_servers}
    topic = f"progress-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(config)
    admin.create_topics([NewTopic(topic, num_partitions=1, config={"cleanup.policy": "compact"})])[topic].result(30)
    count = create_progress_topic(config, topic)
    mine = f"id-{uuid.uuid4().hex[:8]}"
    assert count == 1 and progress.partition(mine, count) == 0
    producer = transactional_producer(kafka_broker, mine)
    _progress(producer, topic, mine, {"a"}, place=0)
    assert read_back(config, topic, mine, 30.0, 0) == frozenset({"a"})


def test_a_drills_duplicate_report_names_each_progress_record_of_a_flowfile_committed_or_not(
    kafka_broker, progress_topic
):
    """What the Kafka drill says of a key delivered twice (`kafka_workload.progress_naming`):
    which transactional ids' progress records named the FlowFile that sent it, and
    whether each record's transaction committed."""
    import re

    from cluster.drills.kafka_workload import progress_naming

    _, topic = progress_topic
    mine, _, elsewhere = _ids()
    producer = transactional_producer(kafka_broker, mine)
    place = progress.partition(mine, progress.PARTITIONS)
    _progress(producer, topic, mine, {"ff-1", "ff-2"}, place=place)
    _progress(producer, topic, mine, {"ff-2"}, place=place, commit=False)
    producer.abort_transaction(30)
    other = transactional_producer(kafka_broker, elsewhere)
    _progress(other, topic, elsewhere, {"ff-2"}, place=progress.partition(elsewhere, progress.PARTITIONS))

    said = progress_naming(kafka_broker.bootstrap_servers, topic, {"ff-1", "ff-2", "ff-3"})

    record = r"{} {}\[{}\]@(\d+) at \d+\.\d{{3}} ({})"
    assert "ff-3" not in said
    assert re.fullmatch("named by " + record.format(mine, topic, place, "committed"), said["ff-1"]), said
    named = said["ff-2"].removeprefix("named by ").split(", ")
    assert sorted(
        re.fullmatch(record.format(r"\S+", topic, r"\d+", r"committed|NOT committed"), n) is not None for n in named
    ) == [True, True, True], named
    assert [n.split(" ")[0] for n in named if n.endswith("NOT committed")] == [mine], named
    assert sorted(n.split(" ")[0] for n in named) == sorted([mine, mine, elsewhere]), named


@pytest.mark.parametrize("behind", [70, 300])
def test_a_last_record_older_than_the_first_window_is_read_back(kafka_broker, progress_topic, behind):
    """Another id that shares the partition wrote `behind` transactions since this id's
    last one: the read back looks further back, window by window (`progress.windows`:
    64 records, then 128 more, ...), each transaction a record and a marker. Found by a
    loaded CI run's Kafka drill: a consumer assigned again reports, for a moment, where
    its last read ended, and the read back took a window for read without reading it,
    found nothing, and the adopter sent the last committed batch again. Read back five
    times: before the fix, one read back in two of such a partition came back empty."""
    config, topic = progress_topic
    mine, theirs, _ = _ids()
    place = progress.partition(mine, progress.PARTITIONS)
    producer = transactional_producer(kafka_broker, mine)
    _progress(producer, topic, mine, {"old"}, place=place)
    _progress(producer, topic, mine, {"last-1", "last-2"}, place=place)
    other = transactional_producer(kafka_broker, theirs)
    for index in range(behind):
        _progress(other, topic, theirs, {f"x{index}"}, place=place)
    for _ in range(5):
        assert read_back(config, topic, mine, 30.0, place) == frozenset({"last-1", "last-2"})
    assert read_back(config, topic, theirs, 30.0, place) == frozenset({f"x{behind - 1}"})
