"""NiFi 2 Python processors, written in NiFi's documented style (tests/data/python_processors),
loaded unmodified and run in Custody's sessions: a transform, a record transform that
partitions, a source that keeps its count in its state, one that raises; what cannot be
loaded is refused naming its file; a dependency is installed by pip from a local
directory, and one that cannot be installed refuses the load with the pip command."""

from __future__ import annotations

import json
import os
import sys

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.python_extensions import (
    DependenciesUnavailable,
    PipIndex,
    PythonExtensionError,
    PythonExtensions,
    extension_registry,
)
from flow.stateless import StatelessFlow
from tests.python_processors import MISSING_DEPENDENCY, PROCESSORS, WITH_DEPENDENCY, write_shout_wheel
from tests.unit.flow.test_processors import trigger_once


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    return extension_registry(PythonExtensions((PROCESSORS,), cache_directory=str(tmp_path_factory.mktemp("cache"))))


def one_processor(processor_type, properties, relationships, *, services=(), auto_terminate=()):
    definition = {
        "services": [{"id": sid, "type": kind, "properties": props} for sid, kind, props in services],
        "processors": [
            {"id": "p", "type": processor_type, "properties": properties, "auto_terminate": list(auto_terminate)}
        ],
        "ports": [{"id": "in", "type": "input"}],
        "connections": [{"source": "in", "destination": "p"}],
    }
    for name in relationships:
        definition["ports"].append({"id": f"out-{name}", "type": "output"})
        definition["connections"].append({"source": "p", "relationships": [name], "destination": f"out-{name}"})
    return definition


def run(registry, definition, inputs):
    return trigger_once(parse_flow(definition, registry=registry), inputs)


def test_a_transform_changes_content_and_attributes_with_its_properties_and_expressions(registry):
    out = run(
        registry,
        one_processor(
            "TagAndUpper", {"Repeat": 2, "Greeting": "hi ${filename:toUpper()}"}, ["success", "failure", "original"]
        ),
        [({"filename": "a.txt"}, b"abc"), ({"filename": "b.txt"}, b"xy")],
    )
    assert [(a["greeting"], a["original.size"], data) for a, data in out["success"]] == [
        ("hi A.TXT", "3", b"ABCABC"),
        ("hi B.TXT", "2", b"XYXY"),
    ]
    assert [data for _, data in out["original"]] == [b"abc", b"xy"]
    assert "greeting" not in out["original"][0][0]


def test_a_transform_keeps_the_flowfile_id_and_sends_no_original_when_original_is_auto_terminated(registry):
    out = run(
        registry,
        one_processor("TagAndUpper", {"Upper Case": False}, ["success", "failure"], auto_terminate=["original"]),
        [({"filename": "c"}, b"low")],
    )
    assert [(a["greeting"], data) for a, data in out["success"]] == [("hello c", b"low")]


@pytest.mark.parametrize(
    "properties, problem",
    [
        (
            {"Repeat": 0},
            r"processor 'p': property 'Repeat': must be a positive integer, not 0.*POSITIVE_INTEGER_VALIDATOR",
        ),
        ({"Upper Case": "maybe"}, r"Upper Case.*expected one of true, false, got 'maybe'"),
        ({"Greeting": "${filename:nope()}"}, r"Greeting.*invalid expression.*nope"),
        ({"Greeting": ""}, r"Greeting.*must not be empty"),
        ({"Colour": "red"}, r"TagAndUpper has no such property"),
    ],
)
def test_nifi_validators_are_applied_when_the_flow_is_loaded(registry, properties, problem):
    with pytest.raises(FlowDefinitionError, match=problem):
        parse_flow(one_processor("TagAndUpper", properties, ["success", "failure", "original"]), registry=registry)


def test_a_record_transform_writes_one_flowfile_per_relationship_and_partition(registry):
    records = [
        {"key": "k1", "city": "Oslo", "amount": 5},
        {"key": "k2", "city": "Bern", "amount": 7},
        {"key": "k3", "city": "Oslo", "amount": -1},
        {"key": "k4", "city": "Oslo", "amount": 2},
    ]
    out = run(
        registry,
        one_processor(
            "PartitionByCity",
            {"Record Reader": "json", "Record Writer": "json-out"},
            ["success", "invalid", "failure", "original"],
            services=[("json", "JsonTreeReader", {}), ("json-out", "JsonRecordSetWriter", {})],
        ),
        [({"filename": "orders.json"}, json.dumps(records).encode())],
    )
    partitions = {a["city"]: (a["record.count"], [r["key"] for r in json.loads(data)]) for a, data in out["success"]}
    assert partitions == {"Oslo": ("2", ["k1", "k4"]), "Bern": ("1", ["k2"])}
    assert all(r["source"] == "orders.json" for _, data in out["success"] for r in json.loads(data))
    assert [[r["key"] for r in json.loads(data)] for _, data in out["invalid"]] == [["k3"]]
    assert out["success"][0][0]["mime.type"] == "application/json"
    assert len(out["original"]) == 1


def test_a_record_transform_needs_the_frameworks_reader_and_writer(registry):
    with pytest.raises(FlowDefinitionError, match="Record Reader.*required property is missing"):
        parse_flow(
            one_processor("PartitionByCity", {}, ["success", "invalid", "failure", "original"]), registry=registry
        )


def test_a_processor_that_raises_sends_its_flowfile_to_failure_with_the_error(registry, caplog):
    out = run(
        registry,
        one_processor("RaiseOnBadInput", {}, ["success", "failure"], auto_terminate=["original"]),
        [({}, b"12"), ({}, b"twelve")],
    )
    assert [(a["number"], data) for a, data in out["success"]] == [("12", b"12")]
    [(attributes, data)] = out["failure"]
    assert data == b"twelve"
    assert attributes["python.error"] == "ValueError: invalid literal for int() with base 10: 'twelve'"
    assert "goes to failure: ValueError" in caplog.text


def test_a_source_creates_flowfiles_counting_in_its_state(registry):
    definition = {
        "processors": [{"id": "p", "type": "CountingSource", "properties": {"Prefix": "n", "Limit": 3}}],
        "ports": [{"id": "out", "type": "output"}],
        "connections": [{"source": "p", "destination": "out"}],
    }
    flow = StatelessFlow(parse_flow(definition, registry=registry))
    made = []
    try:
        for _ in range(5):
            result = flow.trigger([])
            assert result.success, result.failure
            result.acknowledge()
            made += [(attributes["number"], data) for _, attributes, data in result.outputs]
        assert flow.states["p"] == {"count": "3"}
    finally:
        flow.close()
    assert made == [("1", b"n-1"), ("2", b"n-2"), ("3", b"n-3")]


def write(directory, name, text):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path, "w") as handle:
        handle.write(text)
    return path


HEADER = "from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult\n"
DETAILS = (
    "    class ProcessorDetails:\n        version = '1'\n    def transform(self, context, flowfile):\n        pass\n"
)


@pytest.mark.parametrize(
    "text, problem",
    [
        (
            HEADER + "import custody_no_such_module\nclass A(FlowFileTransform):\n" + DETAILS,
            "cannot be imported: ModuleNotFoundError",
        ),
        (
            HEADER + "class B(FlowFileTransform):\n    def transform(self, c, f):\n        pass\n",
            "class B .* has no inner class ProcessorDetails",
        ),
        (
            HEADER + "class UpdateAttribute(FlowFileTransform):\n" + DETAILS,
            "processor UpdateAttribute has the name of flow.processors",
        ),
        (
            HEADER
            + "class C(FlowFileTransform):\n"
            + DETAILS
            + "    def __init__(self):\n        raise OSError('no')\n",
            "C cannot be made: OSError: no",
        ),
    ],
)
def test_what_cannot_be_loaded_is_one_error_naming_the_file(tmp_path, text, problem):
    path = write(tmp_path / "extensions", "broken.py", text)
    with pytest.raises(PythonExtensionError, match=problem) as caught:
        extension_registry(PythonExtensions((str(tmp_path / "extensions"),), cache_directory=str(tmp_path)))
    assert str(caught.value).startswith(f"python extension {path}: ")


def test_a_dependency_is_installed_with_pip_from_the_configured_index_into_an_environment_of_its_own(tmp_path):
    wheels = tmp_path / "wheels"
    write_shout_wheel(wheels)
    extensions = PythonExtensions(
        (WITH_DEPENDENCY,),
        cache_directory=str(tmp_path / "data"),
        index=PipIndex(find_links=(str(wheels),), no_index=True),
    )
    try:
        registry = extension_registry(extensions)
        [environment] = os.listdir(tmp_path / "data" / "python-extensions")
        assert environment.startswith("ShoutGreeting-2.1-")
        assert os.path.isfile(
            tmp_path / "data" / "python-extensions" / environment / "custody_tiny_shout" / "__init__.py"
        )
        out = run(
            registry,
            one_processor("ShoutGreeting", {}, ["success", "failure"], auto_terminate=["original"]),
            [({}, b"hey")],
        )
        assert [data for _, data in out["success"]] == [b"HEY!"]
        # Loaded again: the environment is there already, nothing is installed.
        os.rename(wheels, tmp_path / "gone")
        extension_registry(extensions)
    finally:
        sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]
        sys.modules.pop("custody_tiny_shout", None)


def test_a_dependency_pip_cannot_install_refuses_the_load_with_the_pip_command(tmp_path):
    wheels = tmp_path / "wheels"
    write_shout_wheel(wheels)
    extensions = PythonExtensions(
        (MISSING_DEPENDENCY,), cache_directory=str(tmp_path), index=PipIndex(find_links=(str(wheels),), no_index=True)
    )
    with pytest.raises(DependenciesUnavailable) as caught:
        extension_registry(extensions)
    target = tmp_path / "python-extensions"
    command = caught.value.command
    assert command.startswith(f"{sys.executable} -m pip install ")
    assert f"--find-links {wheels} --no-index custody-package-that-is-nowhere==9.9" in command
    assert f"--target {target}/NeedsAbsentPackage-1.0-" in command
    assert str(caught.value).startswith(f"python extension {MISSING_DEPENDENCY}/needs_absent.py: cannot install")
    assert command in str(caught.value)
    assert os.listdir(target) == []  # nothing half-installed is left to be taken for an environment


def test_a_record_transform_that_raises_sends_the_flowfile_to_failure_and_nothing_else(registry):
    records = [{"key": "k1", "city": "Oslo", "amount": 5}]
    out = run(
        registry,
        one_processor(
            "PartitionByCity",
            {"Record Reader": "json", "Record Writer": "json-out", "Partition Field": "country"},
            ["success", "invalid", "failure", "original"],
            services=[("json", "JsonTreeReader", {}), ("json-out", "JsonRecordSetWriter", {})],
        ),
        [({"filename": "orders.json"}, json.dumps(records).encode())],
    )
    assert set(out) == {"failure"}
    [(attributes, data)] = out["failure"]
    assert attributes["python.error"] == "KeyError: 'country'" and json.loads(data) == records


CONFIGURABLE = """
from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult
from nifiapi.properties import PropertyDependency, PropertyDescriptor, StandardValidators, TimeUnit, ValidationResult


class Configurable(FlowFileTransform):
    class Java:
        implements = ["org.apache.nifi.python.processor.FlowFileTransform"]

    class ProcessorDetails:
        version = "1"

    def __init__(self, **kwargs):
        mode = PropertyDescriptor(
            name="Mode", description="", allowable_values=["plain", "timed"], default_value="plain"
        )
        wait = PropertyDescriptor(
            name="Wait",
            description="",
            required=True,
            validators=[StandardValidators.TIME_PERIOD_VALIDATOR],
            dependencies=[PropertyDependency(mode, "timed")],
        )
        self.descriptors = [mode, wait]

    def getPropertyDescriptors(self):
        return self.descriptors

    def getDynamicPropertyDescriptor(self, propertyname):
        return PropertyDescriptor(name=propertyname, description="an attribute to set", dynamic=True)

    def customValidate(self, context):
        if context.getProperty("forbidden") is not None:
            return [ValidationResult(subject="forbidden", explanation="this name is not allowed", valid=False)]
        return []

    def transform(self, context, flowfile):
        attributes = {name: value.getValue() for name, value in context.property_values.items() if name.islower()}
        wait = context.getProperty("Wait")
        attributes["wait_ms"] = str(wait.asTimePeriod(TimeUnit.MILLISECONDS) if wait is not None else None)
        return FlowFileTransformResult(relationship="success", attributes=attributes)
"""


@pytest.fixture(scope="module")
def configurable(tmp_path_factory):
    directory = tmp_path_factory.mktemp("configurable")
    write(directory, "configurable.py", CONFIGURABLE)
    return extension_registry(PythonExtensions((str(directory),), cache_directory=str(directory)))


def test_dependencies_dynamic_properties_and_custom_validation_are_nifis(configurable):
    relationships = ["success", "failure", "original"]
    plain = run(configurable, one_processor("Configurable", {"colour": "red"}, relationships), [({}, b"")])
    assert {k: v for k, v in plain["success"][0][0].items() if k in ("colour", "wait_ms")} == {
        "colour": "red",
        "wait_ms": "None",  # Wait depends on Mode being timed: not in force, not required
    }
    timed = run(
        configurable, one_processor("Configurable", {"Mode": "timed", "Wait": "2 sec"}, relationships), [({}, b"")]
    )
    assert timed["success"][0][0]["wait_ms"] == "2000"
    with pytest.raises(FlowDefinitionError, match="property 'Wait': required property is missing"):
        parse_flow(one_processor("Configurable", {"Mode": "timed"}, relationships), registry=configurable)
    with pytest.raises(FlowDefinitionError, match="property 'Wait': expected a duration"):
        parse_flow(
            one_processor("Configurable", {"Mode": "timed", "Wait": "soon"}, relationships), registry=configurable
        )
    with pytest.raises(FlowDefinitionError, match="property 'forbidden': this name is not allowed"):
        parse_flow(one_processor("Configurable", {"forbidden": "x"}, relationships), registry=configurable)
