"""PublishKafka's pure parts, without a broker: the progress record's layout, the
windows it is read back in, the pending ids, and what follows a round of refusals. A
model of crashes checks that the pending ids make every FlowFile reach Kafka once."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flow.processors.kafka.delivery import Refusal, split_refusals
from flow.processors.kafka.progress import (
    PARTITIONS,
    PendingDeliveries,
    ProgressRecordError,
    pack,
    partition,
    unpack,
    windows,
)

IDS = ["7f1c1a52-0c4f-4d8e-9a51-0d1f2b3c4d5e", "01234567-89ab-cdef-0123-456789abcdef"]


def test_a_packed_record_unpacks_to_its_ids_sorted_once_each():
    value = pack(IDS + IDS[:1])
    assert json.loads(value) == {"v": 1, "flowfiles": sorted(IDS)}
    assert unpack(value, "here") == frozenset(IDS)
    assert unpack(pack([]), "here") == frozenset()


def test_an_ids_progress_partition_is_its_crc32_modulo_16_and_stays_when_partitions_are_added():
    import zlib

    ids = [f"custody-n{node}-{epoch}-publish" for node in range(1, 4) for epoch in range(1, 40)]
    for transactional_id in ids:
        own = zlib.crc32(transactional_id.encode()) % 16
        assert [partition(transactional_id, count) for count in (1, 15, 16, 17, 64)] == [0, 0, own, own, own]
    assert PARTITIONS == 16 and len({partition(i, 16) for i in ids}) == 16  # spread over every partition


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (None, "has no value"),
        (b"\xff\xfe", "not UTF-8 JSON"),
        (b"{not json", "not UTF-8 JSON"),
        (b"[1]", "not an object with a version"),
        (b'{"flowfiles": []}', "not an object with a version"),
        (b'{"v": 2, "flowfiles": []}', "layout version 2; this release reads version 1"),
        (b'{"v": true, "flowfiles": []}', "layout version True"),
        (b'{"v": 1, "flowfiles": [], "more": 1}', "not v and flowfiles"),
        (b'{"v": 1, "flowfiles": "abc"}', "not a list of FlowFile ids"),
        (b'{"v": 1, "flowfiles": [1]}', "not a list of FlowFile ids"),
        (b'{"v": 1, "flowfiles": [""]}', "not a list of FlowFile ids"),
        (json.dumps({"v": 1, "flowfiles": ["x" * 129]}).encode(), "not a list of FlowFile ids"),
        (b'{"v": 1, "flowfiles": ["a", "a"]}', "names a FlowFile twice"),
    ],
)
def test_a_record_that_does_not_fit_the_layout_is_refused_saying_where_and_why(value, says):
    with pytest.raises(ProgressRecordError, match="progress\\[0\\]@7") as refused:
        unpack(value, "progress[0]@7")
    assert says in str(refused.value)


def test_ids_too_many_for_one_record_are_refused_with_what_to_do():
    with pytest.raises(ProgressRecordError, match="lower batch_size"):
        pack([f"{n:036d}" for n in range(100)], limit=1000)
    assert len(pack(IDS, limit=1000)) <= 1000


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.integers(1, 100))
def test_the_windows_cover_the_partition_once_from_its_end_back_each_twice_the_last(low, length, first):
    high = low + length
    found = list(windows(low, high, first))
    covered = [offset for start, end in found for offset in range(start, end)]
    assert sorted(covered) == list(range(low, high))  # each offset once
    assert [end for _, end in found] == ([high] if found else []) + [start for start, _ in found[:-1]]  # backwards
    sizes = [end - start for start, end in found]
    assert all(size == first * 2**n for n, size in enumerate(sizes[:-1]))
    assert not sizes or sizes[-1] <= first * 2 ** (len(sizes) - 1)


def test_a_window_of_no_record_is_refused():
    with pytest.raises(ValueError):
        list(windows(0, 10, 0))


def test_pending_ids_enter_with_the_kafka_commit_and_leave_with_the_wal_commit():
    pending = PendingDeliveries()
    pending.kafka_committed(["a", "b"])
    assert pending.record_for(["c"]) == {"a", "b", "c"}  # the next transaction's record names them all
    pending.wal_committed(["a"])
    assert "a" not in pending and "b" in pending and len(pending) == 1
    pending.recovered(["x", "y", "b"])  # read back: replaces
    assert pending.ids() == {"x", "y", "b"}
    pending.keep_only(["y", "z"])
    assert pending.ids() == {"y"}


def refused(batch_wide: bool) -> Refusal:
    return Refusal(error=object(), batch_wide=batch_wide)


def test_no_refusal_delivers_the_round():
    assert split_refusals(3, {}, transactional=True) == ([], [0, 1, 2], [])


def test_a_records_own_refusal_fails_it_and_an_aborted_transaction_sends_the_others_again():
    assert split_refusals(4, {2: refused(False)}, transactional=True) == ([[0, 1, 3]], [], [2])
    assert split_refusals(4, {2: refused(False)}, transactional=False) == ([], [0, 1, 3], [2])


def test_a_batch_wide_refusal_of_one_record_is_its_own():
    assert split_refusals(3, {1: refused(True)}, transactional=True) == ([[0, 2]], [], [1])


def test_records_refused_together_by_a_batch_wide_error_go_again_in_halves():
    refusals = {i: refused(True) for i in (0, 1, 2, 4, 5)}
    assert split_refusals(6, refusals, transactional=True) == ([[3], [0, 1], [2, 4, 5]], [], [])
    assert split_refusals(6, refusals, transactional=False) == ([[0, 1], [2, 4, 5]], [3], [])


@given(st.integers(1, 64), st.sets(st.integers(0, 63), max_size=5), st.booleans())
def test_halving_finds_each_oversized_record_and_delivers_every_other_once(count, oversized, transactional):
    """A broker that refuses a whole round when it holds an oversized record (as Kafka
    refuses a batch over max.message.bytes): every other record is delivered once, each
    oversized one fails, in a number of rounds that grows with the logarithm."""
    oversized = {i for i in oversized if i < count}
    rounds, delivered, failed = 0, [], []
    groups = [list(range(count))]
    while groups:
        group = groups.pop(0)
        rounds += 1
        bad = any(i in oversized for i in group)
        refusals = {n: refused(True) for n in range(len(group))} if bad else {}  # the whole batch refused
        again, sent, lost = split_refusals(len(group), refusals, transactional=transactional)
        groups += [[group[n] for n in indexes] for indexes in again]
        delivered += [group[n] for n in sent]
        failed += [group[n] for n in lost]
    assert sorted(failed) == sorted(oversized)
    assert sorted(delivered) == sorted(set(range(count)) - oversized)
    assert rounds <= 1 + 2 * max(1, len(oversized)) * (count.bit_length() + 1)


# -- a model of the protocol: Kafka transaction, then WAL commit, with crashes ------------

STEPS = st.lists(
    st.tuples(
        st.sampled_from(["arrive", "deliver", "crash"]), st.integers(1, 6), st.sampled_from(["ok", "fail", "crash"])
    ),
    max_size=40,
)


@given(STEPS)
def test_the_pending_ids_deliver_every_flowfile_to_kafka_once_across_failed_commits_and_crashes(steps):
    """The WAL's queue, the records Kafka holds and the last progress record, driven as
    PublishKafka drives them: a batch from the head of the queue, the pending ones
    routed without a send, the others in one transaction with their progress record;
    then the WAL commit succeeds, fails (the batch stays queued), or the process dies
    (memory lost: a new producer reads the last record back)."""
    queue: list[str] = []
    kafka: list[str] = []
    last_record: frozenset[str] = frozenset()
    pending = PendingDeliveries()
    made = 0

    def deliver(count: int, wal: str) -> None:
        nonlocal last_record, pending
        batch = queue[:count]
        if not batch:
            return
        if len(batch) == len(queue):
            pending.keep_only(batch)
        sending = [i for i in batch if i not in pending]
        if sending:
            last_record = unpack(pack(pending.record_for(sending)), "model")
            kafka.extend(sending)
            pending.kafka_committed(sending)
        if wal == "ok":
            del queue[: len(batch)]
            pending.wal_committed(batch)
        elif wal == "crash":
            pending = PendingDeliveries()
            pending.recovered(last_record)

    for step, count, wal in steps:
        if step == "arrive":
            queue += [f"ff-{made + n}" for n in range(count)]
            made += count
        elif step == "deliver":
            deliver(count, wal)
        else:  # a crash between tasks: memory lost, the WAL kept
            pending = PendingDeliveries()
            pending.recovered(last_record)
    queue.append(f"ff-{made}")  # one more, so that a last task runs whatever came before
    made += 1
    while queue:
        deliver(len(queue), "ok")
    assert sorted(kafka) == sorted(f"ff-{n}" for n in range(made))
    assert len(pending) == 0  # what a crash left named is forgotten by a batch that holds the whole queue


class _LateResetConsumer:
    """A consumer of one partition, `log` its records (offset -> key), whose position
    assign() resets only after `late` more looks at it: what librdkafka does on its own
    thread, a moment after the call."""

    INVALID = -1001

    def __init__(self, log: dict[int, bytes], late: int):
        self.log, self.late = log, late
        self.position_now, self.next, self.looks_left = self.INVALID, 0, 0

    def assign(self, partitions):
        self.next, self.looks_left = partitions[0].offset, self.late
        if not self.late:
            self.position_now = self.INVALID

    def position(self, partitions):
        from types import SimpleNamespace

        if self.looks_left:
            self.looks_left -= 1
            if not self.looks_left:
                self.position_now = self.INVALID
        return [SimpleNamespace(offset=self.position_now)]

    def consume(self, num_messages, timeout):
        from types import SimpleNamespace

        if self.looks_left:
            return []  # nothing is fetched for the new assignment before the reset
        taken = [offset for offset in sorted(self.log) if offset >= self.next][:num_messages]
        self.next = self.position_now = (taken[-1] if taken else self.next) + 1
        self.position_now = max(self.position_now, max(self.log) + 1)  # markers up to the end are stepped over
        return [SimpleNamespace(error=lambda: None, offset=lambda o=o: o, key=lambda o=o: self.log[o]) for o in taken]


@pytest.mark.parametrize("late", [0, 1, 3])
def test_a_window_is_read_only_once_the_consumer_assigned_again_was_reset(late):
    import time

    from flow.processors.kafka.delivery import _last_record

    log = {0: b"mine", 2: b"mine"} | {offset: b"theirs" for offset in range(4, 144, 2)}
    consumer = _LateResetConsumer(log, late)
    found = _last_record(consumer, "progress", 5, (0, 144), b"mine", time.monotonic() + 5)
    assert found is not None and found.offset() == 2
