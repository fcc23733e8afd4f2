"""A FlowFile that makes its processor fail every time does not hold its queue for ever:
`RollbackWatch` decides (no I/O), and a real engine penalizes the poison FlowFile as
it rolls back, after `max_rollbacks` rollbacks in a row, so every other FlowFile is
delivered once; the poison one stays queued, penalized, neither lost nor duplicated."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from flow.engine import TraditionalEngine
from flow.errors import UnreadableContent
from flow.graph import FlowGraph
from flow.loading import parse_flow, standard_registry
from flow.memory_content import InMemoryContentRepository
from flow.processor import Processor
from flow.rollbacks import RollbackWatch
from flow.shard import open_shard
from repositories.content.errors import ContentCorrupted, ContentRepositoryFull, ContentUnavailable, ContentWriteFailed
from repositories.storage import LocalStorage

# -- the decisions -------------------------------------------------------------------------


def test_a_flowfile_alone_in_its_session_is_penalized_after_max_rollbacks_in_a_row():
    watch = RollbackWatch(3)
    assert watch.rolled_back(["a"]).penalize == frozenset()
    assert watch.rolled_back(["a"]).penalize == frozenset()
    verdict = watch.rolled_back(["a"])
    assert verdict.penalize == {"a"} and verdict.report == ("a",)
    again = watch.rolled_back(["a"])
    assert again.penalize == {"a"} and again.report == (), "reported once"


def test_a_commit_clears_the_count_so_rollbacks_must_be_in_a_row():
    watch = RollbackWatch(2)
    watch.rolled_back(["a"])
    watch.committed(["a"])
    assert watch.rolled_back(["a"]).penalize == frozenset() and watch.count("a") == 1


def test_the_flowfile_a_failure_names_is_penalized_at_once_and_the_others_are_not_counted():
    watch = RollbackWatch(5)
    verdict = watch.rolled_back(["a", "b", "c"], at_fault="b")
    assert verdict.penalize == {"b"} and verdict.report == ("b",)
    assert watch.count("a") == watch.count("c") == 0 and watch.polled_limit is None


def test_a_failing_batch_is_scanned_one_flowfile_at_a_time_to_find_the_poison():
    watch = RollbackWatch(2)
    batch = ["a", "b", "p", "c"]
    assert watch.rolled_back(batch).penalize == frozenset()
    assert watch.rolled_back(batch).penalize == frozenset(), "the innocent ones are not penalized with it"
    assert watch.polled_limit == 1 and watch.scan_left == 4
    watch.committed(["a"])
    watch.committed(["b"])
    assert watch.rolled_back(["p"]).penalize == {"p"}
    watch.committed(["c"])
    assert watch.polled_limit is None and watch.tracked == 1  # p, still failing


def test_a_processor_that_cannot_work_one_at_a_time_ends_the_scan_and_then_the_batch_is_penalized():
    watch = RollbackWatch(1)
    assert watch.rolled_back(["a", "b"]).penalize == frozenset() and watch.polled_limit == 1
    watch.ended_without_commit(["a"])  # it put the FlowFile back: it wants more at once
    assert watch.polled_limit is None and not watch.can_scan
    assert watch.rolled_back(["a", "b"]).penalize == {"a", "b"}


def test_counts_are_kept_for_a_bounded_number_of_flowfiles():
    watch = RollbackWatch(5, max_tracked=100)
    for index in range(1000):
        watch.rolled_back([f"f{index}"])
    assert watch.tracked == 100 and watch.count("f999") == 1 and watch.count("f0") == 0


# -- a real engine -------------------------------------------------------------------------

COUNT = 40
POISON = "17"


class EmitOnce(Processor):
    """A source that emits COUNT FlowFiles (attribute n) in its first run."""

    type_name = "TestEmitOnce"
    is_source = True

    def __init__(self, processor_id):
        super().__init__(processor_id)
        self.done = False

    def on_trigger(self, context, session):
        if self.done:
            context.yield_()
            return
        for index in range(COUNT):
            session.transfer(session.create(attributes={"n": str(index)}), "success")
        self.done = True


class Choke(Processor):
    """Takes batches of 10 and fails the whole batch when the poison FlowFile is in it."""

    type_name = "TestChoke"
    relationships = ()
    error = ValueError
    delivered: list[str] = []
    poison_batches: list[int] = []
    lock = threading.Lock()

    def on_trigger(self, context, session):
        batch = session.get_batch(10)
        for flowfile in batch:
            if flowfile.attributes["n"] == POISON:
                with Choke.lock:
                    Choke.poison_batches.append(len(batch))
                if Choke.error is UnreadableContent:
                    raise UnreadableContent(flowfile, ContentCorrupted("the bytes do not match their checksum"))
                raise Choke.error(f"cannot handle n={POISON}")
        for flowfile in batch:
            with Choke.lock:
                Choke.delivered.append(flowfile.attributes["n"])
            session.remove(flowfile)


@pytest.fixture(autouse=True)
def fresh_counts():
    Choke.delivered, Choke.poison_batches, Choke.error = [], [], ValueError
    Outage.runs, Outage.error = 0, ContentUnavailable


def engine(tmp_path, max_rollbacks: int, sink: str = "TestChoke"):
    registry = standard_registry()
    for processor in (EmitOnce, Choke, Outage):
        registry.register(processor)
    definition = parse_flow(
        {
            "processors": [
                {"id": "emit", "type": "TestEmitOnce"},
                {
                    "id": "choke",
                    "type": sink,
                    "scheduling": {
                        "yield_duration": "5 ms",
                        "penalty_duration": "1 hour",
                        "max_rollbacks": max_rollbacks,
                    },
                },
            ],
            "connections": [{"id": "in", "source": "emit", "destination": "choke"}],
        },
        registry=registry,
    )
    graph = FlowGraph(definition)
    shard = open_shard(LocalStorage(), str(tmp_path / "shard"), "s", graph.queues.values(), checkpoint_interval=None)
    shard.recover()
    return TraditionalEngine(graph, shard, InMemoryContentRepository(), None, threads=2), shard, graph.queues["in"]


def run_until_only_the_poison_waits(tmp_path, max_rollbacks: int):
    flow, shard, queue = engine(tmp_path, max_rollbacks)
    flow.start()
    try:
        deadline = time.monotonic() + 20
        while not (len(Choke.delivered) == COUNT - 1 and queue.count == 1):
            assert time.monotonic() < deadline, f"the queue did not move past the poison: {flow.status()}"
            time.sleep(0.005)  # a poll of the queue, not a wait standing in for one
    finally:
        flow.stop(timeout=10)
        shard.wal.close()
    assert sorted(Choke.delivered, key=int) == [str(n) for n in range(COUNT) if str(n) != POISON], "each once"
    (held,) = [entry[2] for entry in queue.snapshot().entries]
    assert held.attributes["n"] == POISON and held.penalty_expiration > 0, "kept, penalized"


def test_the_engine_penalizes_a_poison_flowfile_after_max_rollbacks_and_the_queue_moves_on(tmp_path, caplog):
    with caplog.at_level(logging.ERROR, logger="flow.engine"):
        run_until_only_the_poison_waits(tmp_path, max_rollbacks=3)
    # Three failed batches of ten, then one FlowFile per session until the poison failed alone.
    assert Choke.poison_batches == [10, 10, 10, 1]
    assert caplog.text.count("rolled back its session 3 times in a row") == 1


def test_content_the_processor_does_not_route_penalizes_its_flowfile_at_the_first_rollback(tmp_path, caplog):
    Choke.error = UnreadableContent
    with caplog.at_level(logging.ERROR, logger="flow.engine"):
        run_until_only_the_poison_waits(tmp_path, max_rollbacks=5)
    assert Choke.poison_batches == [10]
    assert caplog.text.count("cannot be read (ContentCorrupted: the bytes do not match their checksum)") == 1


class Outage(Processor):
    """Fails its first 8 runs as content storage that is down (or full) does, then delivers."""

    type_name = "TestOutage"
    relationships = ()
    runs = 0
    error = ContentUnavailable

    def on_trigger(self, context, session):
        batch = session.get_batch(10)
        Outage.runs += 1
        if Outage.runs <= 8:
            # As a repository says it: the usage it measured changes from one attempt to the next.
            raise Outage.error(f"content container 'local' is {96 + Outage.runs / 10:.1f}% full, or down")
        for flowfile in batch:
            Choke.delivered.append(flowfile.attributes["n"])
            session.remove(flowfile)


@pytest.mark.parametrize("error", [ContentUnavailable, ContentWriteFailed, ContentRepositoryFull])
def test_an_outage_is_never_counted_against_the_flowfiles_and_is_logged_once(tmp_path, caplog, error):
    Outage.error = error
    flow, shard, queue = engine(tmp_path, max_rollbacks=2, sink="TestOutage")
    caplog.set_level(logging.WARNING, logger="flow.engine")
    flow.start()
    try:
        deadline = time.monotonic() + 20
        while len(Choke.delivered) < COUNT:
            assert time.monotonic() < deadline, f"a FlowFile was penalized through the outage: {flow.status()}"
            time.sleep(0.005)  # a poll of the queue, not a wait standing in for one
    finally:
        flow.stop(timeout=10)
        shard.wal.close()
    assert Outage.runs > 8 and sorted(Choke.delivered, key=int) == [str(n) for n in range(COUNT)]
    assert caplog.text.count("content container 'local' is") == 1, "one line for the outage, not one per attempt"
