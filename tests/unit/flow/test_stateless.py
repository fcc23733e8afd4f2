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
    return StatelessFlow(
        parse_flow({"processors": processors, "connections": connections, "ports": ports}, registry=registry)
    )


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


class Promiser(Processor):
    """A source that makes one FlowFile per trigger and records how each commit ended."""

    type_name = "TestPromiser"
    is_source = True
    outcomes: list = []

    def on_trigger(self, context, session):
        flowfile = session.create(attributes={"n": str(len(Promiser.outcomes))})
        session.transfer(flowfile, "success")
        n = flowfile.attributes["n"]
        Promiser.outcomes.append((n, "pending"))
        index = len(Promiser.outcomes) - 1

        def succeeded():
            Promiser.outcomes[index] = (n, "kept")

        def failed(error):
            Promiser.outcomes[index] = (n, f"failed: {type(error).__name__}: {error}")

        session.commit_async(succeeded, failed)


class FailOnce(Processor):
    type_name = "TestFailOnce"
    fail = True

    def on_trigger(self, context, session):
        flowfile = session.get()
        if FailOnce.fail:
            FailOnce.fail = False
            raise RuntimeError("failed on purpose")
        session.transfer(flowfile, "success")


def promiser_flow(route_to_failure=False):
    from flow.processors import PROCESSOR_TYPES

    registry = {**PROCESSOR_TYPES, "TestPromiser": Promiser, "TestFailOnce": FailOnce}
    return StatelessFlow(
        parse_flow(
            {
                "processors": [{"id": "promise", "type": "TestPromiser"}, {"id": "check", "type": "TestFailOnce"}],
                "ports": [{"id": "out", "type": "output"}, {"id": "failed", "type": "failure"}],
                "connections": [
                    {"source": "promise", "destination": "failed" if route_to_failure else "check"},
                    {"source": "check", "destination": "out"},
                ],
            },
            registry=registry,
        )
    )


def test_a_failed_trigger_runs_every_held_on_failure_with_the_error():
    Promiser.outcomes, FailOnce.fail = [], True
    stateless = promiser_flow()
    result = stateless.trigger()
    assert not result.success and "failed on purpose" in result.failure
    (outcome,) = Promiser.outcomes
    assert outcome[1].startswith("failed: StatelessFlowFailed:") and "failed on purpose" in outcome[1]
    result = stateless.trigger()
    assert result.success and Promiser.outcomes[1] == ("1", "pending")
    result.acknowledge()
    assert Promiser.outcomes[1] == ("1", "kept")


def test_reaching_a_failure_port_runs_every_held_on_failure():
    Promiser.outcomes, FailOnce.fail = [], False
    result = promiser_flow(route_to_failure=True).trigger()
    assert not result.success
    assert Promiser.outcomes == [
        (
            "0",
            "failed: StatelessFlowFailed: stateless flow '<flow>' failed, nothing of the "
            "trigger was kept: 1 FlowFile(s) reached failure port 'failed'",
        )
    ]


def test_a_result_its_caller_fails_runs_on_failure_and_the_flow_keeps_its_states():
    from flow.processors import PROCESSOR_TYPES

    Promiser.outcomes = []
    registry = {**PROCESSOR_TYPES, "TestPromiser": Promiser}
    stateless = StatelessFlow(
        parse_flow(
            {
                "processors": [
                    {"id": "gen", "type": "GenerateFlowFile", "properties": {"sequence_attribute": "seq"}},
                    {"id": "promise", "type": "TestPromiser"},
                ],
                "ports": [{"id": "out", "type": "output"}],
                "connections": [{"source": "gen", "destination": "out"}, {"source": "promise", "destination": "out"}],
            },
            registry=registry,
        )
    )
    first = stateless.trigger()
    assert sorted(a.get("seq", "-") for _, a, _ in first.outputs) == ["-", "0"]
    try:
        stateless.trigger()
        raise AssertionError("triggered again before the last result was settled")
    except Exception as error:  # noqa: BLE001
        assert "neither acknowledged nor failed" in str(error)
    first.fail(OSError("the caller's commit failed"))
    first.acknowledge()  # settled already: nothing happens
    assert Promiser.outcomes == [("0", "failed: OSError: the caller's commit failed")]
    assert stateless.states == {}
    second = stateless.trigger()
    assert sorted(a.get("seq", "-") for _, a, _ in second.outputs) == ["-", "0"], (
        "the failed trigger's state was not kept"
    )
    second.acknowledge()
    assert stateless.states == {"gen": {"next": "1"}} and Promiser.outcomes[1] == ("1", "kept")
    assert [a.get("seq") for _, a, _ in stateless.trigger().outputs if "seq" in a] == ["1"]


def test_get_file_offers_a_file_again_after_a_failed_trigger(tmp_path):
    from flow.processors import PROCESSOR_TYPES

    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "a").write_bytes(b"data")
    FailOnce.fail = True
    stateless = StatelessFlow(
        parse_flow(
            {
                "processors": [
                    {"id": "get", "type": "GetFile", "properties": {"input_directory": str(inbox)}},
                    {"id": "check", "type": "TestFailOnce"},
                ],
                "ports": [{"id": "out", "type": "output"}],
                "connections": [{"source": "get", "destination": "check"}, {"source": "check", "destination": "out"}],
            },
            registry={**PROCESSOR_TYPES, "TestFailOnce": FailOnce},
        )
    )
    try:
        assert not stateless.trigger().success
        assert (inbox / "a").exists()
        result = stateless.trigger()
        assert [(a["filename"], d) for _, a, d in result.outputs] == [("a", b"data")], "offered again"
        result.acknowledge()
        assert not (inbox / "a").exists()
    finally:
        stateless.close()
