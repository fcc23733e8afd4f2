"""ConvertRecord in a flow: its services named by id, what goes to success and to
failure, and a flow that names services it lacks refused at load."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow

from .support import convert, run_records


def test_json_lines_become_parquet_with_record_count_and_mime_type():
    lines = b"".join(json.dumps({"id": index, "name": f"n{index}"}).encode() + b"\n" for index in range(500))
    out = convert("JsonTreeReader", "ParquetRecordSetWriter", [({"filename": "a.json"}, lines)])
    [(attributes, data)] = out["success"]
    assert attributes["record.count"] == "500" and attributes["mime.type"] == "application/vnd.apache.parquet"
    assert attributes["filename"] == "a.json"
    assert pq.read_table(io.BytesIO(data)).column("id").to_pylist() == list(range(500))
    assert out["failure"] == []


def test_a_malformed_flowfile_goes_to_failure_whole_and_the_others_go_on():
    good = b"a,b\n1,2\n"
    bad = b"a,b\n1,2\n3\n"
    out = convert("CSVReader", "JsonRecordSetWriter", [({"n": "1"}, good), ({"n": "2"}, bad), ({"n": "3"}, good)])
    assert [(a["n"], json.loads(d)) for a, d in out["success"]] == [
        ("1", [{"a": 1, "b": 2}]),
        ("3", [{"a": 1, "b": 2}]),
    ]
    [(attributes, data)] = out["failure"]
    assert data == bad and attributes["n"] == "2"
    assert attributes["record.error.index"] == "1" and attributes["record.error.line"] == "3"
    assert "Expected 2 columns" in attributes["record.error.message"]
    assert "record.count" not in attributes


def test_records_whose_schema_widens_late_are_converted_with_the_wider_schema(monkeypatch):
    from flow.records import json_format

    monkeypatch.setattr(json_format, "BLOCK_SIZE", 256)
    monkeypatch.setattr(json_format, "_READ_SIZE", 64)
    rows = [{"id": index, "v": index} for index in range(50)] + [{"id": 50, "v": 0.5, "late": "yes"}]
    data = b"".join(json.dumps(row).encode() + b"\n" for row in rows)
    out = convert(
        "JsonTreeReader",
        "JsonRecordSetWriter",
        [({}, data)],
        writer_properties={"output_grouping": "one-line-per-object"},
    )
    [(attributes, content)] = out["success"]
    written = [json.loads(line) for line in content.splitlines()]
    assert attributes["record.count"] == "51" and len(written) == 51
    assert written[0] == {"id": 0, "v": 0.0, "late": None} and written[-1] == {"id": 50, "v": 0.5, "late": "yes"}


def test_zero_record_flowfiles_are_kept_or_dropped_as_configured():
    services = [("in", "JsonTreeReader", {}), ("out", "JsonRecordSetWriter", {})]
    kept = run_records("ConvertRecord", {"record_reader": "in", "record_writer": "out"}, services, [({}, b"")])
    assert [(a["record.count"], d) for a, d in kept["success"]] == [("0", b"[]")]
    dropped = run_records(
        "ConvertRecord",
        {"record_reader": "in", "record_writer": "out", "include_zero_record_flowfiles": False},
        services,
        [({}, b""), ({}, b'{"a": 1}')],
    )
    assert [a["record.count"] for a, _ in dropped["success"]] == ["1"]


def test_a_schema_from_the_flowfiles_attribute():
    schema = json.dumps({"type": "record", "name": "r", "fields": [{"name": "b", "type": ["null", "long"]}]})
    out = convert(
        "CSVReader",
        "JsonRecordSetWriter",
        [({"avro.schema": schema}, b"a,b\nx,1\ny,\n"), ({}, b"a,b\nx,1\n")],
        reader_properties={"schema_access_strategy": "schema-text-property"},
    )
    assert [json.loads(d) for _, d in out["success"]] == [[{"b": 1}, {"b": None}]]
    [(attributes, _)] = out["failure"]
    assert "schema_text is empty" in attributes["record.error.message"]


def _flow(services, properties):
    return {
        "services": services,
        "processors": [
            {
                "id": "convert",
                "type": "ConvertRecord",
                "properties": properties,
                "auto_terminate": ["success", "failure"],
            }
        ],
        "connections": [],
        "ports": [],
    }


READER = {"id": "in", "type": "JsonTreeReader"}
WRITER = {"id": "out", "type": "CSVRecordSetWriter"}


@pytest.mark.parametrize(
    "services, properties, message",
    [
        (
            [READER, WRITER],
            {"record_reader": "nope", "record_writer": "out"},
            "no service with id 'nope' in the flow's services (defined: 'in', 'out')",
        ),
        (
            [READER, WRITER],
            {"record_reader": "out", "record_writer": "out"},
            "service 'out' is a record writer (CSVRecordSetWriter); expected a record reader",
        ),
        ([READER], {"record_reader": "in"}, "property 'record_writer': required property is missing"),
        (
            [READER, {"id": "in", "type": "CSVReader"}],
            {"record_reader": "in", "record_writer": "in"},
            "duplicate service id 'in'",
        ),
        (
            [{"id": "x", "type": "AvroReaderish"}],
            {},
            "unknown service type 'AvroReaderish'; known types: AvroReader, AvroRecordSetWriter, CSVReader",
        ),
        (
            [{"id": "x", "type": "CSVReader", "properties": {"value_separator": "ab"}}],
            {},
            "services.x.properties.value_separator: must be one character",
        ),
        ([{"id": "x", "type": "CSVReader", "properties": {"separator": ";"}}], {}, "CSVReader has no such property"),
        ([{"id": "x", "type": "CSVReader", "extra": 1}], {}, "extra"),
        ({"id": "x"}, {}, "services: expected a list of services"),
    ],
)
def test_a_flow_whose_services_do_not_fit_is_refused_naming_the_place(services, properties, message):
    with pytest.raises(FlowDefinitionError) as raised:
        parse_flow(_flow(services, properties))
    assert message in str(raised.value)


def test_a_service_property_takes_flow_parameters():
    document = _flow(
        [{"id": "in", "type": "CSVReader", "properties": {"value_separator": "#{separator}"}}, WRITER],
        {"record_reader": "in", "record_writer": "out"},
    )
    document["parameters"] = {"separator": ";"}
    definition = parse_flow(document)
    reader = definition.processors["convert"].properties["record_reader"]
    assert reader is definition.services["in"] and reader.config["value_separator"] == ";"


MIXED = b"".join(
    json.dumps(row).encode() + b"\n"
    for row in [
        {"id": 1, "code": 7, "at": {"x": 1}},
        {"id": 2, "code": "seven", "at": "nowhere"},
        {"id": 3, "code": None, "at": None},
        {"id": 4, "code": 7.5, "at": [1, "a"]},
    ]
)


def test_fields_whose_values_differ_in_type_are_written_as_each_was_in_json_and_as_text_elsewhere(monkeypatch):
    """NiFi infers a CHOICE; the JSON writer keeps each value, the others write its text.
    The late record (a block boundary before it) checks the path where a later block
    disagrees with the first."""
    out = convert(
        "JsonTreeReader",
        "JsonRecordSetWriter",
        [({}, MIXED)],
        writer_properties={"output_grouping": "one-line-per-object"},
    )
    [(attributes, data)] = out["success"]
    assert [json.loads(line) for line in data.splitlines()] == [json.loads(line) for line in MIXED.splitlines()]
    assert attributes["record.count"] == "4"
    out = convert("JsonTreeReader", "CSVRecordSetWriter", [({}, MIXED)])
    [(_, data)] = out["success"]
    assert data.decode().splitlines() == [
        "id,code,at",
        '1,7,"{""x"":1}"',
        "2,seven,nowhere",
        "3,,",
        '4,7.5,"[1,""a""]"',
    ]
    for writer in ("ParquetRecordSetWriter", "AvroRecordSetWriter"):
        [(_, data)] = convert("JsonTreeReader", writer, [({}, MIXED)])["success"]
        [(_, back)] = convert(writer.replace("RecordSetWriter", "Reader"), "JsonRecordSetWriter", [({}, data)])[
            "success"
        ]
        assert [row["code"] for row in json.loads(back)] == ["7", "seven", None, "7.5"], writer
    # Split over blocks: the first block agrees with itself, a later one does not.
    monkeypatch.setattr("flow.records.json_format.BLOCK_SIZE", 40)
    [(_, data)] = convert("JsonTreeReader", "JsonRecordSetWriter", [({}, MIXED)])["success"]
    assert json.loads(data) == [json.loads(line) for line in MIXED.splitlines()]


def test_a_malformed_record_among_mixed_types_still_sends_the_flowfile_to_failure():
    data = MIXED + b'{"id": 5, "code": \n'
    out = convert("JsonTreeReader", "JsonRecordSetWriter", [({}, data)])
    [(attributes, kept)] = out["failure"]
    assert kept == data and attributes["record.error.index"] == "4"


def one_line_per_object(reader, data, reader_properties=None):
    """What ConvertRecord from `reader` to JSON, one object per line, writes of `data`."""
    out = convert(
        reader,
        "JsonRecordSetWriter",
        [({}, data)],
        reader_properties=reader_properties,
        writer_properties={"output_grouping": "one-line-per-object"},
    )
    assert out["failure"] == []
    [(_, written)] = out["success"]
    return written


def test_json_text_that_looks_like_a_date_is_written_back_as_it_was_read():
    # Arrow would read these as timestamps and write "2024-12-01T00:00:00"; NiFi's
    # JsonTreeReader without a date format keeps them as the text they are
    record = {"day": "2024-12-01", "at": "2024-12-01T10:00:00Z", "n": {"d": "2024-12-01 10:00:00"}, "l": ["2024-01-01"]}
    lines = json.dumps(record).encode() + b"\n"
    assert json.loads(one_line_per_object("JsonTreeReader", lines)) == record


def test_csv_text_that_looks_like_a_date_or_a_time_is_written_back_as_it_was_read():
    csv = b"day,at,t,n\n2024-12-01,2024-12-01T10:00:00Z,10:00:00,1\n"
    data = one_line_per_object("CSVReader", csv, {"schema_access_strategy": "infer-schema"})
    assert json.loads(data) == {"day": "2024-12-01", "at": "2024-12-01T10:00:00Z", "t": "10:00:00", "n": 1}


def test_a_field_that_is_an_object_in_one_record_and_a_number_in_another_is_written_as_each_was():
    # read as each value's JSON text, as for text against a number (an object was taken
    # for a number there, and the FlowFile went to failure)
    lines = b'{"a": {"x": 1}}\n{"a": 5}\n{"a": [1, "b"]}\n'
    data = one_line_per_object("JsonTreeReader", lines)
    assert [json.loads(line) for line in data.splitlines()] == [{"a": {"x": 1}}, {"a": 5}, {"a": [1, "b"]}]
