"""Per-processor statistics (`flow.processor_stats`): the five-minute window on an
injected clock, and the counts a real engine records from its committed sessions."""

from __future__ import annotations

import re

import pytest

from cluster.services.process import wait_until
from flow.engine import TraditionalEngine
from flow.flowfile import FlowFile
from flow.graph import FlowGraph
from flow.loading import parse_flow, standard_registry
from flow.memory_content import InMemoryContentRepository
from flow.processor import Processor
from flow.processor_stats import (
    FIELDS,
    ProcessorStats,
    SessionCounts,
    SlidingWindow,
    error_attribute,
    zero_figures,
)
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import QueueShard, open_shard
from repositories.storage import LocalStorage

# -- the window, on an injected clock -----------------------------------------------


def test_the_window_sums_the_buckets_of_the_last_five_minutes_and_lets_older_ones_go():
    window = SlidingWindow(2, window_s=300, bucket_s=5)
    window.add(0.0, (1, 10))
    window.add(4.9, (2, 20))  # same bucket
    window.add(6.0, (4, 40))  # the next one
    assert window.totals(6.0) == [7, 70]
    assert window.totals(299.9) == [7, 70]  # bucket 0 still inside
    assert window.totals(300.0) == [4, 40]  # bucket 0 left, bucket 1 stays
    assert window.totals(305.0) == [0, 0]
    assert window.totals(10_000.0) == [0, 0]


def test_a_slot_reused_a_window_later_starts_from_the_new_values():
    window = SlidingWindow(1, window_s=20, bucket_s=5)
    window.add(1.0, (3,))
    window.add(21.0, (5,))  # the same slot, four buckets later
    assert window.totals(21.0) == [5]
    window.add(22.0, (1,))
    assert window.totals(22.0) == [6]


def test_a_window_that_cannot_hold_a_bucket_is_refused():
    with pytest.raises(ValueError, match="cannot hold buckets"):
        SlidingWindow(1, window_s=1, bucket_s=5)


def test_processor_stats_keep_five_minutes_and_since_start_apart():
    now = [100.0]
    stats = ProcessorStats(lambda: now[0])
    stats.record(SessionCounts(in_count=2, in_bytes=20, out_count=1, out_bytes=10, failures=1), 0.5)
    stats.record(None, 0.25)  # rolled back: a task, no FlowFile
    now[0] = 500.0
    stats.record(SessionCounts(read_bytes=7, written_bytes=9), 1.0)
    snapshot = stats.snapshot()
    assert snapshot["five_minutes"] == {
        **zero_figures(),
        "read_bytes": 7,
        "written_bytes": 9,
        "tasks": 1,
        "task_seconds": 1.0,
    }
    assert snapshot["since_start"] == {
        "in_count": 2,
        "in_bytes": 20,
        "read_bytes": 7,
        "written_bytes": 9,
        "out_count": 1,
        "out_bytes": 10,
        "tasks": 3,
        "task_seconds": 1.75,
        "failures": 1,
    }
    assert set(snapshot["since_start"]) == set(FIELDS) and snapshot["last_bulletin"] is None


def test_the_error_attribute_is_the_first_that_names_an_error():
    assert error_attribute({"a": "1", "jsonpath.error": "no match", "error": "later"}) == "no match"
    assert error_attribute({"errors": "not this one"}) is None


# -- counts from real sessions on a real engine -------------------------------------


class FailSome(Processor):
    """Reads each FlowFile; sends every third one (by `seq`) to failure with an error
    attribute, writes the others' content twice over and sends them to success."""

    type_name = "TestStatsFailSome"
    relationships = ("success", "failure")

    def on_trigger(self, context, session):
        for flowfile in session.get_batch(4):
            data = session.read_bytes(flowfile)
            if int(flowfile.attributes["seq"]) % 3 == 0:
                session.transfer(
                    session.put_attribute(flowfile, "check.error", f"bad {flowfile.attributes['seq']}"), "failure"
                )
            else:
                session.transfer(session.write_bytes(flowfile, data + data), "success")


class Sink(Processor):
    type_name = "TestStatsSink"
    relationships = ()

    def on_trigger(self, context, session):
        for flowfile in session.get_batch(10):
            session.remove(flowfile)


class Explode(Processor):
    """Takes one FlowFile, reads it, and raises: every session rolls back."""

    type_name = "TestStatsExplode"
    relationships = ()
    taken: set[str] = set()

    def on_trigger(self, context, session):
        flowfile = session.get()
        if flowfile is not None:
            Explode.taken.add(flowfile.id)
            session.read_bytes(flowfile)
            raise ValueError(f"cannot take {flowfile.attributes['seq']}")


def engine_of(tmp_path, processors, connections):
    registry = standard_registry()
    for kind in (FailSome, Sink, Explode):
        registry.register(kind)
    definition = parse_flow({"processors": processors, "connections": connections}, registry=registry)
    graph = FlowGraph(definition)
    shard = open_shard(LocalStorage(), str(tmp_path / "shard"), "s", graph.queues.values(), checkpoint_interval=None)
    shard.recover()
    return TraditionalEngine(graph, shard, InMemoryContentRepository(), None, threads=2), shard


GENERATE = {
    "id": "gen",
    "type": "GenerateFlowFile",
    "properties": {"batch_size": 5, "max_count": 10, "custom_text": "12345678", "sequence_attribute": "seq"},
}


def test_a_flow_counts_exactly_what_each_processor_took_read_wrote_and_sent(tmp_path):
    engine, shard = engine_of(
        tmp_path,
        [
            GENERATE,
            {"id": "tag", "type": "UpdateAttribute", "properties": {"stage": "tagged"}},
            {"id": "check", "type": FailSome.type_name, "auto_terminate": ["failure"]},
            {"id": "sink", "type": Sink.type_name},
        ],
        [
            {"id": "a", "source": "gen", "destination": "tag"},
            {"id": "b", "source": "tag", "destination": "check"},
            # success has two connections: each FlowFile counts once per connection
            {"id": "ok", "source": "check", "destination": "sink"},
            {"id": "copy", "source": "check", "destination": "sink"},
        ],
    )
    engine.start()
    try:
        processors = lambda: engine.status()["processors"]  # noqa: E731
        wait_until(lambda: processors()["sink"]["since_start"]["in_count"] == 12, 20, "the sink to take all 12")
        wait_until(engine.is_idle, 10, "the flow to drain")
    finally:
        engine.stop(timeout=10)
        shard.wal.close()
    figures = {pid: p["since_start"] for pid, p in engine.status()["processors"].items()}
    counted = ("in_count", "in_bytes", "read_bytes", "written_bytes", "out_count", "out_bytes", "failures")
    expected = {
        # 10 FlowFiles of 8 bytes, written by the source
        "gen": (0, 0, 0, 80, 10, 80, 0),
        "tag": (10, 80, 0, 0, 10, 80, 0),
        # seq 0, 3, 6, 9 to failure (auto-terminated: not out); 6 doubled to 16 bytes, into 2 connections
        "check": (10, 80, 80, 6 * 16, 12, 12 * 16, 4),
        "sink": (12, 12 * 16, 0, 0, 0, 0, 0),
    }
    assert {pid: tuple(figures[pid][name] for name in counted) for pid in expected} == expected
    for pid, processor in engine.status()["processors"].items():
        assert processor["since_start"]["tasks"] >= 1 and processor["since_start"]["task_seconds"] > 0, pid
        assert processor["five_minutes"] == processor["since_start"], pid  # all within the window
    bulletin = engine.status()["processors"]["check"]["last_bulletin"]
    assert re.fullmatch(r"check routed FlowFile \S+ to failure: bad [0369]", bulletin["message"])
    assert bulletin["flowfile_id"] in bulletin["message"] and bulletin["at_ms"] > 0
    assert engine.status()["processors"]["tag"]["last_bulletin"] is None


def test_a_rolled_back_session_counts_its_task_not_its_flowfiles_and_leaves_a_bulletin(tmp_path):
    Explode.taken.clear()
    engine, shard = engine_of(
        tmp_path,
        [
            {**GENERATE, "properties": {**GENERATE["properties"], "max_count": 1}},
            {"id": "boom", "type": Explode.type_name},
        ],
        [{"id": "a", "source": "gen", "destination": "boom"}],
    )
    engine.start()
    try:
        boom = lambda: engine.status()["processors"]["boom"]  # noqa: E731
        wait_until(lambda: boom()["last_bulletin"] is not None, 10, "the processor to fail")
    finally:
        engine.stop(timeout=10)
        shard.wal.close()
    figures = boom()
    assert figures["since_start"]["tasks"] >= 1 and figures["failures"] >= 1
    assert {name: figures["since_start"][name] for name in ("in_count", "in_bytes", "read_bytes", "out_count")} == {
        "in_count": 0,
        "in_bytes": 0,
        "read_bytes": 0,
        "out_count": 0,
    }
    (flowfile_id,) = Explode.taken
    assert engine.graph.queues["a"].find(flowfile_id) is not None  # the FlowFile stayed in its queue
    assert figures["last_bulletin"]["message"] == "ValueError: cannot take 0"
    assert figures["last_bulletin"]["flowfile_id"] == flowfile_id


# -- one session's counts -----------------------------------------------------------


class NoCommit:
    """A committer that applies nothing: the counts are the session's own."""

    def commit(self, tx):
        pass

    def hold_claims(self, claims):
        pass


def session_over(sizes):
    clock = lambda: 1_000  # noqa: E731
    content = InMemoryContentRepository()
    incoming, ok, copy = (FlowFileQueue(name, clock_ms=clock) for name in ("in", "ok", "copy"))
    flowfiles = []
    for size in sizes:
        writer = content.write()
        writer.write(b"x" * size)
        flowfiles.append(FlowFile.new(1, {}).with_content(writer.close(sync=False), size).in_queue("in"))
    incoming.put_all(flowfiles)
    return ProcessSession(
        component_id="p",
        component_type="Test",
        committer=NoCommit(),
        content=content,
        shard=QueueShard("s", [incoming, ok, copy]),
        incoming=[incoming],
        outgoing={"success": [ok, copy]},
        auto_terminated=("failure",),
        clock_ms=clock,
    )


def test_a_session_counts_in_read_written_out_and_failures_as_it_commits():
    session = session_over([10, 20, 30, 40])
    back, removed, onward, failing = session.get_batch(4)
    session.transfer(back)  # back to its queue: neither in nor out
    session.remove(removed)  # in, and dropped
    session.transfer(onward, "success")  # two connections: out twice
    session.read_bytes(failing)
    failing = session.write_bytes(failing, b"12345")
    session.transfer(session.put_attribute(failing, "x.error", "bad"), "failure")  # auto-terminated: not out
    created = session.write_bytes(session.create(), b"1234567")
    session.transfer(created, "success")
    assert session.counts is None
    session.commit()
    assert session.counts == SessionCounts(
        in_count=3,
        in_bytes=20 + 30 + 40,
        read_bytes=40,
        written_bytes=5 + 7,
        out_count=4,
        out_bytes=2 * 30 + 2 * 7,
        failures=1,
        failed=(failing.id, "bad"),
    )


def test_a_rolled_back_session_has_no_counts():
    session = session_over([10])
    (flowfile,) = session.get_batch(1)
    session.transfer(flowfile, "success")
    session.rollback()
    assert session.counts is None
