"""The dependency-free counters and latency histograms of `repositories.instruments`:
bucket edges, snapshots that agree with themselves, and no update lost to threads."""

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repositories.instruments import LATENCY_BUCKETS, ByLabel, Counter, LatencyHistogram


def test_a_counter_adds_and_a_snapshot_is_a_plain_number():
    counter = Counter()
    counter.add()
    counter.add(4)
    assert counter.snapshot() == 5


def test_an_observation_on_a_bound_counts_in_that_bucket_as_prometheus_le_says():
    histogram = LatencyHistogram((0.1, 1.0))
    for seconds in (0.1, 0.10001, 1.0, 7.0, 0.0):
        histogram.observe(seconds)
    snapshot = histogram.snapshot()
    assert snapshot.bounds == (0.1, 1.0)
    assert snapshot.cumulative == (2, 4)  # 0.0 and 0.1 <= 0.1; then 0.10001 and 1.0 <= 1.0
    assert snapshot.count == 5  # 7.0 is only in +Inf
    assert snapshot.sum == pytest.approx(0.1 + 0.10001 + 1.0 + 7.0)


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=200))
def test_cumulative_buckets_count_exactly_the_observations_at_or_below_each_bound(observations):
    histogram = LatencyHistogram()
    for seconds in observations:
        histogram.observe(seconds)
    snapshot = histogram.snapshot()
    assert snapshot.cumulative == tuple(sum(1 for s in observations if s <= bound) for bound in LATENCY_BUCKETS)
    assert snapshot.count == len(observations)
    assert snapshot.sum == pytest.approx(sum(observations))


@pytest.mark.parametrize("bounds", [(), (1.0, 0.5), (0.5, 0.5)])
def test_bounds_must_increase_strictly(bounds):
    with pytest.raises(ValueError, match="increase strictly"):
        LatencyHistogram(bounds)


def test_children_by_label_are_made_once_and_known_values_are_there_from_the_start():
    outcomes = ByLabel(Counter, ("committed", "failed"))
    assert outcomes.snapshot() == {"committed": 0, "failed": 0}
    outcomes.of("unknown").add()
    assert outcomes.of("unknown") is outcomes.of("unknown")
    outcomes.of("committed").add(2)
    assert outcomes.snapshot() == {"committed": 2, "failed": 0, "unknown": 1}


def test_no_update_is_lost_when_threads_race():
    counter, histogram, by_label = Counter(), LatencyHistogram(), ByLabel(LatencyHistogram)
    threads, rounds = 8, 5000
    start = threading.Barrier(threads)

    def work(number: int) -> None:
        start.wait()
        for i in range(rounds):
            counter.add()
            histogram.observe(0.001 * (i % 3))
            by_label.of(f"op{i % 4}").observe(0.002)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.snapshot() == threads * rounds
    snapshot = histogram.snapshot()
    assert snapshot.count == threads * rounds and snapshot.cumulative[-1] == threads * rounds
    assert sum(child.count for child in by_label.snapshot().values()) == threads * rounds
    assert sorted(by_label.snapshot()) == ["op0", "op1", "op2", "op3"]


def test_a_snapshot_taken_while_observations_go_on_agrees_with_itself():
    histogram = LatencyHistogram((0.5,))
    stop = threading.Event()

    def observe() -> None:
        while not stop.is_set():
            histogram.observe(0.1)
            histogram.observe(0.9)

    writer = threading.Thread(target=observe)
    writer.start()
    try:
        for _ in range(2000):
            snapshot = histogram.snapshot()
            assert snapshot.cumulative[0] <= snapshot.count
            assert snapshot.sum == pytest.approx(
                0.1 * snapshot.cumulative[0] + 0.9 * (snapshot.count - snapshot.cumulative[0])
            )
    finally:
        stop.set()
        writer.join()
