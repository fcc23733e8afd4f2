"""AvroReader and AvroRecordSetWriter: round trips of every Arrow type Avro holds through
every codec, containers written by Apache Avro's Java implementation (`samples/`),
schemaless records, a given schema resolved against the file's, and damaged bytes:
cut at every offset, flipped at every byte, each named as a `RecordError`."""

from __future__ import annotations

import contextlib
import datetime
import decimal
import io
import json
import pathlib

import fastavro
import pyarrow as pa
import pytest

from flow.records import avro_format
from flow.records.avro_format import CODECS, MAGIC, encode_header, encode_long
from flow.records.errors import RecordError
from flow.records.rewrite import copy_records

from .support import convert
from .test_formats import FLAT, NESTED, WORDS, flat_rows, nested_rows, opener, read, service, write

SAMPLES = pathlib.Path(__file__).parent / "samples"
GIVEN = "schema-text-property"
COMPRESSIONS = ["none", "deflate", "snappy", "zstandard", "bzip2", "xz"]
UTC = datetime.UTC


class FlowFile:
    def __init__(self, attributes):
        self.attributes = attributes
        self.id = "f"

    def get(self, key, default=None):
        return self.attributes.get(key, default)


def given_reader(schema_document) -> tuple:
    """A reader given `schema_document` in the avro.schema attribute, and the schema it
    gives a FlowFile that carries it."""
    reader = service("AvroReader", schema_access_strategy=GIVEN)
    return reader, reader.given_schema(FlowFile({"avro.schema": json.dumps(schema_document)}))


def read_with(reader, data: bytes, schema) -> list[dict]:
    batches = list(reader.batches(opener(data), schema))
    return pa.Table.from_batches(batches).to_pylist(maps_as_pydicts="strict") if batches else []


def rows_of(data: bytes, **properties) -> list[dict]:
    return read("AvroReader", data, **properties).to_pylist(maps_as_pydicts="strict")


# -- round trips ----------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, 1, 250])
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_flat_records_round_trip_through_every_codec(compression, count):
    rows = flat_rows(count)
    data = write("AvroRecordSetWriter", pa.Table.from_pylist(rows, schema=FLAT), compression_format=compression)
    assert data.startswith(MAGIC)
    assert rows_of(data) == rows
    assert service("AvroReader").infer_schema(opener(data)) == FLAT


def test_nested_records_round_trip():
    rows = nested_rows(300)
    data = write("AvroRecordSetWriter", pa.Table.from_pylist(rows, schema=NESTED), compression_format="deflate")
    assert rows_of(data) == rows


def every_type() -> pa.Table:
    """Two records of every Arrow type Avro has a type for, and one of nulls."""
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    return pa.table(
        {
            "text": pa.array(["ünïcödé 日本語 🙂", "", None]),
            "int": pa.array([-(2**31), 2**31 - 1, None], pa.int32()),
            "long": pa.array([-(2**63), 2**63 - 1, None], pa.int64()),
            "small": pa.array([-5, 7, None], pa.int8()),
            "float": pa.array([1.5, -0.25, None], pa.float32()),
            "double": pa.array([1e300, -2.5e-300, None], pa.float64()),
            "bool": pa.array([True, False, None]),
            "bytes": pa.array([b"\x00\xff\x80", b"", None], pa.binary()),
            "fixed": pa.array([b"abcd", b"\x00\x00\x00\x01", None], pa.binary(4)),
            "decimal": pa.array([decimal.Decimal("-12345678.90"), decimal.Decimal("0.01"), None], pa.decimal128(10, 2)),
            "wide": pa.array(
                [decimal.Decimal("-" + "9" * 44 + ".5"), decimal.Decimal("0.0"), None], pa.decimal256(46, 1)
            ),
            "date": pa.array([datetime.date(1, 1, 1), datetime.date(9999, 12, 31), None], pa.date32()),
            "time_ms": pa.array([datetime.time(23, 59, 59, 999000), datetime.time(0), None], pa.time32("ms")),
            "time_us": pa.array([datetime.time(1, 2, 3, 4), datetime.time(0), None], pa.time64("us")),
            "ts_ms": pa.array(
                [moment.replace(microsecond=123000), datetime.datetime(1, 1, 1, tzinfo=UTC), None],
                pa.timestamp("ms", tz="UTC"),
            ),
            "ts_us": pa.array([moment, moment, None], pa.timestamp("us", tz="UTC")),
            "ts_ns": pa.array([1_767_322_045_123_456_789, -1, None], pa.timestamp("ns", tz="UTC")),
            "local": pa.array([moment.replace(tzinfo=None), moment.replace(tzinfo=None), None], pa.timestamp("us")),
            "map": pa.array([[("a", 1), ("ü", None)], [], None], pa.map_(pa.string(), pa.int64())),
            "list": pa.array([[1, None, 3], [], None], pa.list_(pa.int64())),
            "timestamps": pa.array([[moment], [None], None], pa.list_(pa.timestamp("us", tz="UTC"))),
            "record": pa.array(
                [{"city": "Zürich", "floor": 3, "tags": ["x"]}, {"city": None, "floor": None, "tags": None}, None],
                pa.struct([("city", pa.string()), ("floor", pa.int32()), ("tags", pa.list_(pa.string()))]),
            ),
        }
    )


@pytest.mark.parametrize("compression", ["none", "snappy"])
def test_every_type_avro_holds_round_trips_with_nulls(compression):
    table = every_type()
    data = write("AvroRecordSetWriter", table, compression_format=compression)
    back = read("AvroReader", data)
    widened = {"small": pa.int32()}  # Avro has no 8-bit integer: it is written as an int
    assert back.schema == pa.schema([field.with_type(widened.get(field.name, field.type)) for field in table.schema])
    assert back["ts_ns"].cast(pa.int64()) == table["ts_ns"].cast(pa.int64())  # Python's datetime has no nanoseconds
    assert back.drop(["ts_ns"]).to_pylist(maps_as_pydicts="strict") == table.drop(["ts_ns"]).to_pylist(
        maps_as_pydicts="strict"
    )


def test_units_avro_lacks_are_written_in_the_nearest_it_has():
    table = pa.table(
        {
            "seconds": pa.array([1_700_000_000], pa.timestamp("s")),
            "day": pa.array([86_400_000 * 3], pa.date64()),
            "time_s": pa.array([61], pa.time32("s")),
            "time_ns": pa.array([1_000], pa.time64("ns")),
            "half": pa.array([1.5], pa.float16()),
            "keyed": pa.array([[(1, "one")]], pa.map_(pa.int64(), pa.string())),
            "coded": pa.array(["a"]).dictionary_encode(),
        }
    )
    back = read("AvroReader", write("AvroRecordSetWriter", table))
    assert back.schema.field("seconds").type == pa.timestamp("ms")
    assert back.to_pylist(maps_as_pydicts="strict") == [
        {
            "seconds": datetime.datetime(2023, 11, 14, 22, 13, 20),
            "day": datetime.date(1970, 1, 4),
            "time_s": datetime.time(0, 1, 1),
            "time_ns": datetime.time(0, 0, 0, 1),
            "half": 1.5,
            "keyed": {"1": "one"},
            "coded": "a",
        }
    ]


def test_a_value_avro_cannot_hold_is_named_by_its_record():
    table = pa.table({"n": pa.array([1, 2, 2**64 - 1], pa.uint64())})
    with pytest.raises(RecordError, match="cannot be written as Avro") as raised:
        write("AvroRecordSetWriter", table)
    assert raised.value.record == 2


def test_the_writer_names_its_record_as_nifi_does_and_other_readers_read_it():
    rows = nested_rows(40)
    for compression in ["none", "deflate", "bzip2", "xz"]:  # fastavro's snappy and zstandard need more packages
        data = write("AvroRecordSetWriter", pa.Table.from_pylist(rows, schema=NESTED), compression_format=compression)
        avro = fastavro.reader(io.BytesIO(data))
        assert avro.writer_schema["name"] == "org.apache.nifi.nifiRecord"
        assert avro.codec == {"none": "null"}.get(compression, compression)
        assert list(avro) == rows


def test_a_large_batch_is_written_in_blocks_and_read_in_batches(monkeypatch):
    monkeypatch.setattr(avro_format, "RECORDS_PER_BATCH", 100)
    rows = flat_rows(250)
    table = pa.Table.from_pylist(rows, schema=FLAT)
    sink = io.BytesIO()
    writer = service("AvroRecordSetWriter", compression_format="deflate").open(sink, FLAT)
    writer.write(table.to_batches()[0])
    writer.close()
    assert [block.num_records for block in fastavro.block_reader(io.BytesIO(sink.getvalue()))] == [100, 100, 50]
    batches = list(service("AvroReader").batches(opener(sink.getvalue()), None))
    assert [batch.num_rows for batch in batches] == [100, 100, 50]
    assert pa.Table.from_batches(batches).to_pylist() == rows


def test_zero_records_are_a_header_alone_or_nothing():
    empty = pa.table({"a": pa.array([], pa.int64())})
    container = write("AvroRecordSetWriter", empty)
    assert container.startswith(MAGIC) and list(fastavro.reader(io.BytesIO(container))) == []
    assert service("AvroReader").infer_schema(opener(container)) == pa.schema([("a", pa.int64())])
    assert read("AvroReader", container).num_rows == 0
    assert write("AvroRecordSetWriter", empty, schema_write_strategy="no-schema") == b""
    assert read("AvroReader", b"").num_rows == 0
    assert service("AvroReader").infer_schema(opener(b"")) == pa.schema([])


# -- files written by Apache Avro (Java) ----------------------------------------------


def from_avro_json(value, avro):
    """A value of Avro's JSON encoding (people.json), as the reader gives it."""
    if isinstance(avro, list):  # every union in people.avsc is null and one type
        if value is None:
            return None
        ((_, inner),) = value.items()
        return from_avro_json(inner, next(member for member in avro if member != "null"))
    if avro == "bytes":
        return value.encode("latin-1")
    if isinstance(avro, str):
        return value
    logical, kind = avro.get("logicalType"), avro["type"]
    if logical == "decimal":
        unscaled = int.from_bytes(value.encode("latin-1"), "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-avro["scale"])
    if logical == "timestamp-millis":
        return datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(milliseconds=value)
    if logical == "date":
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
    if kind == "record":
        return {field["name"]: from_avro_json(value[field["name"]], field["type"]) for field in avro["fields"]}
    if kind == "array":
        return [from_avro_json(item, avro["items"]) for item in value]
    if kind == "map":
        return {key: from_avro_json(item, avro["values"]) for key, item in value.items()}
    return value  # an enum's symbol


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"])
def test_files_written_by_apache_avro_java_read_as_the_json_they_were_made_from(codec):
    schema = json.loads((SAMPLES / "people.avsc").read_text())
    lines = (SAMPLES / "people.json").read_text(encoding="utf-8").split("\n")[:-1]
    expected = [from_avro_json(json.loads(line), schema) for line in lines]
    data = (SAMPLES / f"people-{codec}.avro").read_bytes()
    assert fastavro.reader(io.BytesIO(data)).codec == codec
    assert rows_of(data) == expected
    assert len(expected) == 30 and expected[28]["signed_up"].year == 1 and expected[29]["id"] == 2**62
    kind = service("AvroReader").infer_schema(opener(data)).field("kind")
    assert kind.type == pa.string() and not kind.nullable


# -- schemaless content, and a given schema -------------------------------------------

PERSON = {
    "type": "record",
    "name": "Person",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["string", "null"]},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    ],
}


def schemaless(schema_document, rows) -> bytes:
    out = io.BytesIO()
    for row in rows:
        fastavro.schemaless_writer(out, fastavro.parse_schema(schema_document), row)
    return out.getvalue()


def test_schemaless_records_are_read_with_the_given_schema():
    moment = datetime.datetime(2026, 5, 6, 7, 8, 9, 10, tzinfo=UTC)
    rows = [
        {"id": index, "name": None if index % 3 else WORDS[index % 8], "kind": "AB"[index % 2], "at": moment}
        for index in range(50)
    ]
    reader, schema = given_reader(PERSON)
    assert read_with(reader, schemaless(PERSON, rows), schema) == rows
    assert read_with(reader, b"", schema) == []
    with pytest.raises(RecordError, match="not an Avro object container file"):
        read("AvroReader", schemaless(PERSON, rows))  # inferring: a container or nothing


def test_schemaless_records_written_by_the_writer_read_back_with_its_schema():
    table = pa.Table.from_pylist(nested_rows(120), schema=NESTED)
    data = write("AvroRecordSetWriter", table, schema_write_strategy="no-schema", compression_format="deflate")
    assert not data.startswith(MAGIC)
    reader = service("AvroReader", schema_access_strategy=GIVEN)
    assert read_with(reader, data, NESTED) == table.to_pylist()  # a plain Arrow schema: the writer's Avro for it


def test_schemaless_records_longer_than_a_read_are_read_whole(monkeypatch):
    monkeypatch.setattr(avro_format, "_READ_SIZE", 7)
    monkeypatch.setattr(avro_format, "RECORDS_PER_BATCH", 4)
    rows = [{"id": index, "name": "x" * (index * 13), "kind": "A", "at": 0} for index in range(10)]
    reader, schema = given_reader(PERSON)
    batches = list(reader.batches(opener(schemaless(PERSON, rows)), schema))
    assert [batch.num_rows for batch in batches] == [4, 4, 2]
    assert [row["name"] for row in pa.Table.from_batches(batches).to_pylist()] == [row["name"] for row in rows]


def test_a_container_is_resolved_to_the_given_schema_by_field_name():
    written = {
        "type": "record",
        "name": "v1",
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "dropped", "type": "string"},
            {"name": "score", "type": "float"},
            {
                "name": "where",
                "type": {
                    "type": "record",
                    "name": "W",
                    "fields": [{"name": "city", "type": "string"}, {"name": "old", "type": "int"}],
                },
            },
        ],
    }
    rows = [{"id": index, "dropped": "x", "score": 0.5, "where": {"city": "Oslo", "old": 1}} for index in range(3)]
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(written), rows, codec="deflate")
    wanted = {
        "type": "record",
        "name": "v2",
        "fields": [
            {"name": "added", "type": ["null", "string"], "default": None},
            {"name": "id", "type": "long"},
            {"name": "score", "type": "double"},
            {"name": "level", "type": "int", "default": 7},
            {"name": "label", "type": ["string", "null"], "default": "none"},
            {
                "name": "where",
                "type": {
                    "type": "record",
                    "name": "W2",
                    "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"]}],
                },
            },
        ],
    }
    reader, schema = given_reader(wanted)
    batches = list(reader.batches(opener(out.getvalue()), schema))
    assert batches[0].schema.metadata is None and batches[0].schema == schema
    assert pa.Table.from_batches(batches).to_pylist() == [
        {"added": None, "id": index, "score": 0.5, "level": 7, "label": "none", "where": {"city": "Oslo", "zip": None}}
        for index in range(3)
    ]
    required = {**wanted, "fields": [{"name": "id", "type": "long"}, {"name": "must", "type": "string"}]}
    reader, schema = given_reader(required)
    with pytest.raises(RecordError, match="'must' of the given schema is not in the file's"):
        read_with(reader, out.getvalue(), schema)
    clash = {**wanted, "fields": [{"name": "dropped", "type": "int"}]}
    reader, schema = given_reader(clash)
    with pytest.raises(RecordError, match="field 'dropped' does not fit the given schema"):
        read_with(reader, out.getvalue(), schema)


# -- damaged and foreign content ------------------------------------------------------


def small_container(compression="none", count=6) -> tuple[bytes, list[dict]]:
    """`count` records in blocks of two, and the records."""
    rows = flat_rows(count)
    table = pa.Table.from_pylist(rows, schema=FLAT)
    sink = io.BytesIO()
    copy_records(
        table.to_batches(max_chunksize=2), service("AvroRecordSetWriter", compression_format=compression), sink, FLAT
    )
    return sink.getvalue(), rows


def test_content_that_is_not_avro_is_refused():
    for data in [b"hello", b"Obj", b'{"a": 1}\n', b"PAR1" + b"\x00" * 40]:
        with pytest.raises(RecordError, match="^not an Avro object container file"):
            read("AvroReader", data)


def test_content_cut_at_every_offset_is_refused_or_reads_the_whole_blocks_before_the_cut():
    data, rows = small_container()
    block_ends = {}
    for index, block in enumerate(fastavro.block_reader(io.BytesIO(data))):
        block_ends[block.offset] = 2 * index  # a cut where block `index` starts keeps the blocks before it
    block_ends[len(data)] = len(rows)
    for cut in range(1, len(data)):
        try:
            got = rows_of(data[:cut])
        except RecordError as error:
            expected = "does not start with Obj" if cut < len(MAGIC) else "cut short"
            assert expected in error.message, (cut, error)
            continue
        assert cut in block_ends and got == rows[: block_ends[cut]], cut


@pytest.mark.parametrize("compression", ["none", "deflate", "snappy", "zstandard"])
def test_every_flipped_byte_is_a_record_error_or_records(compression):
    data, _ = small_container(compression)
    for offset in range(len(data)):
        damaged = bytearray(data)
        damaged[offset] ^= 0x5A
        try:
            rows_of(bytes(damaged))
        except RecordError:
            pass


def test_a_wrong_sync_marker_is_named():
    data, _ = small_container()
    damaged = data[:-1] + bytes([data[-1] ^ 1])
    with pytest.raises(RecordError, match="block 2 is not followed by the file's sync marker") as raised:
        rows_of(damaged)
    assert raised.value.record == 4


def container(schema_document, codec: str, blocks: list[tuple[int, bytes]]) -> bytes:
    """A container of `blocks` (record count, stored data) written by hand."""
    sync = bytes(range(16))
    out = encode_header(json.dumps(schema_document), codec, sync)
    for count, data in blocks:
        out += encode_long(count) + encode_long(len(data)) + data + sync
    return out


ONE_INT = {"type": "record", "name": "r", "fields": [{"name": "n", "type": "long"}]}


def test_an_unknown_codec_is_named():
    with pytest.raises(RecordError, match="codec 'lzo' is not one this reader knows"):
        rows_of(container(ONE_INT, "lzo", [(1, b"\x02")]))


@pytest.mark.parametrize("codec", ["deflate", "snappy", "zstandard", "bzip2", "xz"])
def test_a_corrupt_compressed_block_is_named(codec):
    stored = CODECS[codec].compress(b"\x02\x04\x06" * 20)
    damaged = stored[: len(stored) // 2] + bytes(byte ^ 0xFF for byte in stored[len(stored) // 2 :])
    good = container(ONE_INT, codec, [(60, stored)])
    assert [row["n"] for row in rows_of(good)] == [1, 2, 3] * 20
    with pytest.raises(RecordError, match=f"block 1 cannot be decompressed with its codec {codec}") as raised:
        rows_of(container(ONE_INT, codec, [(60, stored), (60, damaged)]))
    assert raised.value.record == 60


def test_a_block_that_counts_more_or_fewer_records_than_it_holds_is_named():
    with pytest.raises(RecordError, match="block 0 ends after 3 of the 4 records") as raised:
        rows_of(container(ONE_INT, "null", [(4, b"\x02\x04\x06")]))
    assert raised.value.record == 3
    with pytest.raises(RecordError, match="block 1 holds 1 bytes past its 2 records"):
        rows_of(container(ONE_INT, "null", [(1, b"\x02"), (2, b"\x02\x04\x06")]))
    with pytest.raises(RecordError) as raised:
        rows_of(container(ONE_INT, "null", [(-1, b"")]))
    assert raised.value.message == "block 0 counts -1 records in 0 bytes: the file is damaged"


def test_a_union_of_several_types_is_refused_by_field():
    schema = {"type": "record", "name": "r", "fields": [{"name": "either", "type": ["null", "int", "string"]}]}
    data = container(schema, "null", [(1, b"\x02\x02")])
    with pytest.raises(RecordError, match="field 'either' is a union of 2 types besides null"):
        rows_of(data)
    with pytest.raises(RecordError, match="field 'either' is a union"):
        service("AvroReader").infer_schema(opener(data))


def test_a_damaged_header_is_named():
    data, _ = small_container()
    with pytest.raises(RecordError, match="header is cut short"):
        rows_of(data[:20])
    with pytest.raises(RecordError, match="^the Avro container's header is damaged: a long runs past 10 bytes"):
        rows_of(MAGIC + b"\xff" * 11)
    with pytest.raises(RecordError, match="holds no avro.schema"):
        rows_of(MAGIC + encode_long(0) + bytes(16))
    with pytest.raises(RecordError, match="the schema is not valid JSON"):
        rows_of(MAGIC + encode_long(1) + encode_long(11) + b"avro.schema" + encode_long(1) + b"{" + bytes(17))


def test_a_damaged_schemaless_record_is_named_by_its_index():
    rows = [{"id": index, "name": "name", "kind": "A", "at": 0} for index in range(5)]
    data = schemaless(PERSON, rows)
    reader, schema = given_reader(PERSON)
    with pytest.raises(RecordError, match="ends inside this record") as raised:
        read_with(reader, data[:-1], schema)
    assert raised.value.record == 4
    branch = 2 * len(data) // 5 + 1  # record 2's name: a union whose branch is here
    damaged = data[:branch] + encode_long(5) + data[branch + 1 :]
    with pytest.raises(RecordError, match="cannot be decoded") as raised:
        read_with(reader, damaged, schema)
    assert raised.value.record == 2


def test_what_the_content_stream_raises_is_not_taken_for_a_record_error():
    data, _ = small_container()

    class Unreadable(Exception):
        pass

    class Breaking(io.BytesIO):
        def read(self, size=-1):
            if self.tell() > 40:
                raise Unreadable
            return super().read(min(size, 8))

    with pytest.raises(Unreadable):
        list(service("AvroReader").batches(lambda: contextlib.closing(Breaking(data)), None))


# -- ConvertRecord --------------------------------------------------------------------


def test_convert_record_json_to_avro_to_json():
    rows = nested_rows(40)
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()
    avro = convert(
        "JsonTreeReader", "AvroRecordSetWriter", [({}, lines)], writer_properties={"compression_format": "zstandard"}
    )
    ((attributes, data),) = avro["success"]
    assert attributes["mime.type"] == "application/avro-binary" and attributes["record.count"] == "40"
    back = convert("AvroReader", "JsonRecordSetWriter", [({}, data)])
    ((attributes, text),) = back["success"]
    assert json.loads(text) == rows and attributes["record.count"] == "40"


def test_convert_record_csv_to_avro():
    csv = 'id,name,price\n1,Zoë,2.5\n2,,3\n3,"a, b",\n'.encode()
    ((attributes, data),) = convert("CSVReader", "AvroRecordSetWriter", [({}, csv)])["success"]
    assert attributes["record.count"] == "3"
    assert list(fastavro.reader(io.BytesIO(data))) == [
        {"id": 1, "name": "Zoë", "price": 2.5},
        {"id": 2, "name": "", "price": 3.0},
        {"id": 3, "name": "a, b", "price": None},
    ]


def test_convert_record_sends_damaged_avro_to_failure_with_the_record_named():
    data, _ = small_container()
    damaged = data[:-1] + bytes([data[-1] ^ 1])
    out = convert("AvroReader", "JsonRecordSetWriter", [({}, damaged)])
    ((attributes, _),) = out["failure"]
    assert "sync marker" in attributes["record.error.message"] and attributes["record.error.index"] == "4"


def test_convert_record_reads_schemaless_avro_with_the_schema_in_its_attribute():
    rows = [{"id": index, "name": "Zoë" if index % 2 else None, "kind": "B", "at": index} for index in range(5)]
    attributes = {"avro.schema": json.dumps(PERSON)}
    out = convert(
        "AvroReader", "JsonRecordSetWriter", [(attributes, schemaless(PERSON, rows))], {"schema_access_strategy": GIVEN}
    )
    ((attributes, text),) = out["success"]
    assert attributes["record.count"] == "5"
    assert json.loads(text) == [
        {
            **row,
            "at": (datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=row["at"])).isoformat() + "+00:00",
        }
        for row in rows
    ]
