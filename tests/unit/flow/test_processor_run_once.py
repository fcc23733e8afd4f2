"""NiFi's Run Once on a real engine: a stopped processor runs exactly one task
(`on_scheduled`, one `on_trigger`, `on_stopped`) and is STOPPED again; a running one is
refused."""

from __future__ import annotations

import threading

import pytest

from cluster.services.process import wait_until
from flow.errors import ProcessorStateError
from flow.processor import Processor
from tests.flow_engines import source_to_sink

CALLS: list[str] = []
GATE = threading.Event()  # the sink's task waits on it while `OneAtATimeSink.block` is set
BLOCKED = threading.Event()


class FiveSource(Processor):
    type_name = "TestFiveSource"
    is_source = True

    def on_trigger(self, context, session):
        if session.queued() < 5:
            session.transfer(session.create(), "success")
        else:
            context.yield_()


class OneAtATimeSink(Processor):
    type_name = "TestOneAtATimeSink"
    relationships = ()
    block = False

    def on_scheduled(self, context):
        CALLS.append("scheduled")

    def on_trigger(self, context, session):
        flowfile = session.get()
        if flowfile is None:
            return
        CALLS.append("task")
        if OneAtATimeSink.block:
            BLOCKED.set()
            assert GATE.wait(30), "the test never opened the gate"
        session.remove(flowfile)

    def on_stopped(self, context):
        CALLS.append("stopped")


@pytest.fixture
def engine(tmp_path):
    """The sink stopped from the start, five FlowFiles queued for it, the source stopped."""
    CALLS.clear()
    GATE.clear()
    BLOCKED.clear()
    OneAtATimeSink.block = False
    made, shard = source_to_sink(tmp_path, FiveSource, OneAtATimeSink, threads=2, stopped=("sink",))
    made.start()
    wait_until(lambda: made.graph.queues["in"].count >= 5, 10, "the source to fill the queue")
    assert made.stop_processor("source", timeout=10) == "STOPPED"
    yield made
    GATE.set()
    made.stop(timeout=10)
    shard.wal.close()


def state(engine, processor="sink"):
    return engine.status()["processors"][processor]["state"]


def test_run_once_runs_one_task_between_on_scheduled_and_on_stopped_and_leaves_it_stopped(engine):
    queued = engine.graph.queues["in"].count
    assert engine.run_once("sink", timeout=10) == "STOPPED" == state(engine)
    assert CALLS == ["scheduled", "task", "stopped"]
    assert engine.graph.queues["in"].count == queued - 1
    assert engine.status()["processors"]["sink"]["tasks"] == 1
    assert engine.run_once("sink", timeout=10) == "STOPPED"
    assert CALLS == ["scheduled", "task", "stopped"] * 2 and engine.graph.queues["in"].count == queued - 2
    engine.stop(timeout=10)
    assert CALLS.count("stopped") == 2, "the engine's stop does not stop it once more"


def test_run_once_of_a_running_or_stopping_processor_is_refused(engine):
    assert engine.start_processor("sink") == "RUNNING"
    with pytest.raises(ProcessorStateError, match="sink is RUNNING: stop it first"):
        engine.run_once("sink")
    assert state(engine) == "RUNNING"


def test_a_run_once_task_that_outlasts_the_wait_is_stopping_until_it_ends(engine):
    OneAtATimeSink.block = True
    assert engine.run_once("sink", timeout=0.2) == "STOPPING" == state(engine)
    assert BLOCKED.is_set() and "stopped" not in CALLS
    with pytest.raises(ProcessorStateError, match="sink is STOPPING: stop it first"):
        engine.run_once("sink")
    with pytest.raises(ProcessorStateError, match="still stopping"):
        engine.start_processor("sink")
    GATE.set()
    wait_until(lambda: state(engine) == "STOPPED", 10, "the task to end")
    assert CALLS == ["scheduled", "task", "stopped"]


def test_run_once_of_a_processor_that_does_not_run_on_the_shard_is_refused(tmp_path):
    drains, shard = source_to_sink(tmp_path, FiveSource, OneAtATimeSink, threads=1, run_sources=False)
    try:
        drains.start()
        with pytest.raises(ProcessorStateError, match="source does not run on shard s"):
            drains.run_once("source")
    finally:
        drains.stop(timeout=10)
        shard.wal.close()
