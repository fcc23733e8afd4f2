"""Which processors an engine schedules: a shard that only drains (an adopted shard of
a clustered node) never schedules its sources, so a source that binds a port (a
ListenHTTP) cannot collide with the same processor of the node's home shard; and an
engine that cannot schedule a processor stops those it scheduled and raises."""

import pytest

from flow.processor import Processor
from tests.flow_engines import source_to_sink

CALLS: list[str] = []


class Bind(Processor):
    """A source that takes a port when scheduled (as ListenHTTP does)."""

    type_name = "TestBind"
    is_source = True

    def on_scheduled(self, context):
        CALLS.append(f"scheduled {self.id}")

    def on_trigger(self, context, session):
        context.yield_()

    def on_stopped(self, context):
        CALLS.append(f"stopped {self.id}")


class Sink(Processor):
    type_name = "TestSink"
    relationships = ()
    fail_to_schedule = False

    def on_scheduled(self, context):
        if Sink.fail_to_schedule:
            raise OSError("address already in use")
        CALLS.append(f"scheduled {self.id}")

    def on_trigger(self, context, session):
        flowfile = session.get()
        if flowfile is not None:
            session.remove(flowfile)

    def on_stopped(self, context):
        CALLS.append(f"stopped {self.id}")


def engine(tmp_path, *, run_sources):
    return source_to_sink(tmp_path, Bind, Sink, source="listen", threads=1, run_sources=run_sources)


@pytest.fixture(autouse=True)
def fresh_calls():
    CALLS.clear()
    Sink.fail_to_schedule = False


def test_a_draining_shard_never_schedules_its_sources(tmp_path):
    flow, shard = engine(tmp_path, run_sources=False)
    flow.start()
    flow.stop(timeout=5)
    shard.wal.close()
    assert CALLS == ["scheduled sink", "stopped sink"]


def test_a_home_shard_schedules_every_processor(tmp_path):
    flow, shard = engine(tmp_path, run_sources=True)
    flow.start()
    flow.stop(timeout=5)
    shard.wal.close()
    assert sorted(CALLS) == ["scheduled listen", "scheduled sink", "stopped listen", "stopped sink"]


def test_a_processor_that_cannot_be_scheduled_stops_those_scheduled_before_it(tmp_path):
    Sink.fail_to_schedule = True
    flow, shard = engine(tmp_path, run_sources=True)
    with pytest.raises(OSError, match="address already in use"):
        flow.start()
    flow.stop(timeout=5)  # after a failed start: nothing more to stop
    shard.wal.close()
    assert CALLS == ["scheduled listen", "stopped listen"]
