"""Stopping and starting one processor of a running engine, as NiFi's stop and start:
a stopped processor gets no new task, its running tasks finish, `on_stopped` runs once
the last one has ended (exactly once), and a start schedules it again."""

from __future__ import annotations

import threading

import pytest

from cluster.services.process import wait_until
from flow.errors import ProcessorStateError
from flow.processor import Processor
from tests.flow_engines import source_to_sink

CALLS: list[str] = []
GATE = threading.Event()  # the sink's tasks wait on it while `Sink.block` is set
BLOCKED = threading.Event()  # set by a sink task that holds a FlowFile at the gate
STOP_GATE = threading.Event()  # the sink's on_stopped waits on it while `Sink.hold_stop` is set
IN_STOP = threading.Event()  # set by the sink's on_stopped as it begins


class Source(Processor):
    type_name = "TestSource"
    is_source = True

    def on_trigger(self, context, session):
        if session.queued() < 5:
            session.transfer(session.create(), "success")
        else:
            context.yield_()


class Sink(Processor):
    type_name = "TestBlockingSink"
    relationships = ()
    block = False
    hold_stop = False

    def on_scheduled(self, context):
        CALLS.append("scheduled")

    def on_trigger(self, context, session):
        flowfile = session.get()
        if flowfile is None:
            return
        CALLS.append("task")
        if Sink.block:
            BLOCKED.set()
            assert GATE.wait(30), "the test never opened the gate"
        session.remove(flowfile)

    def on_stopped(self, context):
        IN_STOP.set()
        if Sink.hold_stop:
            assert STOP_GATE.wait(30), "the test never let on_stopped end"
        CALLS.append("stopped")


@pytest.fixture
def engine(tmp_path):
    CALLS.clear()
    GATE.clear()
    BLOCKED.clear()
    STOP_GATE.clear()
    IN_STOP.clear()
    Sink.block = Sink.hold_stop = False
    made, shard = source_to_sink(tmp_path, Source, Sink, threads=2)
    made.start()
    yield made
    GATE.set()
    STOP_GATE.set()
    made.stop(timeout=10)
    shard.wal.close()


def state(engine, processor="sink"):
    return engine.status()["processors"][processor]["state"]


def test_a_stopped_processor_runs_no_task_until_started_again(engine):
    wait_until(lambda: CALLS.count("task") >= 3, 10, "the sink to run")
    assert engine.stop_processor("sink", timeout=10) == "STOPPED" == state(engine)
    assert CALLS.count("stopped") == 1
    tasks = CALLS.count("task")
    wait_until(lambda: engine.graph.queues["in"].count >= 5, 10, "the source to fill the queue")
    assert CALLS.count("task") == tasks and state(engine, "source") == "RUNNING"
    assert engine.stop_processor("sink") == "STOPPED" and CALLS.count("stopped") == 1  # a second stop: nothing
    assert engine.start_processor("sink") == "RUNNING" == state(engine)
    assert CALLS.count("scheduled") == 2
    wait_until(lambda: CALLS.count("task") > tasks, 10, "the sink to run again")
    engine.stop(timeout=10)
    assert CALLS.count("stopped") == 2, "the engine's stop calls on_stopped once more, not twice"


def test_a_stop_waits_for_running_tasks_and_the_last_one_to_end_calls_on_stopped(engine):
    Sink.block = True
    assert BLOCKED.wait(10), "no sink task reached the gate"
    tasks = CALLS.count("task")
    assert engine.status()["processors"]["sink"]["running"] == 1
    assert engine.stop_processor("sink", timeout=0.2) == "STOPPING" == state(engine)
    assert "stopped" not in CALLS
    with pytest.raises(ProcessorStateError, match="still stopping: 1 of its tasks are running"):
        engine.start_processor("sink")
    GATE.set()
    wait_until(lambda: state(engine) == "STOPPED", 10, "the stop to complete once the task ended")
    assert CALLS.count("stopped") == 1 and CALLS.count("task") == tasks
    engine.stop(timeout=10)
    assert CALLS.count("stopped") == 1


def test_a_stop_that_waited_for_the_last_task_returns_only_once_on_stopped_has_ended(engine):
    """What is started again as soon as its stop returns (a hand-over's merge) must find
    its `on_stopped` done: a ListenHTTP whose socket was still open could not bind its
    port again ("Address already in use", CI under load). Before, the last task's thread
    turned the processor STOPPED, the waiting stop returned, and only then did that
    thread run `on_stopped`."""
    Sink.block = Sink.hold_stop = True
    assert BLOCKED.wait(10), "no sink task reached the gate"
    returned = []

    def stop():
        answer = engine.stop_processor("sink", timeout=30)
        returned.append((answer, CALLS.count("stopped")))

    stopper = threading.Thread(target=stop, daemon=True)
    stopper.start()
    wait_until(lambda: state(engine) == "STOPPING", 10, "the stop to begin")
    GATE.set()  # the last task ends; its thread or the stop runs on_stopped, which waits
    assert IN_STOP.wait(10), "on_stopped was never called"
    STOP_GATE.set()
    stopper.join(10)
    assert returned == [("STOPPED", 1)]


def test_a_source_of_a_draining_shard_cannot_be_started(tmp_path):
    drains, shard = source_to_sink(tmp_path, Source, Sink, threads=1, run_sources=False)
    assert drains.status()["processors"]["source"]["state"] == "STOPPED"
    with pytest.raises(ProcessorStateError, match="source does not run on shard s"):
        drains.start_processor("source")
    shard.wal.close()


def test_a_processor_made_stopped_is_never_scheduled_until_started(tmp_path):
    """What a restart or an adopter does with a processor an operator stopped: the
    engine is made with it stopped (`stopped`), so not one task or `on_scheduled` runs."""
    CALLS.clear()
    made, shard = source_to_sink(tmp_path, Source, Sink, threads=2, stopped=("sink", "no-such-processor"))
    try:
        made.start()
        assert state(made) == "STOPPED" and state(made, "source") == "RUNNING"
        states, runs = made.processor_states()
        assert states == {"source": "RUNNING", "sink": "STOPPED"} and runs == {"source", "sink"}
        wait_until(lambda: made.graph.queues["in"].count >= 5, 10, "the source to fill the queue")
        assert CALLS == []
        assert made.start_processor("sink") == "RUNNING"
        wait_until(lambda: made.graph.queues["in"].count == 0 or CALLS.count("task") >= 5, 10, "the sink to run")
        assert CALLS[0] == "scheduled"
    finally:
        made.stop(timeout=10)
        shard.wal.close()


# -- NiFi's Run Once: a stopped processor runs exactly one task (on_scheduled, one
# on_trigger, on_stopped) and is STOPPED again; a running one is refused.


@pytest.fixture
def stopped_sink(tmp_path):
    """The sink stopped from the start, five FlowFiles queued for it, the source stopped."""
    CALLS.clear()
    GATE.clear()
    BLOCKED.clear()
    Sink.block = False
    made, shard = source_to_sink(tmp_path, Source, Sink, threads=2, stopped=("sink",))
    made.start()
    wait_until(lambda: made.graph.queues["in"].count >= 5, 10, "the source to fill the queue")
    assert made.stop_processor("source", timeout=10) == "STOPPED"
    yield made
    GATE.set()
    made.stop(timeout=10)
    shard.wal.close()


def test_run_once_runs_one_task_between_on_scheduled_and_on_stopped_and_leaves_it_stopped(stopped_sink):
    engine = stopped_sink
    queued = engine.graph.queues["in"].count
    assert engine.run_once("sink", timeout=10) == "STOPPED" == state(engine)
    assert CALLS == ["scheduled", "task", "stopped"]
    assert engine.graph.queues["in"].count == queued - 1
    assert engine.status()["processors"]["sink"]["tasks"] == 1
    assert engine.run_once("sink", timeout=10) == "STOPPED"
    assert CALLS == ["scheduled", "task", "stopped"] * 2 and engine.graph.queues["in"].count == queued - 2
    engine.stop(timeout=10)
    assert CALLS.count("stopped") == 2, "the engine's stop does not stop it once more"


def test_run_once_of_a_running_or_stopping_processor_is_refused(stopped_sink):
    engine = stopped_sink
    assert engine.start_processor("sink") == "RUNNING"
    with pytest.raises(ProcessorStateError, match="sink is RUNNING: stop it first"):
        engine.run_once("sink")
    assert state(engine) == "RUNNING"


def test_a_run_once_task_that_outlasts_the_wait_is_stopping_until_it_ends(stopped_sink):
    engine = stopped_sink
    Sink.block = True
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
    drains, shard = source_to_sink(tmp_path, Source, Sink, threads=1, run_sources=False)
    try:
        drains.start()
        with pytest.raises(ProcessorStateError, match="source does not run on shard s"):
            drains.run_once("source")
    finally:
        drains.stop(timeout=10)
        shard.wal.close()
