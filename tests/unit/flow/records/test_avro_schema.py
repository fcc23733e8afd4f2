"""Avro schemas (JSON) as Arrow schemas, and back."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from flow.loading import load_flow
from flow.records.avro_schema import arrow_schema, avro_schema
from flow.records.errors import RecordError

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "extra", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 16}},
        {
            "name": "ship",
            "type": {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]},
        },
        {"name": "bill", "type": ["null", "Address"]},
        {"name": "flag", "type": "boolean"},
        {"name": "ratio", "type": "float"},
    ],
}


def test_every_avro_type_has_its_arrow_type():
    schema = arrow_schema(json.dumps(ORDER))
    address = pa.struct([pa.field("city", pa.string(), nullable=False)])
    assert schema == pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("qty", pa.int32(), nullable=False),
            pa.field("note", pa.string()),
            pa.field("price", pa.decimal128(10, 2), nullable=False),
            pa.field("day", pa.date32(), nullable=False),
            pa.field("at", pa.timestamp("ms", tz="UTC"), nullable=False),
            pa.field("local", pa.timestamp("us"), nullable=False),
            pa.field("tags", pa.list_(pa.field("item", pa.string(), nullable=False)), nullable=False),
            pa.field("extra", pa.map_(pa.string(), pa.field("value", pa.float64())), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("hash", pa.binary(16), nullable=False),
            pa.field("ship", address, nullable=False),
            pa.field("bill", address),
            pa.field("flag", pa.bool_(), nullable=False),
            pa.field("ratio", pa.float32(), nullable=False),
        ]
    )


def test_an_arrow_schema_written_as_avro_reads_back_the_same():
    schema = arrow_schema(json.dumps(ORDER))
    back = arrow_schema(json.dumps(avro_schema(schema)))
    assert back == schema


@pytest.mark.parametrize(
    "document, message",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"type": "string"}), "must be an Avro record schema"),
        (json.dumps({"type": "record", "name": "r"}), "has no list of fields"),
        (json.dumps({"type": "record", "fields": [{"type": "int"}]}), "has no name"),
        (json.dumps({"type": "record", "fields": [{"name": "x", "type": ["int", "string"]}]}), "union of 2 types"),
        (json.dumps({"type": "record", "fields": [{"name": "x", "type": "Nope"}]}), "unknown type 'Nope'"),
        (json.dumps({"type": "record", "fields": [{"name": "x", "type": {"type": "fixed"}}]}), "without a size"),
        (
            json.dumps(
                {"type": "record", "fields": [{"name": "x", "type": {"type": "bytes", "logicalType": "decimal"}}]}
            ),
            "precision and scale",
        ),
    ],
)
def test_a_schema_that_cannot_be_read_says_why(document, message):
    with pytest.raises(RecordError, match=message):
        arrow_schema(document)


def test_a_type_avro_lacks_is_refused_by_name():
    with pytest.raises(RecordError, match="field 'd' is of type duration"):
        avro_schema(pa.schema([("d", pa.duration("s"))]))


def test_the_records_example_flow_loads():
    flow = load_flow(str(EXAMPLES / "records.yaml"), {"data_dir": "/nonexistent/custody"})
    assert set(flow.services) == {"json-in", "parquet-out"}
    assert flow.processors["convert"].properties["record_writer"] is flow.services["parquet-out"]
