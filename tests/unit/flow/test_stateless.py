"""The stateless engine: one transaction per trigger, callbacks held until success."""

from __future__ import annotations

from flow.definition import parse_flow
from flow.processor import Processor, PropertyDescriptor
from flow.stateless import StatelessFlow


class Acker(Processor):
    """Passes FlowFiles through; each commit registers an acknowledgement callback."""

    type_name = "TestAcker"
    acks: list = []

    def on_trigger(self, context, session):
        flowfile = session.get()
        session.transfer(flowfile, "success")
        session.commit_async(lambda: Acker.acks.append(flowfile.attributes["n"]))


class Exploder(Processor):
    type_name = "TestExploder"
    properties = (PropertyDescriptor("fail_on", "string", default="boom"),)

    def on_trigger(self, context, session):
        flowfile = session.get()
        if flowfile.attributes.get("n") == context["fail_on"]:
            raise RuntimeError("exploded on purpose")
        session.transfer(flowfile, "success")


REGISTRY = None


def flow(route_failures=False):
    from flow.processors import PROCESSOR_TYPES

    registry = {**PROCESSOR_TYPES, "TestAcker": Acker, "TestExploder": Exploder}
    processors = [
        {"id": "ack", "type": "TestAcker"},
        {"id": "route", "type": "RouteOnAttribute", "properties": {"bad": "${n:equals('poison')}"}},
        {"id": "explode", "type": "TestExploder"},
    ]
    connections = [
        {"source": "in", "destination": "ack"},
        {"source": "ack", "destination": "route"},
        {"source": "route", "relationships": ["unmatched"], "destination": "explode"},
        {"source": "route", "relationships": ["bad"], "destination": "failed"},
        {"source": "explode", "destination": "out"},
    ]
    ports = [{"id": "in", "type": "input"}, {"id": "out", "type": "output"}, {"id": "failed", "type": "failure"}]
    return StatelessFlow(parse_flow({"processors": processors, "connections": connections, "ports": ports},
                                    registry=registry))


def test_success_holds_callbacks_until_acknowledged():
    Acker.acks = []
    stateless = flow()
    result = stateless.trigger([({"n": "1"}, b"one"), ({"n": "2"}, b"two")])
    assert result.success
    assert sorted((a["n"], d) for _, a, d in result.outputs) == [("1", b"one"), ("2", b"two")]
    assert Acker.acks == [], "nothing acknowledged before the whole flow succeeded"
    result.acknowledge()
    result.acknowledge()
    assert sorted(Acker.acks) == ["1", "2"]
    kinds = {e.event_type.value for e in result.provenance_events}
    assert "ROUTE" in kinds


def test_a_processor_failure_fails_everything_and_runs_no_callback():
    Acker.acks = []
    result = flow().trigger([({"n": "1"}, b""), ({"n": "boom"}, b"")])
    assert not result.success and "exploded on purpose" in result.failure and "explode" in result.failure
    result.acknowledge()
    assert Acker.acks == [] and result.outputs == []


def test_reaching_a_failure_port_fails_the_transaction():
    Acker.acks = []
    result = flow().trigger([({"n": "1"}, b""), ({"n": "poison"}, b"")])
    assert not result.success and "failure port 'failed'" in result.failure
    result.acknowledge()
    assert Acker.acks == []


def test_a_failed_trigger_leaves_nothing_behind_for_the_next():
    Acker.acks = []
    stateless = flow()
    assert not stateless.trigger([({"n": "boom"}, b"")]).success
    result = stateless.trigger([({"n": "3"}, b"x")])
    assert result.success and [a["n"] for _, a, _ in result.outputs] == ["3"]
