"""FlowFileQueue: prioritizers, back-pressure, penalties, expiration, swap bookkeeping."""

from __future__ import annotations

import pytest

from flow.flowfile import FlowFile
from flow.queue import FlowFileQueue
from flow.swap_policy import ReadSwapFile, WriteSwapFile
from repositories.swap import SwapSummary


class Clock:
    def __init__(self, now=1_000_000):
        self.now = now

    def __call__(self):
        return self.now


def ff(i, entry=None, size=1, **attributes):
    return FlowFile(
        f"id-{i}",
        {k: str(v) for k, v in attributes.items()},
        None,
        "",
        size,
        1_000 + i if entry is None else entry,
        0,
        0,
    )


def polled_ids(queue, n=100):
    return [f.id for f in queue.poll(n)[0]]


def test_fifo_by_default():
    queue = FlowFileQueue("q")
    queue.put_all([ff(3, entry=1), ff(1, entry=3), ff(2, entry=2)])
    assert polled_ids(queue) == ["id-3", "id-1", "id-2"]


@pytest.mark.parametrize(
    "prioritizers, expected",
    [
        (["oldest_first"], ["id-3", "id-2", "id-1"]),
        (["newest_first"], ["id-1", "id-2", "id-3"]),
        (["PriorityAttributePrioritizer"], ["id-2", "id-3", "id-1"]),
    ],
)
def test_prioritizers(prioritizers, expected):
    queue = FlowFileQueue("q", prioritizers=prioritizers)
    queue.put_all([ff(1, entry=30), ff(2, entry=20, priority=1), ff(3, entry=10, priority=5)])
    assert polled_ids(queue) == expected


def test_unknown_prioritizer_is_refused():
    with pytest.raises(ValueError, match="unknown prioritizer"):
        FlowFileQueue("q", prioritizers=["loudest_first"])


def test_back_pressure_by_count_and_by_size_counts_unacknowledged():
    queue = FlowFileQueue("q", back_pressure_count=3, back_pressure_size=100)
    queue.put_all([ff(1), ff(2)])
    assert not queue.is_full()
    queue.put(ff(3))
    assert queue.is_full()
    taken = queue.poll(3)[0]
    assert queue.is_full(), "polled but not committed still counts"
    queue.acknowledge(taken)
    assert not queue.is_full() and queue.count == 0
    queue.put(ff(4, size=100))
    assert queue.is_full()


def test_penalized_flowfiles_wait_for_their_penalty():
    clock = Clock()
    queue = FlowFileQueue("q", clock_ms=clock)
    penalized = ff(1)._replace(penalty_expiration=clock.now + 500)
    queue.put_all([penalized, ff(2)])
    assert polled_ids(queue) == ["id-2"]
    assert not queue.has_available()
    assert queue.next_penalty_expiration() == clock.now + 500
    clock.now += 500
    assert queue.has_available()
    assert polled_ids(queue) == ["id-1"]


def test_rollback_requeues_and_keeps_the_order():
    queue = FlowFileQueue("q")
    queue.put_all([ff(1), ff(2), ff(3)])
    taken = queue.poll(2)[0]
    queue.requeue(taken)
    assert queue.count == 3
    assert polled_ids(queue) == ["id-1", "id-2", "id-3"]


def test_expired_flowfiles_are_handed_back_as_expired():
    clock = Clock(10_000)
    queue = FlowFileQueue("q", expiration_ms=1_000, clock_ms=clock)
    queue.put_all([ff(1, entry=8_000), ff(2, entry=9_500)])
    polled, expired = queue.poll(10)
    assert [f.id for f in polled] == ["id-2"] and [f.id for f in expired] == ["id-1"]
    queue.acknowledge(polled + expired)
    assert queue.count == 0


def test_swap_bookkeeping_keeps_the_summary_and_order():
    queue = FlowFileQueue("q", swap_threshold=4, swap_batch=2)
    queue.put_all([ff(i, entry=i) for i in range(9)])
    action = queue.plan_swap()  # demotes 5 to staging, then asks for a file
    assert action == WriteSwapFile(2)
    batch = queue.take_swap_out_batch(2)
    assert [f.id for f in batch] == ["id-4", "id-5"]
    summary = SwapSummary("loc-1", "q", 2, 2, 4, 5)
    queue.complete_swap_out(batch, summary)
    s = queue.summary()
    assert (s.count, s.size, s.oldest_entry, s.newest_entry, s.swapped_count, s.swap_files) == (9, 9, 0, 8, 2, 1)
    assert queue.in_memory() == 7
    queue.put(ff(9, entry=9))  # arrives while swapped: waits in staging
    assert queue.summary().staging == 4
    assert polled_ids(queue, 4) == ["id-0", "id-1", "id-2", "id-3"]
    assert queue.plan_swap() == WriteSwapFile(2)
    queue.abort_swap_out(queue.take_swap_out_batch(2))  # a failed write keeps them in memory
    assert queue.summary().staging == 4
    assert queue.plan_swap() == WriteSwapFile(2)
    second = queue.take_swap_out_batch(2)
    queue.complete_swap_out(second, SwapSummary("loc-2", "q", 2, 2, 6, 7))
    assert queue.plan_swap() == WriteSwapFile(2)  # id-8 and id-9 are a batch too
    third = queue.take_swap_out_batch(2)
    assert [f.id for f in third] == ["id-8", "id-9"]
    queue.complete_swap_out(third, SwapSummary("loc-3", "q", 2, 2, 8, 9))
    assert queue.summary().count == 10 and queue.summary().unacknowledged == 4 and queue.in_memory() == 0
    assert queue.plan_swap() == ReadSwapFile()
    taken = queue.take_swap_in()
    assert taken.location == "loc-1"
    queue.complete_swap_in(taken, batch)
    ids = polled_ids(queue)
    assert ids == ["id-4", "id-5"]


def test_register_swapped_counts_without_loading():
    queue = FlowFileQueue("q", swap_threshold=20_000, swap_batch=10_000)
    queue.register_swapped(SwapSummary("loc", "q", 10_000, 123, 5, 9))
    assert queue.count == 10_000 and queue.size == 123 and queue.in_memory() == 0
    assert queue.has_swapped()
