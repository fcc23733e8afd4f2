"""The processor registry: flows are parsed against the one they are given; third-party
processors come in through `custody.processors` entry points, and a bad one is named."""

from __future__ import annotations

import sys
import textwrap

import pytest

from flow.definition import parse_flow
from flow.errors import FlowDefinitionError, ProcessorRegistryError
from flow.loading import standard_registry
from flow.processor import Processor
from flow.processors import PROCESSOR_TYPES, STANDARD_PROCESSORS
from flow.registry import ENTRY_POINT_GROUP, ProcessorRegistry
from flow.stateless import StatelessFlow

PLUGIN = """
from flow.processor import Processor, PropertyDescriptor


class CountWords(Processor):
    type_name = "CountWords"
    properties = (PropertyDescriptor("attribute", "string", default="words"),)

    def on_trigger(self, context, session):
        flowfile = session.get()
        count = len(session.read_bytes(flowfile).split())
        session.transfer(session.put_attribute(flowfile, context["attribute"], str(count)), "success")


class Impostor(Processor):
    type_name = "GenerateFlowFile"


NOT_A_PROCESSOR = object()
"""


def install(site, distribution: str, entry_points: dict[str, str]) -> None:
    """A distribution as pip leaves it: a dist-info with METADATA and entry_points.txt."""
    info = site / f"{distribution}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")


@pytest.fixture
def site(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    module = f"acme_words_{tmp_path.name.replace('-', '_')}"  # a module name of this test's own
    (site / f"{module}.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    yield site, module
    sys.modules.pop(module, None)


WORD_FLOW = {
    "processors": [{"id": "count", "type": "CountWords", "properties": {"attribute": "n"}}],
    "ports": [{"id": "in", "type": "input"}, {"id": "out", "type": "output"}],
    "connections": [{"source": "in", "destination": "count"}, {"source": "count", "destination": "out"}],
}


def test_an_installed_entry_point_registers_a_processor_that_a_flow_uses(site):
    site, module = site
    install(site, "acme-words", {"CountWords": f"{module}:CountWords"})
    registry = standard_registry()
    assert "acme-words 1.0" in registry.origin("CountWords")
    flow = StatelessFlow(parse_flow(WORD_FLOW, registry=registry))
    result = flow.trigger([({}, b"three small words")])
    assert result.success, result.failure
    assert [attributes["n"] for _, attributes, _ in result.outputs] == ["3"]


def test_a_flow_cannot_use_a_type_its_registry_lacks():
    with pytest.raises(FlowDefinitionError, match="unknown processor type 'CountWords'; known types: "):
        parse_flow(WORD_FLOW, registry=ProcessorRegistry(STANDARD_PROCESSORS))


@pytest.mark.parametrize(
    "name, value, problem",
    [
        (
            "Missing",
            "acme_nowhere:Missing",
            r"'Missing' = 'acme_nowhere:Missing'.*cannot be loaded: ModuleNotFoundError",
        ),
        (
            "Thing",
            "{module}:NOT_A_PROCESSOR",
            r"'Thing' = '.*:NOT_A_PROCESSOR'.*is not a subclass of flow.processor.Processor",
        ),
        ("Words", "{module}:CountWords", r"'Words' = .*name must be the processor's type name.*'CountWords'"),
        (
            "GenerateFlowFile",
            "{module}:Impostor",
            r"'GenerateFlowFile' = .*already registered by flow.processors.generate.GenerateFlowFile",
        ),
    ],
)
def test_a_broken_or_duplicate_entry_point_is_one_clear_error_naming_it(site, name, value, problem):
    site, module = site
    install(site, "acme-words", {"CountWords": f"{module}:CountWords", name: value.format(module=module)})
    with pytest.raises(ProcessorRegistryError, match=problem) as raised:
        standard_registry()
    message = str(raised.value)
    assert message.startswith("1 processor entry point(s) of group 'custody.processors' are unusable")
    assert "(group custody.processors from acme-words 1.0)" in message


class FakeEntryPoint:
    """What `importlib.metadata.entry_points(group=...)` yields, loading a given object."""

    group, dist = ENTRY_POINT_GROUP, None

    def __init__(self, name, value, loaded):
        self.name, self.value, self._loaded = name, value, loaded

    def load(self):
        return self._loaded


def test_two_distributions_declaring_one_type_name_are_both_named():
    first = type("Twice", (Processor,), {"type_name": "Twice"})
    second = type("Twice", (Processor,), {"type_name": "Twice"})
    registry = ProcessorRegistry()
    with pytest.raises(ProcessorRegistryError, match="'Twice' = 'acme_b:Twice'.*also declared by acme_a:Twice"):
        registry.load_entry_points(
            entry_points=lambda group: [
                FakeEntryPoint("Twice", "acme_a:Twice", first),
                FakeEntryPoint("Twice", "acme_b:Twice", second),
            ]
        )
    assert "Twice" not in registry  # all or none


def test_a_fake_entry_point_lookup_feeds_the_standard_registry():
    class Echo(Processor):
        type_name = "Echo"

        def on_trigger(self, context, session):
            session.transfer(session.get(), "success")

    looked_up = []

    def entry_points(group):
        looked_up.append(group)
        return [FakeEntryPoint("Echo", "tests:Echo", Echo)]

    registry = standard_registry(entry_points=entry_points)
    assert looked_up == [ENTRY_POINT_GROUP]
    assert registry["Echo"] is Echo and set(PROCESSOR_TYPES) < set(registry)
    assert registry.origin("Echo") == "entry point 'Echo' = 'tests:Echo' (group custody.processors)"


def test_registering_is_checked():
    registry = ProcessorRegistry(STANDARD_PROCESSORS)
    registry.register(STANDARD_PROCESSORS[0])  # the same class again: nothing happens
    with pytest.raises(ProcessorRegistryError, match="has no type_name"):
        registry.register(type("Nameless", (Processor,), {}))
    with pytest.raises(ProcessorRegistryError, match="already registered by flow.processors.text.SplitText"):
        registry.register(type("Other", (Processor,), {"type_name": "SplitText"}))
    with pytest.raises(TypeError):
        PROCESSOR_TYPES["Mine"] = Processor  # the standard set is read-only


def test_an_embedded_stateless_flow_is_parsed_against_the_embedding_flows_registry(tmp_path):
    class Shout(Processor):
        type_name = "TestShout"

        def on_trigger(self, context, session):
            flowfile = session.get()
            session.transfer(session.write_bytes(flowfile, session.read_bytes(flowfile).upper()), "success")

    sub = tmp_path / "sub.yaml"
    sub.write_text(
        textwrap.dedent("""
        processors: [{id: shout, type: TestShout}]
        ports: [{id: in, type: input}, {id: out, type: output}]
        connections: [{source: in, destination: shout}, {source: shout, destination: out}]
    """)
    )
    registry = ProcessorRegistry([*STANDARD_PROCESSORS, Shout])
    outer = StatelessFlow(
        parse_flow(
            {
                "processors": [
                    {
                        "id": "embed",
                        "type": "ExecuteStateless",
                        "properties": {"flow": str(sub)},
                        "auto_terminate": ["original", "failure"],
                    }
                ],
                "ports": [{"id": "in", "type": "input"}, {"id": "out", "type": "output"}],
                "connections": [
                    {"source": "in", "destination": "embed"},
                    {"source": "embed", "relationships": ["output"], "destination": "out"},
                ],
            },
            registry=registry,
        )
    )
    try:
        result = outer.trigger([({}, b"quiet")])
    finally:
        outer.close()
    assert result.success, result.failure
    assert [data for _, _, data in result.outputs] == [b"QUIET"]
