"""What a shard being adopted makes ready while its WAL is recovered
(`flow.preparation`): each processor that prepares is called once, on a thread of its
own, with its configured properties, the shard and the admission check; one that fails
is logged and left to its first task; `release` gives back what no task took."""

from __future__ import annotations

import logging

from flow.graph import FlowGraph
from flow.loading import parse_flow, standard_registry
from flow.preparation import Preparation
from flow.processor import Processor, PropertyDescriptor


class Ready(Processor):
    type_name = "TestReady"
    properties = (PropertyDescriptor("name", default="x"),)
    calls: list = []
    released: list = []

    def on_trigger(self, context, session):
        pass

    def prepare_adopted(self, context, shard_id, admit):
        admit()
        if context["name"] == "broken":
            raise RuntimeError("the broker is down")
        Ready.calls.append((self.id, context["name"], shard_id))

    def release_prepared(self):
        Ready.released.append(self.id)


class Plain(Processor):
    type_name = "TestPlain"

    def on_trigger(self, context, session):
        pass


def graph() -> FlowGraph:
    registry = standard_registry()
    for processor in (Ready, Plain):
        registry.register(processor)
    return FlowGraph(
        parse_flow(
            {
                "processors": [
                    {"id": "plain", "type": "TestPlain"},
                    {"id": "sink", "type": "TestReady", "properties": {"name": "out"}, "auto_terminate": ["success"]},
                    {
                        "id": "other",
                        "type": "TestReady",
                        "properties": {"name": "broken"},
                        "auto_terminate": ["success"],
                    },
                ],
                "connections": [
                    {"source": "plain", "destination": "sink"},
                    {"source": "plain", "destination": "other"},
                ],
            },
            registry=registry,
        )
    )


def test_each_processor_that_prepares_is_called_with_its_properties_the_shard_and_the_admission(caplog):
    Ready.calls, Ready.released = [], []
    admitted = []
    with caplog.at_level(logging.INFO, logger="flow.preparation"):
        preparation = Preparation(graph(), "n1-4", lambda: admitted.append(1), services=None)
        assert preparation.wait(10)
    assert Ready.calls == [("sink", "out", "n1-4")] and len(admitted) == 2
    assert [p.id for p in preparation.processors] == ["sink", "other"]  # not the plain one
    assert "other: preparing for shard n1-4 failed (its first task does it): the broker is down" in caplog.text
    preparation.release()
    assert Ready.released == ["sink", "other"]


def test_a_node_not_admitted_prepares_nothing(caplog):
    Ready.calls = []

    def refused():
        raise PermissionError("deposed")

    with caplog.at_level(logging.INFO, logger="flow.preparation"):
        assert Preparation(graph(), "n1-4", refused, services=None).wait(10)
    assert Ready.calls == [] and caplog.text.count("failed (its first task does it): deposed") == 2
