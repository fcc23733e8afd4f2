"""A `FlowRuntime` starts its processors' preparations (`Processor.prepare_adopted`:
PublishKafka makes its transactional producer) as it begins to recover its shard's WAL,
for its home shard as for a shard it adopts; one made while the adoption fenced the
shard (`early_adoption`) is run with, not made again. The WAL's opening is stopped
short here: what is checked is that every preparation began before it, with the
runtime's own admission check."""

from __future__ import annotations

import threading

import pytest

from cluster.node import flow_runtime
from cluster.node.flow_runtime import FlowRuntime
from flow.graph import FlowGraph
from flow.loading import parse_flow, standard_registry
from flow.preparation import Preparation
from flow.processor import Processor


class Prepares(Processor):
    type_name = "TestPrepares"
    calls: list[tuple[str, str]] = []
    done = threading.Event()

    def on_trigger(self, context, session):
        pass

    def prepare_adopted(self, context, shard_id, admit):
        admit()  # the runtime's gate: open while nothing shut it
        Prepares.calls.append((self.id, shard_id))
        Prepares.done.set()


class Opening(Exception):
    """The WAL's opening, reached: recovery stops here."""


def definition():
    registry = standard_registry()
    registry.register(Prepares)
    return parse_flow(
        {
            "processors": [
                {"id": "gen", "type": "GenerateFlowFile"},
                {"id": "publish", "type": "TestPrepares", "auto_terminate": ["success"]},
            ],
            "connections": [{"source": "gen", "destination": "publish"}],
        },
        registry=registry,
    )


class Handle:
    shard, epoch, step, gate, files, previous_shards = "n1-7", 7, None, None, None, None

    def __init__(self, home: bool):
        self.home = home


@pytest.fixture(autouse=True)
def wal_opening_stops(monkeypatch):
    Prepares.calls.clear()
    Prepares.done.clear()

    def opening(*args, **kwargs):
        raise Opening()

    monkeypatch.setattr(flow_runtime, "open_node_shard", opening)


@pytest.mark.parametrize("home", [True, False], ids=["home shard", "adopted shard"])
def test_every_shard_prepares_its_processors_before_its_wal_is_opened(home):
    runtime = FlowRuntime(Handle(home), definition(), None, None)
    with pytest.raises(Opening):
        runtime.recover()
    assert Prepares.done.wait(10), "no preparation ran"
    assert Prepares.calls == [("publish", "n1-7")]


def test_a_preparation_made_while_the_adoption_fenced_is_run_with_not_made_again():
    graph = FlowGraph(definition())
    early = Preparation(graph, "n1-7", lambda: None, None)
    assert early.wait(10)
    runtime = FlowRuntime(Handle(False), graph.definition, None, None, prepared=(graph, early))
    with pytest.raises(Opening):
        runtime.recover()
    assert runtime.graph is graph
    assert Prepares.calls == [("publish", "n1-7")]  # once: the early one's
