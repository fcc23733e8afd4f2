"""ValidateRecord: records checked against a schema, valid and invalid ones apart, each
invalid one with its reason; and the check itself, a pure function."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.records.validation import check_batch

from .support import run_records

SCHEMA = {
    "type": "record",
    "name": "person",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "age", "type": ["null", "int"]},
    ],
}
TEXT = json.dumps(SCHEMA)


def validate(inputs, **properties):
    return run_records(
        "ValidateRecord",
        {"record_reader": "in", "record_writer": "out", "schema_access_strategy": "schema-text-property", **properties},
        [("in", "JsonTreeReader", {}), ("out", "JsonRecordSetWriter", {"output_grouping": "one-line-per-object"})],
        inputs,
        relationships=("valid", "invalid", "failure"),
    )


def lines(*rows) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def records(data: bytes) -> list:
    return [json.loads(line) for line in data.splitlines()]


def test_valid_and_invalid_records_go_their_ways_with_a_reason_each():
    data = lines(
        {"id": 1, "name": "a", "age": 30},
        {"id": 2, "name": "b"},
        {"id": 3, "age": 5},
        {"id": "four", "name": "d", "age": 1},
        {"id": 5, "name": "e", "age": None, "extra": True},
    )
    out = validate([({"avro.schema": TEXT, "k": "v"}, data)])
    [(valid_attributes, valid)] = out["valid"]
    assert records(valid) == [
        {"id": 1, "name": "a", "age": 30},
        {"id": 2, "name": "b", "age": None},
        {"id": 5, "name": "e", "age": None},
    ]
    assert valid_attributes["record.count"] == "3" and valid_attributes["k"] == "v"
    [(invalid_attributes, invalid)] = out["invalid"]
    assert [row["id"] for row in records(invalid)] == ["3", "four"]  # id held text and numbers: text
    assert invalid_attributes["record.count"] == "2"
    assert invalid_attributes["record.error.message"] == "record 2: field 'name' is missing or null"


def test_extra_fields_and_loose_types_as_configured():
    data = lines({"id": "7", "name": "a"}, {"id": 8, "name": "b", "more": 1})
    strict = validate([({"avro.schema": TEXT}, data)], allow_extra_fields=False)
    # id holds text and a number: both are written back as text (the number as its JSON)
    assert [json.loads(line)["id"] for line in strict["invalid"][0][1].splitlines()] == ["7", "8"]
    loose = validate([({"avro.schema": TEXT}, data)], strict_type_checking=False)
    assert records(loose["valid"][0][1]) == [{"id": 7, "name": "a", "age": None}, {"id": 8, "name": "b", "age": None}]
    assert loose["invalid"] == []


def test_every_record_valid_or_none_at_all():
    out = validate([({"avro.schema": TEXT}, lines({"id": 1, "name": "a"}))])
    assert len(out["valid"]) == 1 and out["invalid"] == []
    empty = validate([({"avro.schema": TEXT}, b"")])
    assert [(a["record.count"], d) for a, d in empty["valid"]] == [("0", b"")] and empty["invalid"] == []


def test_unreadable_records_or_schema_send_the_original_to_failure():
    bad = lines({"id": 1, "name": "a"}) + b'{"id": 2,\n'
    out = validate([({"avro.schema": TEXT}, bad), ({}, lines({"id": 1, "name": "a"}))])
    [(malformed, data), (no_schema, _)] = out["failure"]
    assert data == bad and (malformed["record.error.index"], malformed["record.error.line"]) == ("1", "2")
    assert no_schema["record.error.message"].startswith("the schema is not valid JSON")
    assert out["valid"] == out["invalid"] == []


def test_csv_values_are_judged_by_what_they_convert_to():
    out = run_records(
        "ValidateRecord",
        {"record_reader": "in", "record_writer": "out", "schema_access_strategy": "schema-text-property"},
        [("in", "CSVReader", {}), ("out", "JsonRecordSetWriter", {"output_grouping": "one-line-per-object"})],
        [({"avro.schema": TEXT}, b"id,name,age\n1,a,3\nx,b,4\n3,c,\n")],
        relationships=("valid", "invalid", "failure"),
    )
    assert records(out["valid"][0][1]) == [{"id": 1, "name": "a", "age": 3}, {"id": 3, "name": "c", "age": None}]
    assert records(out["invalid"][0][1]) == [{"id": "x", "name": "b", "age": 4}]


def _flow(reader_properties, properties):
    return {
        "services": [
            {"id": "in", "type": "JsonTreeReader", "properties": reader_properties},
            {"id": "out", "type": "JsonRecordSetWriter"},
        ],
        "processors": [
            {
                "id": "check",
                "type": "ValidateRecord",
                "properties": {"record_reader": "in", "record_writer": "out", **properties},
                "auto_terminate": ["valid", "invalid", "failure"],
            }
        ],
        "connections": [],
    }


def test_a_reader_that_infers_loads_and_a_schema_text_that_is_not_json_is_refused():
    parse_flow(_flow({}, {}))
    with pytest.raises(FlowDefinitionError, match="property 'schema_text': the schema is not valid JSON"):
        parse_flow(_flow({}, {"schema_access_strategy": "schema-text-property", "schema_text": "{"}))
    parse_flow(_flow({"schema_access_strategy": "schema-text-property", "schema_text": TEXT}, {}))


def inferred(inputs, reader="JsonTreeReader", reader_properties=None):
    return run_records(
        "ValidateRecord",
        {"record_reader": "in", "record_writer": "out"},
        [
            ("in", reader, reader_properties or {}),
            ("out", "JsonRecordSetWriter", {"output_grouping": "one-line-per-object"}),
        ],
        inputs,
        relationships=("valid", "invalid", "failure"),
    )


def test_with_a_reader_that_infers_every_record_it_reads_is_valid_as_in_nifi():
    data = lines({"id": 1, "name": "a"}, {"id": 2, "name": "b", "age": 7}, {"id": 3})
    out = inferred([({"k": "v"}, data)])
    assert out["invalid"] == [] and out["failure"] == []
    [(attributes, valid)] = out["valid"]
    assert records(valid) == [
        {"id": 1, "name": "a", "age": None},
        {"id": 2, "name": "b", "age": 7},
        {"id": 3, "name": None, "age": None},
    ]
    assert attributes["record.count"] == "3" and attributes["k"] == "v"
    csv = b"id,name\n1,a\n2,b\n"
    out = inferred([({}, csv)], "CSVReader", {"schema_access_strategy": "infer-schema"})
    [(attributes, valid)] = out["valid"]
    assert records(valid) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


def test_with_a_reader_that_infers_records_of_mixed_types_are_valid_and_kept_as_they_were():
    # NiFi infers a choice of types there, finds them valid and writes them as they were
    data = lines({"amount": 1}, {"amount": "lots"}, {"amount": {"n": 2}})
    out = inferred([({}, data)])
    [(attributes, valid)] = out["valid"]
    assert records(valid) == [{"amount": 1}, {"amount": "lots"}, {"amount": {"n": 2}}]
    assert out["invalid"] == [] and out["failure"] == []


def test_with_a_reader_that_infers_records_it_cannot_read_send_the_original_to_failure():
    out = inferred([({}, b"{not json")])
    assert out["valid"] == [] and out["invalid"] == []
    [(attributes, original)] = out["failure"]
    assert original == b"{not json" and attributes["record.error.message"]


# -- the check --------------------------------------------------------------------------------------


def test_check_batch_widens_without_loss_and_refuses_the_rest_when_strict():
    schema = pa.schema([pa.field("n", pa.float64(), nullable=False), pa.field("s", pa.string())])
    batch = pa.RecordBatch.from_pylist(
        [{"n": 1, "s": "x"}, {"n": None, "s": "y"}, {"n": 3, "s": None}],
        schema=pa.schema([("n", pa.int32()), ("s", pa.string())]),
    )
    checked = check_batch(batch, schema, strict=True, allow_extra=True)
    assert checked.valid.to_pylist() == [{"n": 1.0, "s": "x"}, {"n": 3.0, "s": None}]
    assert checked.reasons == [(1, "field 'n' is missing or null")]
    texts = pa.RecordBatch.from_pylist([{"n": "1.5", "s": "a"}, {"n": "x", "s": "b"}])
    assert check_batch(texts, schema, strict=True, allow_extra=True).valid.num_rows == 0
    loose = check_batch(texts, schema, strict=False, allow_extra=True)
    assert loose.valid.to_pylist() == [{"n": 1.5, "s": "a"}]
    assert loose.reasons == [(1, "field 'n' is a string, not a double")]
