"""Flow definitions: valid flows load; every mistake names the processor and property."""

from __future__ import annotations

import textwrap

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import load_flow, parse_flow


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


@pytest.mark.parametrize("change, message", [
    (("GenerateFlowFile", "GenerateFlowFiles"), "processor 'gen': unknown processor type 'GenerateFlowFiles'"),
    (("batch_size: 5", "batch_size: five"),
     "processor 'gen': property 'batch_size': wrong value for a integer property: expected an integer, got 'five'"),
    (("file_size: 1 KB", "file_size: lots"), "processor 'gen': property 'file_size'"),
    (("{directory:", "{directry:"), "processor 'put': property 'directry': PutFile has no such property"),
    (("concurrent_tasks: 2", "concurrent_tasks: 0"), "processor 'gen': property 'scheduling.concurrent_tasks'"),
    (("run_schedule: 500 ms", "run_schedule: sometimes"), "processor 'gen': property 'scheduling.run_schedule'"),
    (("#{out}", "#{nowhere}"), "processor 'put': property 'directory': unknown parameter #{nowhere}"),
    (("auto_terminate: [success, failure]", "auto_terminate: [success]"),
     "processor 'put': relationship 'failure' is neither connected nor auto-terminated"),
    (("auto_terminate: [success, failure]", "auto_terminate: [success, failure, maybe]"),
     "processor 'put': auto_terminate names unknown relationship 'maybe'"),
    (("destination: put", "destination: putt"), "destination 'putt' is neither a processor nor a port"),
    (("oldest_first", "loudest_first"), "unknown prioritizer 'loudest_first'"),
    (("swap_batch: 10", "swap_batch: 1000"), "swap_batch \\(1000\\) cannot exceed swap_threshold \\(100\\)"),
    (("object_count: 50", "object_count: many"), "object_count must be a non-negative integer"),
])
def test_mistakes_are_named(tmp_path, change, message):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(FlowDefinitionError, match=message):
        load_flow(path)


def test_required_property_missing():
    with pytest.raises(FlowDefinitionError, match="processor 'p': property 'directory': required property"):
        parse_flow({"processors": [{"id": "p", "type": "PutFile", "auto_terminate": ["success", "failure"]}]})


def test_not_a_mapping():
    with pytest.raises(FlowDefinitionError, match="must be a mapping"):
        parse_flow(["processors"])
    with pytest.raises(FlowDefinitionError, match="'processors' must be a non-empty list"):
        parse_flow({"processors": []})


def test_duplicate_processor_ids():
    processor = {"id": "a", "type": "LogAttribute", "auto_terminate": ["success"]}
    with pytest.raises(FlowDefinitionError, match="processor 'a': duplicate processor id"):
        parse_flow({"processors": [processor, processor]})


def test_dynamic_relationships_of_route_on_attribute():
    flow = parse_flow({"processors": [
        {"id": "r", "type": "RouteOnAttribute", "properties": {"big": "${size:gt(5)}"},
         "auto_terminate": ["big", "unmatched"]}]})
    assert flow.processors["r"].relationships == ("big", "unmatched")


def test_bad_expression_in_a_dynamic_property():
    with pytest.raises(FlowDefinitionError, match="processor 'u': property 'x'.*unknown function"):
        parse_flow({"processors": [{"id": "u", "type": "UpdateAttribute", "properties": {"x": "${a:nope()}"},
                                    "auto_terminate": ["success"]}]})
