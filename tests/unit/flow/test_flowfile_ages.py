"""A connection's expiration ages FlowFiles from their entry date on a clock that wall-clock
steps do not move (`flow.flowfile_ages`): a step forward expires nothing, a step back
keeps nothing longer; moving between queues, swapping out and in, and recovery keep
the age a FlowFile had. Both clocks are driven by the test."""

from __future__ import annotations

from flow.flowfile import FlowFile
from flow.flowfile_ages import HAND_OVER_MS, FlowFileAges
from flow.graph import FlowGraph
from flow.loading import parse_flow
from flow.queue import FlowFileQueue
from repositories.swap import SwapSummary

HOUR = 3_600_000
EXPIRATION = 60_000


class Clock:
    def __init__(self, now: int):
        self.now = now

    def __call__(self) -> int:
        return self.now


class Clocks:
    def __init__(self):
        self.wall, self.monotonic = Clock(1_700_000_000_000), Clock(5_000)

    def ages(self) -> FlowFileAges:
        return FlowFileAges(wall_ms=self.wall, monotonic_ms=self.monotonic)

    def queue(self, queue_id="q", expiration_ms=EXPIRATION, ages=None, **options) -> FlowFileQueue:
        return FlowFileQueue(
            queue_id,
            expiration_ms=expiration_ms,
            clock_ms=self.wall,
            ages=ages if ages is not None else self.ages(),
            **options,
        )

    def flowfile(self, i: int, age_ms: int = 0) -> FlowFile:
        entry = self.wall.now - age_ms
        return FlowFile(f"id-{i}", {}, None, "", 1, entry, entry, 0)


def expired_ids(queue: FlowFileQueue) -> tuple[list[str], list[str]]:
    polled, expired = queue.poll(100)
    queue.requeue(polled + expired)
    return [f.id for f in polled], [f.id for f in expired]


def test_a_wall_clock_step_forward_expires_nothing():
    clocks = Clocks()
    queue = clocks.queue()
    queue.put_all([clocks.flowfile(1), clocks.flowfile(2, age_ms=30_000)])
    clocks.wall.now += HOUR
    assert expired_ids(queue) == (["id-1", "id-2"], [])
    clocks.monotonic.now += 30_001  # id-2 is 60.001 s old now, id-1 30.001 s
    assert expired_ids(queue) == (["id-1"], ["id-2"])


def test_a_wall_clock_step_back_keeps_nothing_longer():
    clocks = Clocks()
    queue = clocks.queue()
    queue.put(clocks.flowfile(1))
    clocks.wall.now -= HOUR
    clocks.monotonic.now += EXPIRATION + 1
    assert expired_ids(queue) == ([], ["id-1"])


def test_a_recovered_flowfile_keeps_the_age_its_entry_date_gives_it():
    clocks = Clocks()
    queue = clocks.queue()
    queue.put_all([clocks.flowfile(1, age_ms=50_000), clocks.flowfile(2, age_ms=-HOUR)])  # id-2 from "the future"
    clocks.monotonic.now += 9_000
    assert expired_ids(queue) == (["id-1", "id-2"], [])
    clocks.monotonic.now += 1_001
    assert expired_ids(queue) == (["id-2"], ["id-1"])


def test_moving_on_to_a_connection_that_expires_keeps_the_age():
    clocks = Clocks()
    ages = clocks.ages()
    upstream, downstream = clocks.queue("a", expiration_ms=0, ages=ages), clocks.queue("b", ages=ages)
    upstream.put(clocks.flowfile(1))
    clocks.monotonic.now += 30_000
    clocks.wall.now += HOUR  # while it waited upstream
    (flowfile,), _ = upstream.poll(1)
    upstream.acknowledge([flowfile])  # a commit acknowledges its inputs, then puts its outputs
    clocks.monotonic.now += HAND_OVER_MS - 1
    downstream.put(flowfile.in_queue("b"))
    assert expired_ids(downstream) == (["id-1"], [])
    clocks.monotonic.now += 30_000
    assert expired_ids(downstream) == ([], ["id-1"])


def test_swapping_out_and_in_keeps_the_age():
    clocks = Clocks()
    queue = clocks.queue(swap_threshold=2, swap_batch=2)
    queue.put_all([clocks.flowfile(i, age_ms=10_000) for i in range(4)])
    queue.plan_swap()
    batch = queue.take_swap_out_batch(2)
    queue.complete_swap_out(batch, SwapSummary("loc-1", "q", 2, 2, batch[0].entry_date, batch[1].entry_date))
    clocks.wall.now += HOUR
    taken = queue.take_swap_in()
    queue.complete_swap_in(taken, batch)
    assert expired_ids(queue)[1] == []
    clocks.monotonic.now += EXPIRATION - 10_000 + 1
    assert sorted(expired_ids(queue)[1]) == ["id-0", "id-1", "id-2", "id-3"]


def test_a_swap_file_registered_at_recovery_is_aged_as_of_the_recovery():
    clocks = Clocks()
    queue = clocks.queue()
    old = [clocks.flowfile(i, age_ms=40_000) for i in range(2)]
    queue.register_swapped(SwapSummary("loc-1", "q", 2, 2, old[0].entry_date, old[1].entry_date))
    clocks.wall.now += HOUR  # before the file is read back
    clocks.monotonic.now += 15_000
    queue.complete_swap_in(queue.take_swap_in(), old)
    assert expired_ids(queue)[1] == []
    clocks.monotonic.now += 5_001
    assert sorted(expired_ids(queue)[1]) == ["id-0", "id-1"]


def test_a_flows_queues_share_one_age_per_flowfile():
    clocks = Clocks()
    definition = parse_flow(
        {
            "processors": [
                {"id": "make", "type": "GenerateFlowFile"},
                {"id": "tag", "type": "UpdateAttribute"},
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": "/nowhere"},
                    "auto_terminate": ["success", "failure"],
                },
            ],
            "connections": [
                {"id": "made", "source": "make", "destination": "tag"},
                {"id": "tagged", "source": "tag", "destination": "put", "expiration": "1 min"},
            ],
        }
    )
    graph = FlowGraph(definition, clock_ms=clocks.wall, monotonic_clock_ms=clocks.monotonic)
    made, tagged = graph.queues["made"], graph.queues["tagged"]
    made.put(clocks.flowfile(1))
    clocks.wall.now += HOUR
    (flowfile,), _ = made.poll(1)
    made.acknowledge([flowfile])
    tagged.put(flowfile.in_queue("tagged"))
    assert expired_ids(tagged) == (["id-1"], [])
