"""Values no one means are refused when a flow is loaded, naming the place: scheduling
beyond what an engine should queue or wait, an expiration that rounds to never, and
processor properties outside their bounds (an integer property is never negative
unless its descriptor says so)."""

from __future__ import annotations

import pytest

from flow.definition_model import MAX_CONCURRENT_TASKS
from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.processor import PropertyDescriptor


def flow(scheduling=None, connection=None, properties=None) -> dict:
    return {
        "processors": [
            {"id": "make", "type": "GenerateFlowFile", "scheduling": scheduling or {}},
            {"id": "log", "type": "LogAttribute", "properties": properties or {}, "auto_terminate": ["success"]},
        ],
        "connections": [{"source": "make", "destination": "log", **(connection or {})}],
    }


@pytest.mark.parametrize(
    "scheduling, says",
    [
        (
            {"concurrent_tasks": MAX_CONCURRENT_TASKS + 1},
            "property 'scheduling.concurrent_tasks': expected at most 1024",
        ),
        (
            {"run_schedule": "366 days"},
            "property 'scheduling.run_schedule': the duration '366 days' is longer than a year",
        ),
        ({"yield_duration": 10**9}, "property 'scheduling.yield_duration': the duration '1000000000' is longer"),
        ({"penalty_duration": "9000 hours"}, "property 'scheduling.penalty_duration'"),
    ],
)
def test_scheduling_no_one_means_is_refused(scheduling, says):
    with pytest.raises(FlowDefinitionError, match="processor 'make': " + says.replace("(", r"\(").replace(")", r"\)")):
        parse_flow(flow(scheduling))


def test_scheduling_at_the_limits_is_taken():
    definition = parse_flow(flow({"concurrent_tasks": MAX_CONCURRENT_TASKS, "run_schedule": "365 days"}))
    assert definition.processors["make"].scheduling.concurrent_tasks == MAX_CONCURRENT_TASKS


def test_an_expiration_that_rounds_to_never_is_refused():
    with pytest.raises(FlowDefinitionError, match=r"connections\[0\].expiration: '0.5 ms' is less than 1 ms"):
        parse_flow(flow(connection={"expiration": "0.5 ms"}))
    assert parse_flow(flow(connection={"expiration": "1 ms"})).connections[0].expiration_ms == 1
    assert parse_flow(flow(connection={"expiration": "0 sec"})).connections[0].expiration_ms == 0


def test_property_bounds():
    count = PropertyDescriptor("count", "integer")
    assert count.convert("0") == 0 and count.problem(0) is None
    assert count.problem(count.convert(-1)) == "cannot be negative, got -1"
    offset = PropertyDescriptor("offset", "integer", minimum=-10, maximum=10)
    assert offset.convert(-10) == -10 and offset.problem(-10) is None
    with pytest.raises(ValueError, match="must be at most 10, got 11"):
        offset.convert(11)
    batch = PropertyDescriptor("batch_size", "integer", minimum=1)
    with pytest.raises(ValueError, match="must be at least 1, got 0"):
        batch.convert(0)
    with pytest.raises(ValueError, match="must be at least 1, got 0.5"):
        PropertyDescriptor("wait", "duration", minimum=1).convert("500 ms")


def test_a_negative_integer_property_is_refused_after_the_processors_own_checks():
    refused = {
        "processors": [
            {
                "id": "split",
                "type": "SplitText",
                "properties": {"line_split_count": 10, "header_line_count": -1},
                "auto_terminate": ["splits", "original", "failure"],
            }
        ]
    }
    with pytest.raises(
        FlowDefinitionError,
        match="processor 'split': property 'header_line_count': wrong value for "
        "an integer property: cannot be negative, got -1",
    ):
        parse_flow(refused)
    own_words = {
        "processors": [
            {"id": "make", "type": "GenerateFlowFile", "properties": {"batch_size": -1}, "auto_terminate": ["success"]}
        ]
    }
    with pytest.raises(FlowDefinitionError, match="property 'batch_size': must be at least 1"):
        parse_flow(own_words)


@pytest.mark.parametrize("processor", ["GetFile", "PutFile"])
def test_a_batch_of_nothing_is_refused(processor, tmp_path):
    properties = {"input_directory": str(tmp_path)} if processor == "GetFile" else {"directory": str(tmp_path)}
    document = {
        "processors": [
            {
                "id": "p",
                "type": processor,
                "properties": {**properties, "batch_size": 0},
                "auto_terminate": ["success", "failure"],
            }
        ],
        "connections": [],
    }
    with pytest.raises(FlowDefinitionError, match="processor 'p'.*batch_size.*at least 1"):
        parse_flow(document)
