"""UpdateRecord and RemoveRecordField: fields set, copied and removed by record path."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.records.record_path import column_of, with_values, without

from .support import run_records

SERVICES = [("in", "JsonTreeReader", {}), ("out", "JsonRecordSetWriter", {"output_grouping": "one-line-per-object"})]
ROWS = [{"id": i, "city": "Oslo", "at": {"floor": i, "room": f"r{i}"}} for i in range(3)]
DATA = b"".join(json.dumps(row).encode() + b"\n" for row in ROWS)


def records(data: bytes) -> list:
    return [json.loads(line) for line in data.splitlines()]


def edit(processor, properties, inputs):
    return run_records(processor, {"record_reader": "in", "record_writer": "out", **properties}, SERVICES, inputs)


def test_literal_values_take_the_field_s_type_and_new_fields_are_text():
    out = edit("UpdateRecord", {"/city": "${where}", "/at/floor": "7", "/new/x": "hi"}, [({"where": "Bergen"}, DATA)])
    [(attributes, data)] = out["success"]
    assert records(data) == [
        {"id": i, "city": "Bergen", "at": {"floor": 7, "room": f"r{i}"}, "new": {"x": "hi"}} for i in range(3)
    ]
    assert attributes["record.count"] == "3"


def test_record_path_values_copy_each_record_s_own():
    out = edit("UpdateRecord", {"replacement_value_strategy": "record-path-value", "/room": "/at/room"}, [({}, DATA)])
    assert [row["room"] for row in records(out["success"][0][1])] == ["r0", "r1", "r2"]


def test_remove_record_field_removes_top_level_and_nested_fields():
    out = edit("RemoveRecordField", {"one": "/city", "two": "/at/room", "absent": "/nope"}, [({}, DATA)])
    assert records(out["success"][0][1]) == [{"id": i, "at": {"floor": i}} for i in range(3)]


def test_a_value_that_does_not_fit_the_field_sends_the_flowfile_to_failure_unchanged():
    out = edit("UpdateRecord", {"/id": "not a number"}, [({}, DATA)])
    [(attributes, data)] = out["failure"]
    assert data == DATA and "is not a int64" in attributes["record.error.message"]


@pytest.mark.parametrize(
    "processor, properties, message",
    [
        ("UpdateRecord", {"city": "x"}, "starts with '/'"),
        ("UpdateRecord", {"replacement_value_strategy": "record-path-value", "/a": "b"}, "a function is followed by"),
        ("UpdateRecord", {"replacement_value_strategy": "record-path-value", "/a": "nope(/b)"}, "unknown function"),
        ("UpdateRecord", {"replacement_value_strategy": "record-path-value", "/a": "/b[./c = 'x']"}, "predicate"),
        ("RemoveRecordField", {"x": "/a[1]"}, "only /field/field paths"),
        ("RemoveRecordField", {}, "needs at least one record path"),
    ],
)
def test_paths_that_cannot_be_read_are_refused_at_load(processor, properties, message):
    document = {
        "services": [{"id": "in", "type": "JsonTreeReader"}, {"id": "out", "type": "JsonRecordSetWriter"}],
        "processors": [
            {
                "id": "edit",
                "type": processor,
                "properties": {"record_reader": "in", "record_writer": "out", **properties},
                "auto_terminate": ["success", "failure"],
            }
        ],
        "connections": [],
    }
    with pytest.raises(FlowDefinitionError, match=message):
        parse_flow(document)


def test_path_helpers_on_a_batch_with_null_nested_records():
    batch = pa.RecordBatch.from_pylist([{"a": {"b": 1}}, {"a": None}])
    assert column_of(batch, ("a", "b")).to_pylist() == [1, None]
    assert column_of(batch, ("a", "zz")).to_pylist() == [None, None]
    assert with_values(batch, ("a", "c"), pa.array(["x", "y"])).column("a").to_pylist()[0] == {"b": 1, "c": "x"}
    assert without(batch, ("a", "b")).to_pylist() == [{"a": None}, {"a": None}]


def test_record_path_functions_compute_each_record_s_value():
    properties = {
        "replacement_value_strategy": "record-path-value",
        "/label": "concat(toUpperCase(/city), '-', /at/room)",
        "/at/room": "padLeft(substringAfter(/at/room, 'r'), 3, '0')",
    }
    out = edit("UpdateRecord", properties, [({}, DATA)])
    rows = records(out["success"][0][1])
    assert [row["label"] for row in rows] == ["OSLO-r0", "OSLO-r1", "OSLO-r2"]  # in order: the room before it changed
    assert [row["at"]["room"] for row in rows] == ["000", "001", "002"]
