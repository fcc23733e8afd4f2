"""Flow definitions: valid flows load; every mistake names the processor and property."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from flow import definition_yaml
from flow.definition import MAX_DOCUMENT_BYTES
from flow.errors import FlowDefinitionError
from flow.loading import load_flow, parse_flow

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def write(tmp_path, text, name="flow.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


GOOD = """
    name: good
    parameters: {out: /tmp/out}
    processors:
      - id: gen
        type: GenerateFlowFile
        properties: {batch_size: 5, file_size: 1 KB}
        scheduling: {run_schedule: 500 ms, concurrent_tasks: 2, yield_duration: 2 sec, penalty_duration: 1 min}
      - id: put
        type: PutFile
        properties: {directory: "#{out}/x"}
        auto_terminate: [success, failure]
    connections:
      - source: gen
        destination: put
        prioritizers: [oldest_first]
        back_pressure: {object_count: 50, data_size: 1 MB}
        swap_threshold: 100
        swap_batch: 10
        expiration: 1 min
"""


def test_a_good_flow_loads_with_types_converted(tmp_path):
    flow = load_flow(write(tmp_path, GOOD))
    gen = flow.processors["gen"]
    assert gen.properties["file_size"] == 1024 and gen.properties["batch_size"] == 5
    assert gen.scheduling.run_schedule_s == 0.5 and gen.scheduling.concurrent_tasks == 2
    assert gen.scheduling.penalty_s == 60
    assert flow.processors["put"].properties["directory"].evaluate() == "/tmp/out/x"
    (connection,) = flow.connections
    assert connection.id == "gen/success/put"
    assert (connection.back_pressure_count, connection.back_pressure_size) == (50, 1 << 20)
    assert (connection.swap_threshold, connection.swap_batch, connection.expiration_ms) == (100, 10, 60_000)
    assert connection.prioritizers == ("oldest_first",)


def test_parameters_given_at_load_override_the_file(tmp_path):
    flow = load_flow(write(tmp_path, GOOD), {"out": "/elsewhere"})
    assert flow.processors["put"].properties["directory"].evaluate() == "/elsewhere/x"


def test_malformed_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "processors:\n  - id: a\n    type: [unclosed\n")
    with pytest.raises(FlowDefinitionError, match=r"flow.yaml: malformed YAML at line \d+"):
        load_flow(path)


def test_missing_file(tmp_path):
    with pytest.raises(FlowDefinitionError, match="cannot read the flow file"):
        load_flow(str(tmp_path / "nope.yaml"))


@pytest.mark.parametrize(
    "change, message",
    [
        (("GenerateFlowFile", "GenerateFlowFiles"), "processor 'gen': unknown processor type 'GenerateFlowFiles'"),
        (
            ("batch_size: 5", "batch_size: five"),
            "processor 'gen': property 'batch_size': wrong value for an integer property: "
            "expected an integer, got 'five'",
        ),
        (("file_size: 1 KB", "file_size: lots"), "processor 'gen': property 'file_size'"),
        (("{directory:", "{directry:"), "processor 'put': property 'directry': PutFile has no such property"),
        (("concurrent_tasks: 2", "concurrent_tasks: 0"), "processor 'gen': property 'scheduling.concurrent_tasks'"),
        (("run_schedule: 500 ms", "run_schedule: sometimes"), "processor 'gen': property 'scheduling.run_schedule'"),
        (("#{out}", "#{nowhere}"), "processor 'put': property 'directory': unknown parameter #{nowhere}"),
        (
            ("auto_terminate: [success, failure]", "auto_terminate: [success]"),
            "processor 'put': relationship 'failure' is neither connected nor auto-terminated",
        ),
        (
            ("auto_terminate: [success, failure]", "auto_terminate: [success, failure, maybe]"),
            "processor 'put': auto_terminate names unknown relationship 'maybe'",
        ),
        (
            ("destination: put", "destination: putt"),
            "connections\\[0\\]: destination 'putt' is neither a processor nor a port",
        ),
        (("oldest_first", "loudest_first"), "connections\\[0\\].prioritizers: unknown prioritizer 'loudest_first'"),
        (
            ("swap_batch: 10", "swap_batch: 1000"),
            "connections\\[0\\].swap_batch: swap_batch \\(1000\\) cannot exceed swap_threshold \\(100\\)",
        ),
        (
            ("object_count: 50", "object_count: many"),
            "connections\\[0\\].back_pressure.object_count: expected a non-negative integer, got the text 'many'",
        ),
    ],
)
def test_mistakes_are_named(tmp_path, change, message):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(FlowDefinitionError, match=message):
        load_flow(path)


def test_required_property_missing():
    with pytest.raises(FlowDefinitionError, match="processor 'p': property 'directory': required property"):
        parse_flow({"processors": [{"id": "p", "type": "PutFile", "auto_terminate": ["success", "failure"]}]})


def test_not_a_mapping():
    with pytest.raises(FlowDefinitionError, match="a flow is a mapping with 'processors' .*, got a list of 1"):
        parse_flow(["processors"])
    with pytest.raises(FlowDefinitionError, match="processors: expected a non-empty list of processors"):
        parse_flow({"processors": []})


def test_duplicate_processor_ids():
    processor = {"id": "a", "type": "LogAttribute", "auto_terminate": ["success"]}
    with pytest.raises(FlowDefinitionError, match="processor 'a': duplicate processor id"):
        parse_flow({"processors": [processor, processor]})


def test_dynamic_relationships_of_route_on_attribute():
    flow = parse_flow(
        {
            "processors": [
                {
                    "id": "r",
                    "type": "RouteOnAttribute",
                    "properties": {"big": "${size:gt(5)}"},
                    "auto_terminate": ["big", "unmatched"],
                }
            ]
        }
    )
    assert flow.processors["r"].relationships == ("big", "unmatched")


def test_bad_expression_in_a_dynamic_property():
    with pytest.raises(FlowDefinitionError, match="processor 'u': property 'x'.*unknown function"):
        parse_flow(
            {
                "processors": [
                    {
                        "id": "u",
                        "type": "UpdateAttribute",
                        "properties": {"x": "${a:nope()}"},
                        "auto_terminate": ["success"],
                    }
                ]
            }
        )


# Malformed documents: each is refused with a FlowDefinitionError naming the place, quickly.

GEN_TO_LOG = {
    "processors": [
        {"id": "gen", "type": "GenerateFlowFile"},
        {"id": "log", "type": "LogAttribute", "auto_terminate": ["success"]},
    ],
    "connections": [{"source": "gen", "destination": "log"}],
}


def with_connection(**changes):
    return {**GEN_TO_LOG, "connections": [{**GEN_TO_LOG["connections"][0], **changes}]}


def refused(load, match):
    """The FlowDefinitionError `load()` raises, asserting it came within 2 s of this
    thread's CPU time (the work done: a loaded machine's waits do not count) and matches."""
    started = time.thread_time()
    with pytest.raises(FlowDefinitionError, match=match) as caught:
        load()
    assert time.thread_time() - started < 2.0
    return caught.value


def test_the_two_processor_flow_the_cases_below_break_loads():
    assert [c.id for c in parse_flow(GEN_TO_LOG).connections] == ["gen/success/log"]


@pytest.mark.parametrize(
    "changes, match",
    [
        (
            {"source": ["gen"]},
            r"connections\[0\]\.source: expected text \(a processor's or port's id\), got a list of 1",
        ),
        ({"destination": {"log": 1}}, r"connections\[0\]\.destination: expected text .*got a mapping of 1"),
        (
            {"prioritizers": 5},
            r"connections\[0\]\.prioritizers: expected a list of prioritizer names, got the integer 5",
        ),
        (
            {"prioritizers": [5]},
            r"connections\[0\]\.prioritizers\[0\]: expected text \(a prioritizer name\), got the "
            r"integer 5 \(quote it to make it text\)",
        ),
        ({"relationships": [["success"]]}, r"connections\[0\]\.relationships\[0\]: expected text"),
        ({"relationships": 7}, r"connections\[0\]\.relationships: expected a list of relationships, got the integer 7"),
        ({"id": ["a"]}, r"connections\[0\]\.id: expected text"),
        ({"back_pressure": [1]}, r"connections\[0\]\.back_pressure: expected a mapping"),
        (
            {"back_pressure": {"data_size": ["1 KB"]}},
            r"connections\[0\]\.back_pressure\.data_size: expected a data size",
        ),
        ({"expiration": {"s": 1}}, r"connections\[0\]\.expiration: expected a duration"),
        ({"expiration": 1e308}, r"connections\[0\]\.expiration: the duration '1e\+308' is too long"),
        ({"swap_threshold": 2.5}, r"connections\[0\]\.swap_threshold: expected a positive integer, got the number 2.5"),
    ],
)
def test_a_connection_value_of_the_wrong_type_is_named(changes, match):
    refused(lambda: parse_flow(with_connection(**changes)), match)


@pytest.mark.parametrize(
    "processor, match",
    [
        ({"id": ["gen"], "type": "GenerateFlowFile"}, r"processors\[0\]\.id: expected text \(the processor's id\)"),
        (
            {"id": 1, "type": "GenerateFlowFile"},
            r"processors\[0\]\.id: .*got the integer 1 \(quote it to make it text\)",
        ),
        ("gen", r"processors\[0\]: expected a mapping \(a processor with an id and a type\), got the text 'gen'"),
        ({"id": "gen", "type": ["GenerateFlowFile"]}, r"processor 'gen': property 'type': expected text"),
        (
            {"id": "gen", "type": "GenerateFlowFile", "properties": ["batch_size"]},
            r"processor 'gen': property 'properties': expected a mapping",
        ),
        (
            {"id": "gen", "type": "GenerateFlowFile", "properties": {"batch_size": [5]}},
            r"processor 'gen': property 'batch_size': expected a single value "
            r"\(text, a number or true/false\), got a list",
        ),
        (
            {"id": "gen", "type": "GenerateFlowFile", "scheduling": {"run_schedule": ["1 sec"]}},
            r"processor 'gen': property 'scheduling.run_schedule': expected a duration",
        ),
        (
            {"id": "gen", "type": "GenerateFlowFile", "scheduling": "fast"},
            r"processor 'gen': property 'scheduling': expected a mapping",
        ),
        (
            {"id": "gen", "type": "GenerateFlowFile", "auto_terminate": [["success"]]},
            r"processor 'gen': property 'auto_terminate\[0\]': expected text \(a relationship\)",
        ),
        (
            {"id": "gen", "type": "GenerateFlowFile", "auto_terminate": "success"},
            r"processor 'gen': property 'auto_terminate': expected a list of relationships",
        ),
        ({"id": "gen", "type": "GenerateFlowFile", "name": ["g"]}, r"processor 'gen': property 'name': expected text"),
        (
            {"id": "u", "type": "UpdateAttribute", "properties": {"x": None}},
            r"processor 'u': property 'x': expected a value \(text or an expression\), got nothing \(null\)",
        ),
    ],
)
def test_a_processor_value_of_the_wrong_type_is_named(processor, match):
    refused(lambda: parse_flow({"processors": [processor]}), match)


@pytest.mark.parametrize(
    "flow, match",
    [
        ({"processors": "gen"}, r"processors: expected a list of processors, got the text 'gen'"),
        ({"processors": GEN_TO_LOG["processors"], "connections": {"a": 1}}, r"connections: expected a list"),
        ({**GEN_TO_LOG, "ports": [{"id": ["in"], "type": "input"}]}, r"ports\[0\]\.id: expected text"),
        (
            {**GEN_TO_LOG, "ports": [{"id": "in", "type": "sideways"}]},
            r"ports\[0\]\.type: expected one of input, output, failure, got the text 'sideways'",
        ),
        ({**GEN_TO_LOG, "ports": [{"id": "gen", "type": "input"}]}, r"ports\[0\]\.id: id 'gen' is already used"),
        ({**GEN_TO_LOG, "parameters": {"p": [1]}}, r"parameters\.p: expected text or a number"),
        ({**GEN_TO_LOG, "name": {"n": 1}}, r"name: expected text \(the flow's name\), got a mapping of 1"),
        ({**GEN_TO_LOG, "processes": []}, r"unknown key\(s\) \['processes'\]"),
        ({**GEN_TO_LOG, 1: "one"}, r"key 1 is the integer 1, not text: quote it"),
        ({**GEN_TO_LOG, "description": {("a", "b"): 1}}, r"description: key \('a', 'b'\) is a tuple, not text"),
        ({**GEN_TO_LOG, "description": [float("nan")]}, r"description\[0\]: expected a finite number, got nan"),
        ({**GEN_TO_LOG, "description": -float("inf")}, r"description: expected a finite number, got -inf"),
        ({**GEN_TO_LOG, "description": 10**30}, r"description: expected a number within 64 bits"),
        ({**GEN_TO_LOG, "description": {1, 2}}, r"description: expected text, a number, .*, got a set"),
        (
            with_connection(id="x") | {"connections": [{"source": "gen", "destination": "log", "id": "x"}] * 2},
            r"connections\[1\]: duplicate connection id 'x'",
        ),
    ],
)
def test_a_malformed_document_is_named(flow, match):
    refused(lambda: parse_flow(flow), match)


def test_a_structure_that_contains_itself_is_refused_not_walked_forever():
    flow = dict(GEN_TO_LOG)
    loop = []
    loop.append(loop)
    flow["description"] = loop
    refused(lambda: parse_flow(flow), r"description(\[0\])+: nested more than 32 levels deep")


@pytest.mark.parametrize("text", ["[" * 50_000, "- " * 50_000 + "x", "{a: " * 50_000])
def test_deep_yaml_nesting_is_refused_at_its_line(tmp_path, text):
    refused(lambda: load_flow(write(tmp_path, text)), r"malformed YAML at line 1, column \d+: nested more than 32")


@pytest.mark.parametrize("depth", [40, 500, 50_000])
def test_deep_json_nesting_is_refused(tmp_path, depth):
    path = write(tmp_path, '{"description": ' + "[" * depth + "]" * depth + "}", "flow.json")
    refused(lambda: load_flow(path), "nested more than 32 levels deep")


BILLION_LAUGHS = """
    description:
      - &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
      - &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
      - &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
      - &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
      - &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
      - &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
      - &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
      - &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
      - &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
    processors:
      - id: tag
        type: UpdateAttribute
        properties: {laughs: *i}
        auto_terminate: [success]
"""


def test_an_alias_bomb_is_refused_at_the_alias_that_crosses_the_limit(tmp_path):
    refused(
        lambda: load_flow(write(tmp_path, BILLION_LAUGHS)),
        r"malformed YAML at line 8, column \d+: the flow with its aliases written out holds more than 200000 "
        r"values",
    )


def test_an_alias_bomb_of_long_text_is_refused(tmp_path):
    text = "description:\n  - &a " + "x" * 50_000 + "\n  - [" + ", ".join(["*a"] * 50) + "]\n"
    refused(lambda: load_flow(write(tmp_path, text)), "holds more than 2097152 characters of text")


def test_aliases_within_the_limits_load(tmp_path):
    flow = load_flow(
        write(
            tmp_path,
            """
        processors:
          - {id: a, type: GenerateFlowFile, scheduling: &every_second {run_schedule: 1 sec}, auto_terminate: [success]}
          - {id: b, type: GenerateFlowFile, scheduling: *every_second, auto_terminate: [success]}
    """,
        )
    )
    assert flow.processors["a"].scheduling == flow.processors["b"].scheduling
    assert flow.processors["b"].scheduling.run_schedule_s == 1.0


def test_a_recursive_alias_is_refused(tmp_path):
    refused(
        lambda: load_flow(write(tmp_path, "description: &a [1, *a]\n")),
        r"line 1, column 21: alias \*a is inside the node it names",
    )


@pytest.mark.parametrize(
    "text, match",
    [
        ("processors: []\nprocessors: [x]\n", r"line 2, column 1: key 'processors' is given twice"),
        ("processors:\n  - {id: a, id: b}\n", r"line 2, column 13: key 'id' is given twice"),
        ("1: x\n", r"flow.yaml: key 1 is the integer 1, not text: quote it"),
        (
            "processors:\n  - id: g\n    type: GenerateFlowFile\n    properties: {on: 1}\n",
            r"processors\[0\]\.properties: key True is the boolean true, not text: quote it",
        ),
        (
            "processors:\n  - id: g\n    type: GenerateFlowFile\n    properties: {batch_size: .nan}\n",
            r"processors\[0\]\.properties\.batch_size: expected a finite number, got nan",
        ),
        (
            "processors:\n  - id: g\n    type: GenerateFlowFile\n    scheduling: {run_schedule: .inf}\n",
            r"processors\[0\]\.scheduling\.run_schedule: expected a finite number, got inf",
        ),
        ("description: " + "9" * 5000 + "\n", r"line 1, column 14: an integer of 5000 digits"),
        ("description: 2001-02-30\n", r"line 1, column 14: cannot read this value: day is out of range"),
        ("description: !!binary aGVsbG8=\n", r"description: expected text, a number, .*, got a bytes"),
        ("- processors\n", r"a flow is a mapping with 'processors' and 'connections', got a list of 1"),
        ("", r"a flow is a mapping .*, got nothing \(null\)"),
        ("description: b\x1f\n", r"malformed YAML at character 15: unacceptable character #x001f"),
        (
            "a: 1\n---\nb: 2\n",
            r"malformed YAML at line 2, column 1: expected a single document in the stream, but found another document",
        ),
    ],
)
def test_malformed_yaml_is_named(tmp_path, text, match):
    refused(lambda: load_flow(write(tmp_path, text)), match)


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"processors": [{"id": "a", "id": "b"}]}', r"duplicate key 'id' in an object"),
        ('{"description": NaN}', r"description: expected a finite number, got nan"),
        ('{"description": [1e999]}', r"description\[0\]: expected a finite number, got inf"),
        ('{"description": ' + "9" * 5000 + "}", r"an integer of 5000 digits"),
        ('["processors"]', r"a flow is a mapping .*, got a list of 1"),
        ('{"description": {"text": "caf\\ud800"}}', r"description\.text: text 'caf\\ud800' holds a lone surrogate"),
        (
            '{"processors": [{"id": "gen", "type": "GenerateFlowFile", "properties": {"batch_size": [5]}}]}',
            r"processor 'gen': property 'batch_size': expected a single value",
        ),
    ],
)
def test_malformed_json_is_named(tmp_path, text, match):
    refused(lambda: load_flow(write(tmp_path, text, "flow.json")), match)


def test_a_flow_file_beyond_the_size_limit_is_refused_without_parsing_it(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("description: " + "x" * MAX_DOCUMENT_BYTES + "\n")
    refused(lambda: load_flow(str(path)), f"larger than {MAX_DOCUMENT_BYTES} bytes")


def test_a_flow_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "flow.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    refused(lambda: load_flow(str(path)), r"flow.yaml: the flow is not UTF-8 text \(byte 10")


def test_an_expression_nested_too_deeply_is_named():
    expression = "${a:equals(" * 2000 + "1" + ")}" * 2000
    refused(
        lambda: parse_flow(
            {
                "processors": [
                    {
                        "id": "r",
                        "type": "RouteOnAttribute",
                        "properties": {"x": expression},
                        "auto_terminate": ["x", "unmatched"],
                    }
                ]
            }
        ),
        r"processor 'r': property 'x': expressions nest at most 32 deep",
    )


def test_parameters_cannot_blow_a_property_up():
    flow = {
        "parameters": {"big": "x" * 60_000},
        "processors": [
            {
                "id": "log",
                "type": "LogAttribute",
                "properties": {"log_prefix": "#{big}#{big}"},
                "auto_terminate": ["success"],
            }
        ],
    }
    refused(
        lambda: parse_flow(flow),
        r"processor 'log': property 'log_prefix': with its parameters substituted the "
        r"value is longer than the 65536 characters",
    )


@pytest.mark.parametrize(
    "value, match",
    [
        ("9" * 400 + " sec", r"property 'scheduling.run_schedule': expected a duration .*\(404 characters\)"),
        (10**18, r"property 'scheduling.run_schedule': the duration '1000000000000000000' is too long"),
    ],
)
def test_a_duration_too_long_to_hold_is_named(value, match):
    refused(
        lambda: parse_flow(
            {
                "processors": [
                    {
                        "id": "gen",
                        "type": "GenerateFlowFile",
                        "auto_terminate": ["success"],
                        "scheduling": {"run_schedule": value},
                    }
                ]
            }
        ),
        match,
    )


def test_a_size_too_large_to_hold_is_named():
    refused(
        lambda: parse_flow(
            {
                "processors": [
                    {
                        "id": "gen",
                        "type": "GenerateFlowFile",
                        "auto_terminate": ["success"],
                        "properties": {"file_size": "9" * 500 + " GB"},
                    }
                ]
            }
        ),
        r"processor 'gen': property 'file_size': wrong value for a size property: .* is too large",
    )


@pytest.mark.parametrize(
    "text, match",
    [
        (BILLION_LAUGHS, r"line 8, column \d+: the flow with its aliases written out holds more than 200000 values"),
        ("[" * 50_000, r"line 1, column \d+: nested more than 32 levels deep"),
        ("description: &a [1, *a]\n", r"alias \*a is inside the node it names"),
        ("processors: []\nprocessors: [x]\n", r"line 2, column 1: key 'processors' is given twice"),
        ("description: !!int ''\n", r"line 1, column 14: '' is not a valid int"),
        ('description: "\\ud800"\n', r"description: text '\\ud800' holds a lone surrogate"),
        ("description: b\x1f\n", r"malformed YAML at character 15: unacceptable character #x001f"),
    ],
)
def test_the_pure_python_yaml_parser_has_the_same_limits(tmp_path, monkeypatch, text, match):
    monkeypatch.setattr(definition_yaml, "_FlowYamlLoader", definition_yaml._PythonFlowYamlLoader)
    refused(lambda: load_flow(write(tmp_path, text)), match)


def test_the_pure_python_yaml_parser_loads_the_example(monkeypatch):
    monkeypatch.setattr(definition_yaml, "_FlowYamlLoader", definition_yaml._PythonFlowYamlLoader)
    flow = load_flow(str(EXAMPLES / "hello.yaml"), {"data_dir": "/nonexistent/custody"})
    assert set(flow.processors) == {"generate", "tag", "route", "log", "write"}
