"""The column encoder of AvroRecordSetWriter (flow.records.avro_columns): for random
batches of every type it encodes, with nulls, empty and non-ASCII text, the extremes of
each integer, NaN and infinities, sliced or not, its bytes are exactly fastavro's
encoding of the same rows, and fastavro reads the writer's container back to those
rows; schemas it leaves alone, and values that do not fit, go the fastavro path."""

from __future__ import annotations

import io
import json
import math

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flow.records import avro_format
from flow.records.avro_columns import encoder_for
from flow.records.errors import RecordError

from .test_formats import service, write

INT_RANGES = {
    pa.int8(): (-(1 << 7), (1 << 7) - 1),
    pa.int16(): (-(1 << 15), (1 << 15) - 1),
    pa.int32(): (-(1 << 31), (1 << 31) - 1),
    pa.int64(): (-(1 << 63), (1 << 63) - 1),
    pa.uint8(): (0, (1 << 8) - 1),
    pa.uint16(): (0, (1 << 16) - 1),
    pa.uint32(): (0, (1 << 32) - 1),
    pa.uint64(): (0, (1 << 63) - 1),
}
TEXT = st.text(alphabet=st.sampled_from("aZ0 é東京\U0001f600\x00\n"), max_size=12) | st.sampled_from(["", "x" * 200])


def _integers(low: int, high: int):
    # The extremes and the varint byte boundaries, as well as anything between.
    edges = [low, high, 0, -1, 1, 63, 64, -64, -65, 8191, 8192, -(1 << 62), (1 << 62) - 1]
    return st.sampled_from([edge for edge in edges if low <= edge <= high]) | st.integers(low, high)


# (Arrow type, strategy of its Python values)
PRIMITIVES = [
    *((kind, _integers(*bounds)) for kind, bounds in INT_RANGES.items()),
    (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
    (pa.float32(), st.floats(width=32, allow_nan=True, allow_infinity=True)),
    (pa.bool_(), st.booleans()),
    (pa.string(), TEXT),
    (pa.large_string(), TEXT),
    (pa.binary(), st.binary(max_size=20)),
    (pa.large_binary(), st.binary(max_size=20)),
    (pa.binary(3), st.binary(min_size=3, max_size=3)),
    (pa.date32(), st.integers(-(1 << 31), (1 << 31) - 1)),
    (pa.timestamp("us", "UTC"), _integers(-(1 << 63), (1 << 63) - 1)),
    (pa.timestamp("ms"), _integers(-(1 << 63), (1 << 63) - 1)),
    (pa.time32("ms"), st.integers(0, 86_399_999)),
    (pa.time64("us"), st.integers(0, 86_399_999_999)),
]


@st.composite
def columns(draw, depth=0):
    """(field, strategy of its values)."""
    if depth == 0 and draw(st.integers(0, 5)) == 0:
        children = draw(st.lists(columns(depth=1), min_size=1, max_size=3))
        fields = [field.with_name(f"c{index}") for index, (field, _) in enumerate(children)]
        kind = pa.struct(fields)
        strategies = [strategy for _, strategy in children]
        values = st.fixed_dictionaries({field.name: each for field, each in zip(fields, strategies, strict=True)})
    elif depth == 0 and draw(st.integers(0, 12)) == 0:  # (Arrow cannot cast a struct of a null child)
        return pa.field("f", pa.null()), st.none()
    else:
        kind, values = draw(st.sampled_from(PRIMITIVES))
    nullable = draw(st.booleans())
    return pa.field("f", kind, nullable=nullable), (values | st.none()) if nullable else values


@st.composite
def batches(draw) -> pa.RecordBatch:
    drawn = draw(st.lists(columns(), min_size=1, max_size=5))
    fields = [field.with_name(f"field{index}") for index, (field, _) in enumerate(drawn)]
    rows = draw(st.integers(0, 25))
    strategies = [strategy for _, strategy in drawn]
    arrays = [
        pa.array([draw(each) for _ in range(rows)], type=field.type)
        for field, each in zip(fields, strategies, strict=True)
    ]
    batch = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
    start = draw(st.integers(0, rows))
    return batch.slice(start, draw(st.integers(0, rows - start))) if draw(st.booleans()) else batch


def _set_writer(schema: pa.Schema, **properties):
    return service("AvroRecordSetWriter", **properties).open(io.BytesIO(), schema)


def _fastavro_rows(writer, stored: pa.RecordBatch) -> bytes:
    encoded = []
    for row in stored.to_pylist():
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, writer.encoder, row)
        encoded.append(buffer.getvalue())
    return b"".join(encoded)


def _as_stored(container: bytes) -> bytes:
    """The container with its header's schema stripped of logical types, so that fastavro
    reads dates, times and timestamps as the integers stored (Python's datetime holds
    neither nanoseconds nor every year)."""
    header = avro_format.read_header(avro_format.ContentBytes(io.BytesIO(container)))
    size = len(avro_format.encode_header(header.schema_json, header.codec.name, header.sync))
    plain = json.dumps(avro_format._as_stored(json.loads(header.schema_json)))
    return avro_format.encode_header(plain, header.codec.name, header.sync) + container[size:]


def _same(left, right) -> bool:
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    return left == right


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches())
def test_column_encoding_is_fastavros_byte_for_byte_and_reads_back(batch):
    writer = _set_writer(batch.schema)
    assert writer.columns is not None
    stored = batch.cast(writer.avro_types).cast(writer.stored_types)
    assert writer.columns.encode(stored) == _fastavro_rows(writer, stored)

    container = write("AvroRecordSetWriter", pa.Table.from_batches([batch]))
    back = list(fastavro.reader(io.BytesIO(_as_stored(container))))
    expected = stored.to_pylist()
    assert len(back) == len(expected)
    assert all(_same(got, want) for got, want in zip(back, expected, strict=True)), (back, expected)


def test_the_benchmarks_record_shape_is_encoded_from_columns():
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("score", pa.float64()),
            ("ok", pa.bool_()),
            ("city", pa.string()),
            ("place", pa.struct([("x", pa.int64()), ("y", pa.int64())])),
            ("note", pa.string()),
        ]
    )
    assert encoder_for(schema) is not None


@pytest.mark.parametrize(
    "kind",
    [
        pa.list_(pa.int64()),
        pa.map_(pa.string(), pa.int64()),
        pa.decimal128(10, 2),
        pa.struct([("inner", pa.list_(pa.string()))]),
    ],
)
def test_lists_maps_and_decimals_go_the_fastavro_path_and_come_out_the_same(kind):
    schema = pa.schema([("id", pa.int64()), ("value", kind)])
    assert encoder_for(schema) is None
    table = pa.table({"id": [1, None], "value": pa.array([None, None], kind)}, schema=schema)
    records = list(fastavro.reader(io.BytesIO(write("AvroRecordSetWriter", table))))
    assert records == [{"id": 1, "value": None}, {"id": None, "value": None}]


def test_a_uint64_past_a_long_is_named_by_the_fastavro_path():
    table = pa.table({"n": pa.array([1, 2, (1 << 64) - 1], pa.uint64())})
    with pytest.raises(RecordError) as raised:
        write("AvroRecordSetWriter", table)
    assert raised.value.record == 2


def test_a_null_in_a_field_that_cannot_be_null_is_given_back_and_refused_by_the_writer():
    schema = pa.schema([pa.field("n", pa.int64(), nullable=False)])
    batch = pa.RecordBatch.from_arrays([pa.array([1, None, 3], pa.int64())], schema=schema)
    writer = _set_writer(schema)
    assert writer.columns is not None and writer.columns.encode(batch) is None
    with pytest.raises(RecordError, match="'n' with null values"):
        writer.write(batch)


def test_schemaless_records_are_the_column_encoding_alone():
    table = pa.table({"id": [1, -2, None], "name": ["a", None, "東京"]})
    data = write("AvroRecordSetWriter", table, schema_write_strategy="no-schema")
    writer = _set_writer(table.schema)
    stored = table.to_batches()[0]
    assert data == _fastavro_rows(writer, stored)
    assert json.loads(json.dumps(avro_format.avro_schema(table.schema)))["fields"][0]["type"] == ["null", "long"]


def _written(batch: pa.RecordBatch, columns: bool) -> bytes:
    sink = io.BytesIO()
    writer = service("AvroRecordSetWriter").open(sink, batch.schema)
    if not columns:
        writer.columns = None
    writer.write(batch)
    return sink.getvalue().replace(writer.sync, b"S" * avro_format.SYNC_SIZE)


def test_types_converted_before_encoding_are_written_as_the_fastavro_path_writes_them():
    batch = pa.record_batch(
        {
            "city": pa.array(["Oslo", None, "東京", "Oslo"]).dictionary_encode(),
            "seconds": pa.array([0, -1, None, 1 << 40], pa.timestamp("s", "UTC")),
            "day": pa.array([0, None, -86_400_000, 86_400_000 * 3], pa.date64()),
            "half": pa.array([0.5, None, -2.0, 65504.0], pa.float16()),
            "nanos": pa.array([0, 1_000, None, 86_399_999_999_000], pa.time64("ns")),
            "clock": pa.array([0, 1, None, 86_399], pa.time32("s")),
        }
    )
    many = pa.RecordBatch.from_arrays(
        [pa.concat_arrays([column] * 3000) for column in batch.columns], schema=batch.schema
    )
    for sample in (batch, many):  # `many`: 12,000 records, two blocks
        assert _written(sample, columns=True) == _written(sample, columns=False)
