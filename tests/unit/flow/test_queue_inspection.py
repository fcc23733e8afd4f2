"""Listing a queue (NiFi's list queue) and finding a FlowFile by uuid: the listing is in
the order the queue hands FlowFiles out, pages through what is in memory, and counts
what it does not list; a lookup finds swapped FlowFiles too."""

from __future__ import annotations

from flow.flowfile import FlowFile
from flow.queue import FlowFileQueue
from flow.queue_inspection import find_flowfile
from flow.shard import open_shard
from repositories.flowfile import Put
from repositories.storage import LocalStorage

NOW = 10_000


def flowfiles(n, start=0, **attributes):
    return [
        FlowFile(f"id-{i}", {"filename": f"f{i}", "i": str(i), **attributes}, None, "q", i, 1_000 + i, 900, 0)
        for i in range(start, start + n)
    ]


def ids(page):
    return [item.flowfile.id for item in page.items]


def test_the_listing_is_in_poll_order_with_one_based_positions_and_pages():
    queue = FlowFileQueue("q", clock_ms=lambda: NOW)
    queue.put_all(flowfiles(7))
    snapshot = queue.snapshot()
    assert ids(snapshot.page(0, 100, NOW)) == [f"id-{i}" for i in range(7)]
    page = snapshot.page(2, 3, NOW)
    assert ids(page) == ["id-2", "id-3", "id-4"] and [item.position for item in page.items] == [3, 4, 5]
    assert snapshot.page(6, 10, NOW).items[0].position == 7 and snapshot.page(7, 10, NOW).items == []
    polled, _ = queue.poll(3)
    assert [f.id for f in polled] == ids(snapshot.page(0, 3, NOW)), "what the listing put first is polled first"


def test_a_prioritized_queue_lists_as_it_polls_and_penalized_flowfiles_are_flagged_in_their_place():
    queue = FlowFileQueue("q", prioritizers=["NewestFlowFileFirstPrioritizer"], clock_ms=lambda: NOW)
    items = flowfiles(4)
    items[1] = items[1]._replace(penalty_expiration=NOW + 5_000)
    queue.put_all(items)
    page = queue.snapshot().page(0, 10, NOW)
    assert ids(page) == ["id-3", "id-2", "id-1", "id-0"]
    assert [item.penalized for item in page.items] == [False, False, True, False]
    assert queue.snapshot().page(0, 10, NOW + 5_000).items[2].penalized is False  # its penalty is over
    polled, _ = queue.poll(10, NOW + 5_000)
    assert [f.id for f in polled] == ids(page)


def test_in_flight_and_swapped_flowfiles_are_counted_not_listed_and_the_numbers_add_up(tmp_path):
    queue = FlowFileQueue("q", swap_threshold=4, swap_batch=2, clock_ms=lambda: NOW)
    shard = open_shard(LocalStorage(), str(tmp_path), "s", [queue], checkpoint_interval=None)
    shard.recover()
    items = flowfiles(10)
    shard.wal.update([Put(f.to_record()) for f in items])
    queue.put_all(items)
    shard.maintain(queue)
    polled, _ = queue.poll(2)
    page = queue.snapshot().page(0, 100, NOW)
    summary = queue.summary()
    assert summary.swap_files == 3 and page.swapped_count == summary.swapped_count == 6
    assert page.swapped_size == sum(f.size for f in items[4:])  # the newest went to swap files
    assert page.in_flight == 2 and ids(page) == ["id-2", "id-3"]
    assert page.listable + page.swapped_count + page.in_flight == page.count == 10
    assert page.size == sum(f.size for f in items)
    shard.wal.close()


def test_a_flowfile_is_found_in_memory_and_in_a_swap_file_not_when_polled(tmp_path):
    queue = FlowFileQueue("q", swap_threshold=4, swap_batch=2)
    other = FlowFileQueue("other")
    shard = open_shard(LocalStorage(), str(tmp_path), "s", [other, queue], checkpoint_interval=None)
    shard.recover()
    items = flowfiles(8)
    shard.wal.update([Put(f.to_record()) for f in items])
    queue.put_all(items)
    shard.maintain(queue)
    memory = find_flowfile(shard, "id-1")
    assert (memory.queue, memory.swapped, memory.flowfile) == ("q", False, items[1])
    swapped = find_flowfile(shard, "id-7")
    assert (swapped.queue, swapped.swapped, swapped.flowfile.attributes) == ("q", True, items[7].attributes)
    assert swapped.flowfile.size == 7
    queue.poll(1)
    assert find_flowfile(shard, "id-0") is None, "a FlowFile a task holds is in no queue"
    assert find_flowfile(shard, "nope") is None
    shard.wal.close()
