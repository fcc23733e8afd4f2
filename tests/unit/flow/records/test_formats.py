"""The record readers and writers, each through its service API: round trips between
every pair of formats on generated data (nulls, nested fields, unicode, empty and
one-record contents), and what each says of content it cannot read."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flow.expression import compile_expression
from flow.records import csv_format, json_format
from flow.records.catalog import RECORD_SERVICE_TYPES
from flow.records.errors import RecordError, SchemaChanged
from flow.records.rewrite import copy_records

FLAT = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("ok", pa.bool_())])
NESTED = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("tags", pa.list_(pa.string())),
        ("where", pa.struct([("city", pa.string()), ("floor", pa.int64())])),
    ]
)
WORDS = ["plain", "ünïcödé", "日本語", "comma, inside", 'quote " inside', "line\nbreak", "emoji 🙂", ""]


def service(type_name, **properties):
    cls = RECORD_SERVICE_TYPES[type_name]
    config = {}
    for descriptor in cls.properties:
        value = properties.get(descriptor.name, descriptor.default)
        config[descriptor.name] = descriptor.convert(value) if value is not None else None
    return cls("s", config)


def opener(data: bytes):
    return lambda: contextlib.closing(io.BytesIO(data))


def flat_rows(count, seed=1):
    rnd = random.Random(seed)
    rows = []
    for index in range(count):
        rows.append(
            {
                "id": index,
                "name": rnd.choice(WORDS) if index % 7 else None,
                "score": None if index % 5 == 3 else round(rnd.uniform(-1e6, 1e6), 3),
                "ok": None if index % 11 == 4 else bool(index % 2),
            }
        )
    return rows


def nested_rows(count, seed=2):
    rnd = random.Random(seed)
    return [
        {
            "id": index,
            "name": rnd.choice(WORDS),
            "tags": None if index % 4 == 1 else [rnd.choice(WORDS) for _ in range(index % 3)],
            "where": None if index % 6 == 5 else {"city": rnd.choice(WORDS), "floor": index % 9},
        }
        for index in range(count)
    ]


def write(writer_type, table, **properties) -> bytes:
    sink = io.BytesIO()
    copy_records(table.to_batches(max_chunksize=97), service(writer_type, **properties), sink, table.schema)
    return sink.getvalue()


def read(reader_type, data, schema=None, **properties) -> pa.Table:
    reader = service(reader_type, **properties)
    batches = list(reader.batches(opener(data), schema))
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


WRITERS = {
    "JsonRecordSetWriter": "JsonTreeReader",
    "CSVRecordSetWriter": "CSVReader",
    "ParquetRecordSetWriter": "ParquetReader",
}


def _comparable(rows, csv):
    """`rows` with what a format cannot tell apart made one: CSV has no null text (an
    empty field is empty text, or null in a column of nothing else)."""
    if not csv:
        return rows
    return [{key: ("" if key == "name" and value is None else value) for key, value in row.items()} for row in rows]


@pytest.mark.parametrize("count", [0, 1, 250])
@pytest.mark.parametrize("writer_type", sorted(WRITERS))
@pytest.mark.parametrize("reader_type", sorted(WRITERS.values()))
def test_flat_records_go_through_every_pair_of_formats(reader_type, writer_type, count):
    """Records written in one format, read back, converted to another and read again
    come out as they went in."""
    rows = flat_rows(count)
    table = pa.Table.from_pylist(rows, schema=FLAT)
    first = write(_writer_of(reader_type), table)
    middle = read(reader_type, first)
    second = write(writer_type, middle) if count else write(writer_type, table)
    final = read(WRITERS[writer_type], second)
    assert final.num_rows == count
    if count:
        csv = "CSV" in reader_type + writer_type
        assert _comparable(final.select(FLAT.names).to_pylist(), csv) == _comparable(rows, csv)


def _writer_of(reader_type):
    return {reader: writer for writer, reader in WRITERS.items()}[reader_type]


@pytest.mark.parametrize("writer_type", ["JsonRecordSetWriter", "ParquetRecordSetWriter"])
def test_nested_records_round_trip_through_json_and_parquet(writer_type):
    rows = nested_rows(300)
    table = pa.Table.from_pylist(rows, schema=NESTED)
    back = read(WRITERS[writer_type], write(writer_type, table))
    assert back.select(NESTED.names).to_pylist() == rows


def test_a_csv_writer_writes_nested_fields_and_decimals_as_nifis_does():
    rows = [
        {"id": 1, "name": "a", "tags": ["x", "y"], "where": {"city": "Köln", "floor": 2}},
        {"id": 2, "name": "b", "tags": None, "where": None},
    ]
    written = write("CSVRecordSetWriter", pa.Table.from_pylist(rows, schema=NESTED))
    parsed = list(csv.reader(io.StringIO(written.decode())))
    assert parsed == [
        ["id", "name", "tags", "where"],
        ["1", "a", "[x, y]", '{"city":"Köln","floor":2}'],  # a list as Java's List.toString, a record as JSON
        ["2", "b", "", ""],
    ]
    decimals = pa.table({"d": pa.array([7.0, 10.5, 1e7, None])})
    assert list(csv.reader(io.StringIO(write("CSVRecordSetWriter", decimals).decode()))) == [
        ["d"],
        ["7.0"],
        ["10.5"],
        ["1.0E7"],
        [],  # null: an empty line (one empty value)
    ]


def test_empty_content_holds_no_records_in_any_reader():
    for reader_type in WRITERS.values():
        assert read(reader_type, b"").num_rows == 0
    assert read("JsonTreeReader", b"  \n\n").num_rows == 0
    assert read("JsonTreeReader", b"[]").num_rows == 0
    assert read("CSVReader", b"a,b\n").num_rows == 0


def test_zero_records_are_written_as_an_empty_document():
    empty = pa.table({"a": pa.array([], pa.int64())})
    assert write("JsonRecordSetWriter", empty) == b"[]"
    assert write("JsonRecordSetWriter", empty, output_grouping="one-line-per-object") == b""
    assert write("CSVRecordSetWriter", empty) == b"a\n"
    assert pq.read_table(io.BytesIO(write("ParquetRecordSetWriter", empty))).schema.names == ["a"]


# -- JSON -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n',
        b'[{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]',
        b'[\n  {"a": 1,\n   "b": "x"},\n  {"a": 2, "b": "y"}\n]\n',
        b'{\n  "a": 1,\n  "b": "x"\n}\n{\n  "a": 2,\n  "b": "y"\n}\n',
        b'{"a": 1, "b": "x"} {"a": 2, "b": "y"}',
        b'{"a": 1, "b": "x"}\r\n\r\n{"a": 2, "b": "y"}',
    ],
    ids=["lines", "array", "pretty array", "pretty objects", "one line", "crlf and blank"],
)
def test_json_reader_takes_every_layout_nifi_takes(data):
    assert read("JsonTreeReader", data).to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]


@pytest.mark.parametrize(
    "data, record, line, words",
    [
        (b'{"a": 1}\n{"a": 2\n{"a": 3}\n', 1, 2, "comma"),
        (b'{"a": 1}\n\n\n{"a": 2}\n{"a" 3}\n', 2, 5, "colon"),
        (b'[{"a": 1},\n {"a": 2},\n {"a": }]', 2, 3, "Expecting value"),
        (b'[{"a": 1}, {"a": 2}', 2, 1, "not closed"),
        (b'[{"a": 1}] {"a": 2}', 1, 1, "content follows"),
        (b'{"a": 1}\n[1, 2]\n', 1, 2, "must be a JSON object, not an array"),
        (b'[{"a": 1}, 7]', 1, 1, "not a number"),
        (b'{"a": 1}\n{"a": "x"}\n', 1, 2, "changed from number to string"),
        (b'\xff\xfe{"a": 1}', 0, 1, None),
    ],
)
def test_a_malformed_json_record_is_named_by_index_and_line(data, record, line, words):
    with pytest.raises(RecordError) as raised:
        read("JsonTreeReader", data)
    error = raised.value
    if words == "not a number":
        words = "not a number"
    assert (error.record, error.line) == (record, line), error
    if words is not None:
        assert words in error.message
    assert error.attributes()["record.error.index"] == str(record)


def small_blocks(monkeypatch, module, size=64):
    """Blocks of `size` bytes, read 16 bytes at a time: what megabytes do, in bytes."""
    monkeypatch.setattr(module, "BLOCK_SIZE", size)
    if hasattr(module, "_READ_SIZE"):
        monkeypatch.setattr(module, "_READ_SIZE", 16)


def test_a_json_record_over_the_size_limit_is_refused(monkeypatch):
    small_blocks(monkeypatch, json_format)
    data = b'{"a": 1}\n{"b": "' + b"x" * 500 + b'"}\n'
    with pytest.raises(RecordError, match="longer than max_record_size"):
        read("JsonTreeReader", data, max_record_size="200 B")
    with pytest.raises(RecordError, match="longer than max_record_size"):
        read("JsonTreeReader", b"[" + data.replace(b"\n", b",", 1).rstrip(b"\n") + b"]", max_record_size="200 B")


def test_json_records_whose_shape_changes_after_the_first_block_are_read_with_one_schema(monkeypatch):
    small_blocks(monkeypatch, json_format)
    lines = [json.dumps({"id": index, "v": index}) for index in range(20)]
    lines += [json.dumps({"id": 20, "v": 2.5, "extra": "new"})]
    data = ("\n".join(lines) + "\n").encode()
    reader = service("JsonTreeReader")
    with pytest.raises(SchemaChanged):
        list(reader.batches(opener(data), None))
    schema = reader.infer_schema(opener(data))
    assert schema.field("v").type == pa.float64() and "extra" in schema.names
    table = pa.Table.from_batches(list(reader.batches(opener(data), schema)))
    assert table.num_rows == 21 and table.column("extra").to_pylist()[-1] == "new"
    assert table.column("v").to_pylist()[:3] == [0.0, 1.0, 2.0]


def test_json_records_that_no_schema_fits_are_refused_saying_which_field(monkeypatch):
    small_blocks(monkeypatch, json_format, 32)
    data = b'{"a": 12345678}\n{"a": 12345679}\n{"a": "abcdef"}\n{"a": "ghijkl"}\n'  # 16 bytes a line
    reader = service("JsonTreeReader")
    with pytest.raises(RecordError, match="Field a has incompatible types"):
        reader.infer_schema(opener(data))


def test_a_given_avro_schema_keeps_its_fields_and_types():
    schema_text = json.dumps(
        {
            "type": "record",
            "name": "r",
            "fields": [{"name": "a", "type": "double"}, {"name": "c", "type": ["null", "string"]}],
        }
    )
    reader = service("JsonTreeReader", schema_access_strategy="schema-text-property")
    flowfile = _FlowFile({"avro.schema": schema_text})
    schema = reader.given_schema(flowfile)
    table = pa.Table.from_batches(list(reader.batches(opener(b'{"a": 1, "b": "dropped"}\n{"a": 2}\n'), schema)))
    assert table.schema.names == ["a", "c"] and table.to_pylist() == [{"a": 1.0, "c": None}, {"a": 2.0, "c": None}]
    with pytest.raises(RecordError, match="does not fit the schema") as raised:
        list(reader.batches(opener(b'{"a": 1}\n{"a": "x"}\n'), schema))
    assert (raised.value.record, raised.value.line) == (1, 2)


def test_a_missing_or_broken_schema_text_is_a_record_error():
    reader = service("JsonTreeReader", schema_access_strategy="schema-text-property")
    with pytest.raises(RecordError, match="schema_text is empty"):
        reader.given_schema(_FlowFile({}))
    with pytest.raises(RecordError, match="not valid JSON"):
        reader.given_schema(_FlowFile({"avro.schema": "{nope"}))
    explicit = service("JsonTreeReader", schema_access_strategy="schema-text-property", schema_text='{"type": "int"}')
    with pytest.raises(RecordError, match="must be an Avro record schema"):
        explicit.given_schema(_FlowFile({}))


class _FlowFile:
    def __init__(self, attributes):
        self.attributes = attributes
        self.id = "f"

    def get(self, key, default=None):
        return self.attributes.get(key, default)


def test_json_writer_writes_lines_suppresses_nulls_and_writes_what_json_lacks():
    import datetime
    import decimal

    table = pa.table(
        {
            "t": pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5)], pa.timestamp("ms")),
            "d": pa.array([decimal.Decimal("12345678901234567890.12")], pa.decimal128(22, 2)),
            "b": pa.array([b"\x00\xff"], pa.binary()),
            "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
            "n": pa.array([None], pa.string()),
        }
    )
    lines = write(
        "JsonRecordSetWriter", table, output_grouping="one-line-per-object", suppress_null_values="always-suppress"
    )
    assert json.loads(lines) == {
        "t": "2026-01-02T03:04:05",
        "d": "12345678901234567890.12",
        "b": [0, 255],
        "m": {"k": 1},
    }
    assert b"\n" not in lines  # one record: no newline, as NiFi writes one line per object


# -- CSV ------------------------------------------------------------------------------


def test_csv_reader_options_separator_quote_null_and_no_header():
    data = b"1;'a;b';NULL\n2;'it''s';x\n"
    table = read(
        "CSVReader",
        data,
        value_separator=";",
        quote_character="'",
        null_string="NULL",
        treat_first_line_as_header=False,
    )
    assert table.to_pylist() == [{"f0": 1, "f1": "a;b", "f2": None}, {"f0": 2, "f1": "it's", "f2": "x"}]


def test_csv_columns_whose_type_changes_after_the_first_block_are_inferred_over_every_row(monkeypatch):
    small_blocks(monkeypatch, csv_format)
    rows = "".join(f"{index},{index}\n" for index in range(40))
    data = ("a,b\n" + rows + "4.5,word\n,\n").encode()
    reader = service("CSVReader")
    with pytest.raises(SchemaChanged):
        list(reader.batches(opener(data), None))
    schema = reader.infer_schema(opener(data))
    assert schema == pa.schema([("a", pa.float64()), ("b", pa.string())])
    table = pa.Table.from_batches(list(reader.batches(opener(data), schema)))
    assert table.num_rows == 42 and table.column("a").to_pylist()[-2:] == [4.5, None]


@pytest.mark.parametrize(
    "data, record, line",
    [
        (b"a,b\n1,2\n3,4\n5\n6,7\n", 2, 4),
        (b'a,b\n1,"two\nlines"\n3,4,5\n', 1, 4),
    ],
)
def test_a_csv_row_with_the_wrong_number_of_fields_is_named(data, record, line):
    with pytest.raises(RecordError, match="Expected 2 columns") as raised:
        read("CSVReader", data)
    assert (raised.value.record, raised.value.line) == (record, line)


def test_a_csv_value_that_does_not_fit_the_given_type_is_named():
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    with pytest.raises(RecordError, match="invalid value 'x'") as raised:
        read("CSVReader", b"a,b\n1,p\n2,q\nx,r\n", schema)
    assert (raised.value.record, raised.value.line) == (2, 4)


def test_csv_writer_separator_header_and_null_string():
    table = pa.table({"a": [1, None], "b": ["x;y", None]})
    out = write("CSVRecordSetWriter", table, value_separator=";", null_string="NULL", include_header_line=False)
    assert out == b'1;"x;y"\nNULL;NULL\n'


@pytest.mark.parametrize(
    "properties, message",
    [
        ({"value_separator": ";;"}, "must be one character"),
        ({"quote_character": ","}, "must differ from value_separator"),
        ({"escape_character": "ab"}, "one character or empty"),
    ],
)
def test_csv_reader_refuses_bad_characters(properties, message):
    config = {d.name: d.convert(d.default) if d.default is not None else None for d in csv_format.CSVReader.properties}
    config.update(properties)
    assert any(message in text for _, text in csv_format.CSVReader.validate(config))


# -- Parquet --------------------------------------------------------------------------


def test_parquet_reader_with_a_given_schema_picks_orders_and_casts_columns():
    table = pa.table({"a": [1, 2], "b": ["x", "y"], "c": [True, False]})
    data = write("ParquetRecordSetWriter", table)
    schema = pa.schema([("c", pa.bool_()), ("a", pa.float64()), ("missing", pa.string())])
    assert read("ParquetReader", data, schema).to_pylist() == [
        {"c": True, "a": 1.0, "missing": None},
        {"c": False, "a": 2.0, "missing": None},
    ]


def test_parquet_reader_refuses_what_is_not_parquet():
    with pytest.raises(RecordError, match="not a Parquet file"):
        read("ParquetReader", b"PAR1 but not really")


def test_parquet_writer_makes_row_groups_of_the_configured_size():
    table = pa.Table.from_pylist(flat_rows(1000), schema=FLAT)
    data = write("ParquetRecordSetWriter", table, row_group_size=300, compression_type="zstd")
    parquet = pq.ParquetFile(io.BytesIO(data))
    assert parquet.metadata.num_rows == 1000 and parquet.metadata.num_row_groups == 4
    assert parquet.metadata.row_group(0).column(0).compression == "ZSTD"


def test_every_service_type_is_named_as_nifi_names_it():
    assert sorted(RECORD_SERVICE_TYPES) == [
        "AvroReader",
        "AvroRecordSetWriter",
        "CSVReader",
        "CSVRecordSetWriter",
        "JsonRecordSetWriter",
        "JsonTreeReader",
        "ParquetReader",
        "ParquetRecordSetWriter",
    ]


def test_schema_text_property_is_an_expression():
    descriptor = RECORD_SERVICE_TYPES["CSVReader"].descriptor("schema_text")
    assert descriptor.convert("${avro.schema}").text == compile_expression("${avro.schema}").text
