"""SplitRecord and PartitionRecord: one FlowFile's records into several, in order, with
the fragment attributes, and nothing made when the records cannot be read."""

from __future__ import annotations

import json

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.records.record_path import RecordPathError, compile_path

from .support import run_records

SERVICES = [("in", "JsonTreeReader", {}), ("out", "JsonRecordSetWriter", {"output_grouping": "one-line-per-object"})]
ROWS = [{"id": i, "city": ["Oslo", "Lisboa", None][i % 3], "at": {"floor": i % 2}} for i in range(10)]
DATA = b"".join(json.dumps(row).encode() + b"\n" for row in ROWS)


def records(data: bytes) -> list:
    return [json.loads(line) for line in data.splitlines()]


def split(inputs, size):
    properties = {"record_reader": "in", "record_writer": "out", "records_per_split": size}
    return run_records("SplitRecord", properties, SERVICES, inputs, relationships=("splits", "original", "failure"))


def partition(inputs, **paths):
    properties = {"record_reader": "in", "record_writer": "out", **paths}
    return run_records(
        "PartitionRecord", properties, SERVICES, inputs, relationships=("success", "original", "failure")
    )


@pytest.mark.parametrize("size, counts", [(3, [3, 3, 3, 1]), (5, [5, 5]), (10, [10]), (100, [10])])
def test_splits_hold_the_records_in_order_with_fragment_attributes(size, counts):
    out = split([({"filename": "in.json"}, DATA)], size)
    assert [int(a["record.count"]) for a, _ in out["splits"]] == counts
    assert [row for _, data in out["splits"] for row in records(data)] == ROWS
    assert [a["fragment.index"] for a, _ in out["splits"]] == [str(i) for i in range(len(counts))]
    assert {a["fragment.count"] for a, _ in out["splits"]} == {str(len(counts))}
    assert len({a["fragment.identifier"] for a, _ in out["splits"]}) == 1
    assert {a["segment.original.filename"] for a, _ in out["splits"]} == {"in.json"}
    assert [data for _, data in out["original"]] == [DATA]


def test_a_split_spans_the_reader_s_blocks(monkeypatch):
    from flow.records import json_format

    monkeypatch.setattr(json_format, "BLOCK_SIZE", 100)
    monkeypatch.setattr(json_format, "_READ_SIZE", 40)
    out = split([({}, DATA)], 4)
    assert [int(a["record.count"]) for a, _ in out["splits"]] == [4, 4, 2]
    assert [row for _, data in out["splits"] for row in records(data)] == ROWS


def test_partitions_by_value_in_first_seen_order_with_the_value_as_attribute():
    out = partition([({}, DATA)], city="/city", floor="/at/floor")
    keys = [(a.get("city"), a["floor"], a["record.count"]) for a, _ in out["success"]]
    assert keys == [
        ("Oslo", "0", "2"),
        ("Lisboa", "1", "2"),
        (None, "0", "2"),
        ("Oslo", "1", "2"),
        ("Lisboa", "0", "1"),
        (None, "1", "1"),
    ]
    for attributes, data in out["success"]:
        for row in records(data):
            assert row["city"] == attributes.get("city") and str(row["at"]["floor"]) == attributes["floor"]
    assert sorted(row["id"] for _, data in out["success"] for row in records(data)) == list(range(10))


def test_unreadable_records_make_no_split_and_send_the_original_to_failure():
    bad = DATA + b'{"id": 10, "city": \n'
    out = split([({}, bad)], 3)
    assert out["splits"] == [] and out["original"] == []
    [(attributes, data)] = out["failure"]
    assert data == bad and attributes["record.error.line"] == "11"
    parted = partition([({}, bad)], city="/city")
    assert parted["success"] == [] and [d for _, d in parted["failure"]] == [bad]


@pytest.mark.parametrize(
    "path, message",
    [("city", "starts with '/'"), ("/a//b", "empty field name"), ("/a[0]", "only /field/field paths")],
)
def test_a_record_path_that_cannot_be_read_is_refused(path, message):
    with pytest.raises(RecordPathError, match=message):
        compile_path(path)
    document = {
        "services": [{"id": "in", "type": "JsonTreeReader"}, {"id": "out", "type": "JsonRecordSetWriter"}],
        "processors": [
            {
                "id": "part",
                "type": "PartitionRecord",
                "properties": {"record_reader": "in", "record_writer": "out", "key": path},
                "auto_terminate": ["success", "original", "failure"],
            }
        ],
        "connections": [],
    }
    with pytest.raises(FlowDefinitionError, match=f"processor 'part': property 'key': .*{message}"):
        parse_flow(document)


MIXED_ROWS = [{"id": 1, "code": 7}, {"id": 2, "code": "seven"}, {"id": 3, "code": 7}, {"id": 4, "code": {"n": 7}}]
MIXED = b"".join(json.dumps(row).encode() + b"\n" for row in MIXED_ROWS)


def test_a_field_whose_values_differ_in_type_splits_and_partitions_by_each_value_s_text():
    """NiFi infers a CHOICE: the JSON writer writes each value as it was; a partition's
    attribute is the value's text (a string as itself)."""
    out = split([({}, MIXED)], 3)
    assert [row for _, data in out["splits"] for row in records(data)] == MIXED_ROWS
    out = partition([({}, MIXED)], code="/code")
    assert [(a["code"], records(data)) for a, data in out["success"]] == [
        ("7", [MIXED_ROWS[0], MIXED_ROWS[2]]),
        ("seven", [MIXED_ROWS[1]]),
        ('{"n":7}', [MIXED_ROWS[3]]),
    ]
    assert out["failure"] == []
