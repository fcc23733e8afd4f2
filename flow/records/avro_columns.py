"""Avro's binary encoding of a batch's records, computed from Arrow's columns.

`AvroRecordSetWriter` hands each block of records here first: every column is encoded
whole with numpy, and the records' bytes are then laid out by index arithmetic, with
no Python loop per record or per value. The bytes are exactly those Avro's binary
encoding (the Avro 1.11 specification) gives each record, field after field, as
`fastavro.schemaless_writer` writes them.

What each Arrow type (as the writer stores it: dates, times and timestamps already the
integers of `avro_schema`'s logical types) becomes, byte by byte:

- null -> null: no bytes.
- bool -> boolean: one byte, 0 or 1.
- int8, int16, int32, date32, time32[ms] -> int; int64, uint8, uint16, uint32,
  timestamp, time64[us] -> long (uint64 too, for values up to 2^63 - 1): zigzag,
  (n << 1) ^ (n >> 63), then 7 bits a byte, low bits first, the high bit set on
  every byte but the last: 1 to 10 bytes (an int is written as a long is).
- float32, float64 -> float, double: the IEEE 754 value as stored, 4 or 8 bytes
  little-endian (NaN and infinities too).
- string, large_string, binary, large_binary -> string, bytes: the length as a long,
  then the bytes (Arrow's offsets give the lengths, its data buffer the bytes, UTF-8
  already for strings).
- fixed_size_binary(w) -> fixed: the w bytes.
- struct -> record: its fields' encodings one after another.
- a nullable field of any of these -> the union ["null", T]: the branch index as a
  long (one byte: 0x00 for null, 0x02 for T, index 1 zigzagged), then, for T, T's
  encoding.

Each column becomes one or two *pieces* per record: a short piece of at most a few
bytes built as a matrix of a row per record (a union's branch byte and a long's
varint bytes; a double's 8 bytes; a string's branch and length), and, for strings and
bytes, the data itself, taken from Arrow's data buffer as it lies. A record's bytes
are its pieces one after another, so the block is the pieces interleaved: the length
of each (record, piece) is known, their cumulative sum in record order gives each
piece's place in the output, and each piece column is scattered there in one numpy
assignment (a long's byte count per value comes from comparisons with 2^7, 2^14, ...,
its 7-bit groups from masks and shifts).

Not encoded here, so written by the writer's fastavro path as before (`encoder_for`
returns None for the schema, and the writer falls back for every batch): lists, maps,
decimals, string views, and any type this table does not name, anywhere in the
schema. A batch whose values do not fit their Avro type (a null in a field that is
not nullable, a uint64 past 2^63 - 1) is given back (`encode` returns None) and goes
the fastavro path too, which names the record that fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

_BRANCH_NULL, _BRANCH_VALUE = 0x00, 0x02  # union indexes 0 and 1, zigzag-encoded
_LONG_MAX = (1 << 63) - 1
# A value needs k + 1 varint bytes when it is at least 2^(7k): these are the bounds.
_VARINT_BOUNDS = [np.uint64(1 << (7 * k)) for k in range(1, 10)]


@dataclass(frozen=True)
class _Piece:
    """The bytes one column gives each record: `lengths[i]` bytes for record i, either
    the first `lengths[i]` bytes of row i of `matrix`, or `data[starts[i]:][:lengths[i]]`
    (`starts` None when the records' bytes lie one after another from `data[0]`)."""

    lengths: np.ndarray
    matrix: np.ndarray | None = None
    data: np.ndarray | None = None
    starts: np.ndarray | None = None


class _Unfit(Exception):
    """The batch's values do not fit their Avro types: the fastavro path names why."""


# -- which schemas ----------------------------------------------------------------------


def _supported(kind: pa.DataType) -> bool:
    if pa.types.is_struct(kind):
        return all(_supported(kind.field(i).type) for i in range(kind.num_fields))
    return (
        pa.types.is_null(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_float32(kind)
        or pa.types.is_float64(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
    )


def encoder_for(schema: pa.Schema) -> ColumnEncoder | None:
    """An encoder for batches of `schema` (stored types: dates, times and timestamps as
    integers), or None when some field is of a type left to fastavro."""
    if all(_supported(field.type) for field in schema):
        return ColumnEncoder(schema)
    return None


class ColumnEncoder:
    """Encodes batches of one schema, each to its records' Avro bytes one after another."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema

    def encode(self, batch: pa.RecordBatch) -> bytes | None:
        """The records of `batch` binary-encoded one after another, or None when a value
        does not fit its Avro type (left to the fastavro path to name)."""
        rows = batch.num_rows
        if rows == 0:
            return b""
        pieces: list[_Piece] = []
        try:
            for field, column in zip(self.schema, batch.columns, strict=True):
                _field_pieces(field, column, None, pieces)
        except _Unfit:
            return None
        if not pieces:
            return b""
        return _interleave(pieces, rows)


# -- columns to pieces ------------------------------------------------------------------


def _validity(column: pa.Array) -> np.ndarray | None:
    """Which values are not null; None when none is."""
    if column.null_count == 0:
        return None
    return column.is_valid().to_numpy(zero_copy_only=False)


def _values(column: pa.Array, dtype) -> np.ndarray:
    """The values buffer of a fixed-width column as numpy, its slice offset applied."""
    buffer = column.buffers()[1]
    start, rows = column.offset, len(column)
    if buffer is None:
        return np.zeros(rows, dtype=dtype)
    return np.frombuffer(buffer, dtype=dtype, count=start + rows)[start:]


def _field_pieces(field: pa.Field, column: pa.Array, present: np.ndarray | None, out: list[_Piece]) -> None:
    """Appends the pieces of `column`'s values to `out`. `present` says which records
    hold the column at all (False under a null struct: no bytes), None for all."""
    kind = field.type
    if pa.types.is_null(kind):
        return  # Avro's null is written as nothing, and the field is no union
    valid = _validity(column)
    if valid is not None and not field.nullable:
        if present is None or bool(np.any(present & ~valid)):
            raise _Unfit
    # `shown`: records whose value is written (not null, and present).
    shown = valid if present is None else (present if valid is None else present & valid)
    head: list[tuple[np.ndarray, np.ndarray]] = []  # (matrix, lengths) parts of the short piece
    if field.nullable:
        branch = np.full(len(column), _BRANCH_VALUE, dtype=np.uint8)
        if valid is not None:
            branch[~valid] = _BRANCH_NULL
        head.append((branch[:, None], np.ones(len(column), dtype=np.int64)))
    if pa.types.is_struct(kind):
        _flush(head, present, out)
        for index in range(kind.num_fields):
            _field_pieces(kind.field(index), column.field(index), shown, out)
        return
    if pa.types.is_boolean(kind):
        values = column.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        head.append((values[:, None], _shown_lengths(1, shown, len(column))))
    elif pa.types.is_integer(kind):
        head.append(_varints(_integers(column, kind), shown))
    elif pa.types.is_floating(kind):
        dtype = np.dtype("<f4") if pa.types.is_float32(kind) else np.dtype("<f8")
        values = _values(column, column.type.to_pandas_dtype()).astype(dtype, copy=False)
        head.append(
            (values.view(np.uint8).reshape(-1, dtype.itemsize), _shown_lengths(dtype.itemsize, shown, len(column)))
        )
    elif pa.types.is_fixed_size_binary(kind):
        width = kind.byte_width
        data = np.frombuffer(column.buffers()[1], dtype=np.uint8, count=(column.offset + len(column)) * width)
        head.append((data[column.offset * width :].reshape(-1, width), _shown_lengths(width, shown, len(column))))
    else:  # string, large_string, binary, large_binary
        large = pa.types.is_large_string(kind) or pa.types.is_large_binary(kind)
        offsets = _offsets(column, np.int64 if large else np.int32)
        sizes = np.diff(offsets)
        if shown is not None:
            sizes = np.where(shown, sizes, 0)
        head.append(_varints(sizes, shown))
        _flush(head, present, out)
        buffer = column.buffers()[2]
        data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, dtype=np.uint8)
        first = int(offsets[0])
        if int(sizes.sum()) == int(offsets[-1]) - first:
            out.append(_Piece(sizes, data=data[first:]))
        else:  # null or absent values that hold bytes in Arrow's buffer: skipped
            out.append(_Piece(sizes, data=data, starts=offsets[:-1]))
        return
    _flush(head, present, out)


def _shown_lengths(width: int, shown: np.ndarray | None, rows: int) -> np.ndarray:
    if shown is None:
        return np.full(rows, width, dtype=np.int64)
    return shown.astype(np.int64) * width


def _offsets(column: pa.Array, dtype) -> np.ndarray:
    buffer = column.buffers()[1]
    if buffer is None:
        return np.zeros(len(column) + 1, dtype=np.int64)
    offsets = np.frombuffer(buffer, dtype=dtype, count=column.offset + len(column) + 1)[column.offset :]
    return offsets.astype(np.int64)


def _integers(column: pa.Array, kind: pa.DataType) -> np.ndarray:
    """The column's values as int64 (null slots hold whatever Arrow left there)."""
    values = _values(column, kind.to_pandas_dtype())
    if kind == pa.uint64():
        if column.null_count:
            values = np.where(column.is_valid().to_numpy(zero_copy_only=False), values, 0)
        if len(values) and int(values.max()) > _LONG_MAX:
            raise _Unfit
    return values.astype(np.int64, copy=False)


def _varints(values: np.ndarray, shown: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Each value as Avro writes a long: a matrix of a row per value (its bytes, first
    to last, then padding) and each row's byte count (0 where not `shown`)."""
    signed = values.astype(np.int64, copy=False)
    folded = (signed.view(np.uint64) << np.uint64(1)) ^ (signed >> np.int64(63)).view(np.uint64)
    counts = np.ones(len(folded), dtype=np.int64)
    for bound in _VARINT_BOUNDS:
        above = folded >= bound
        if not above.any():
            break
        counts += above
    width = int(counts.max()) if len(counts) else 1
    matrix = np.empty((len(folded), width), dtype=np.uint8)
    for k in range(width):
        group = (folded >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (counts > k + 1).astype(np.uint64) << np.uint64(7)
        matrix[:, k] = group | more
    if shown is not None:
        counts = np.where(shown, counts, 0)
    return matrix, counts


def _flush(head: list[tuple[np.ndarray, np.ndarray]], present: np.ndarray | None, out: list[_Piece]) -> None:
    """The short parts gathered in `head` as one piece (a matrix of their columns side
    by side, each row's used bytes moved to its front), none for records not present."""
    if not head:
        return
    if len(head) == 1:
        matrix, lengths = head[0]
    else:
        matrix = np.concatenate([part for part, _ in head], axis=1)
        lengths = head[0][1].copy()
        # Each part's bytes start where the previous part's used bytes end: move them.
        column = head[0][0].shape[1]
        for part, used in head[1:]:
            if not np.all(lengths == column):
                width = part.shape[1]
                rows = np.arange(len(lengths))[:, None]
                target = lengths[:, None] + np.arange(width)
                matrix[rows, target] = part
            lengths = lengths + used
            column += part.shape[1]
    if present is not None:
        lengths = np.where(present, lengths, 0)
    out.append(_Piece(lengths, matrix=matrix))
    head.clear()


# -- pieces to records ------------------------------------------------------------------


def _interleave(pieces: list[_Piece], rows: int) -> bytes:
    """The records' bytes: for each record, its pieces in order. Every (record, piece)
    length is known, so each piece's place is a cumulative sum, and each piece column
    is scattered to its places at once."""
    lengths = np.stack([piece.lengths for piece in pieces], axis=1)
    ends = np.cumsum(lengths.ravel())
    total = int(ends[-1])
    places = (ends - lengths.ravel()).reshape(rows, len(pieces))
    record_ends = ends.reshape(rows, len(pieces))[:, -1]
    out = np.empty(total, dtype=np.uint8)
    # Pieces are written in order, so a matrix row may be written whole, its unused
    # bytes spilling over the record's later pieces, which are written after it and
    # overwrite them: unless the spill would pass the record's end.
    for index, piece in enumerate(pieces):
        place, size = places[:, index], piece.lengths
        if piece.matrix is not None:
            width = piece.matrix.shape[1]
            spots = place[:, None] + np.arange(width)
            if bool(np.all(place + width <= record_ends)):
                out[spots.ravel()] = piece.matrix.ravel()
            else:
                used = np.arange(width) < size[:, None]
                out[spots[used]] = piece.matrix[used]
            continue
        assert piece.data is not None
        count = int(size.sum())
        if count == 0:
            continue
        firsts = np.cumsum(size) - size  # where each record's bytes start among this piece's
        within = np.arange(count, dtype=np.int64)
        if piece.starts is None:
            out[np.repeat(place - firsts, size) + within] = piece.data[:count]
        else:
            within -= np.repeat(firsts, size)
            out[np.repeat(place, size) + within] = piece.data[np.repeat(piece.starts, size) + within]
    return out.tobytes()
