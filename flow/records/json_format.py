"""JSON records: `JsonTreeReader` and `JsonRecordSetWriter`, named as NiFi's are.

The reader takes what NiFi's JsonTreeReader takes: one object per line (JSON Lines),
an array of objects, or objects one after another however they are laid out
(pretty-printed). JSON Lines, the common case, is parsed by Arrow's JSON reader a
block (`BLOCK_SIZE`) at a time, cut at a line's end; anything else is decoded one
value at a time by Python's decoder and handed to the same parser as lines, so that
both ways infer the same schema. A top-level value that is not an object is refused.

A record that cannot be read is named by its index (0-based, among the records) and
its line (1-based) in `RecordError`; the parser's own message is kept.

The writer writes an array of objects (NiFi's default) or one object per line (a
newline between two, none after the last, as NiFi writes them), each
record's fields in the schema's order; nulls are written or left out
(`suppress_null_values`); timestamps, dates and times as ISO-8601 text, decimals as
text (exactly), binary as an array of byte values (as NiFi writes a byte array).
"""

from __future__ import annotations

import codecs
import datetime
import decimal
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import pyarrow as pa
import pyarrow.json as pa_json

from ..json_path import json_kind
from ..processor import PropertyDescriptor
from .errors import RecordError, SchemaChanged
from .readers import (
    BLOCK_SIZE,
    JSON_TEXT,
    MAX_RECORD_SIZE_DEFAULT,
    SCHEMA_PROPERTIES,
    Opener,
    RecordReader,
    marked,
    unify,
    untyped,
)
from .writers import RecordSetWriter, RecordWriter

_ROW = re.compile(r"\s*in row (\d+)\s*$")
_READ_SIZE = 1 << 20


@dataclass
class _Block:
    """JSON Lines to parse at once: `data`, whose first record is `first_record` and
    starts on line `first_line`; `lines` is each record's line when known apart."""

    data: bytes
    first_record: int
    first_line: int
    lines: list[int] | None = None

    def line_of(self, row: int) -> int:
        if self.lines is not None:
            return self.lines[row] if row < len(self.lines) else self.lines[-1]
        seen = -1
        for number, text in enumerate(self.data.split(b"\n")):
            if text.strip():
                seen += 1
                if seen == row:
                    return self.first_line + number
        return self.first_line


class JsonTreeReader(RecordReader):
    type_name = "JsonTreeReader"
    description = (
        "Reads JSON records: one object per line (JSON Lines), an array of objects, or objects one after "
        "another (pretty-printed too)."
    )
    properties = SCHEMA_PROPERTIES + (
        PropertyDescriptor(
            "max_record_size",
            "size",
            default=MAX_RECORD_SIZE_DEFAULT,
            minimum=1,
            description="the longest one record may be; a longer one sends its FlowFile to failure",
        ),
    )

    def batches(self, open_stream: Opener, schema: pa.Schema | None) -> Iterator[pa.RecordBatch]:
        given = schema is not None
        texted = {field.name for field in schema if untyped(field) == JSON_TEXT} if schema is not None else set()
        for block in self._blocks(open_stream):
            if texted:
                block = _texted(block, texted)
            table = self._parse(block, schema, given)
            if given:  # the schema's own fields, metadata and all
                table = pa.Table.from_arrays(table.columns, schema=schema)
            schema = table.schema
            yield from table.to_batches()

    reads_lines = True

    def read_lines(self, data: bytes, schema: pa.Schema | None) -> pa.Table:
        table = self._parse(_Block(data, 0, 1), schema, given=schema is not None)
        return pa.Table.from_arrays(table.columns, schema=schema) if schema is not None else table

    def infer_schema(self, open_stream: Opener) -> pa.Schema:
        schemas = [self._parse(block, None, False).schema for block in self._blocks(open_stream)]
        return unify(schemas, "of this JSON") if schemas else pa.schema([])

    def lenient_schema(self, open_stream: Opener) -> pa.Schema:
        """As `infer_schema`, but a top-level field whose values are of several JSON types
        (a number here, text there) is text holding each value's JSON text, marked
        `JSON_TEXT`: decoded, each value is what the record held. Two passes in Python
        over the records, the first to find such fields."""
        kinds: dict[str, set[str]] = {}
        for block in self._blocks(open_stream):
            for row in _rows(block):
                for name, value in row.items():
                    if value is not None:
                        kinds.setdefault(name, set()).add(json_kind(value))
        mixed = {name for name, seen in kinds.items() if len(seen) > 1}
        if not mixed:
            return self.infer_schema(open_stream)
        text = pa.schema([(name, pa.string()) for name in sorted(mixed)])
        options = pa_json.ParseOptions(explicit_schema=text, unexpected_field_behavior="infer")
        schemas = []
        for block in self._blocks(open_stream):
            block = _texted(block, mixed)
            try:
                read = _inferred(block, options)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
                raise _located(block, error) from None
            schemas.append(read.schema)
        schema = unify(schemas, "of this JSON")
        fields = [marked(field, JSON_TEXT) if field.name in mixed else field for field in schema]
        order = {name: position for position, name in enumerate(kinds)}  # as the records first name them
        return pa.schema(sorted(fields, key=lambda field: order.get(field.name, len(order))))

    # -- blocks -----------------------------------------------------------------------

    def _blocks(self, open_stream: Opener) -> Iterator[_Block]:
        """The content as blocks of JSON Lines: cut from it when it is JSON Lines,
        re-encoded from Python's decoder otherwise (and when its first block turns out
        not to be JSON Lines: a pretty-printed object)."""
        limit = self.config["max_record_size"]
        with open_stream() as stream:
            first = stream.read(_READ_SIZE)
            start = first.lstrip()[:1]
            if start == b"[":
                yield from _value_blocks(_chunks(first, stream), limit)
                return
            lines = _line_blocks(_chunks(first, stream), limit)
            block = next(lines, None)
            if block is None:
                return
            if _first_line_is_json(block.data):
                yield block
                yield from lines
                return
        with open_stream() as stream:  # pretty-printed: the one way that reads it
            yield from _value_blocks(_chunks(b"", stream), limit)

    # -- parsing ----------------------------------------------------------------------

    def _parse(self, block: _Block, schema: pa.Schema | None, given: bool) -> pa.Table:
        if schema is None:
            try:
                return _inferred(block)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
                raise _located(block, error) from None
        behaviour = "ignore" if given else "error"
        options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior=behaviour)
        try:
            return pa_json.read_json(io.BytesIO(block.data), read_options=_read_options(block), parse_options=options)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            if given:
                raise _located(block, error, "does not fit the schema: ") from None
            try:  # does it read by itself? Then it is the schema that changed
                alone = _inferred(block)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                raise _located(block, error) from None
            raise SchemaChanged(block.first_record, _difference(schema, alone.schema)) from None


def _inferred(block: _Block, options: pa_json.ParseOptions | None = None) -> pa.Table:
    """`block` read with the types Arrow infers, but text stays text: where Arrow would
    read an ISO-8601 string as a timestamp, it is read again as the string it is (as
    NiFi's JsonTreeReader keeps it without a date format), so that JSON written back is
    what was read (`"2024-12-01"` stays, and does not become `"2024-12-01T00:00:00"`)."""
    read = pa_json.read_json(io.BytesIO(block.data), read_options=_read_options(block), parse_options=options)
    if not any(_holds_timestamp(field.type) for field in read.schema):
        return read
    explicit = pa.schema([field.with_type(_timestamps_as_text(field.type)) for field in read.schema])
    again = pa_json.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="error")
    return pa_json.read_json(io.BytesIO(block.data), read_options=_read_options(block), parse_options=again)


def _holds_timestamp(kind: pa.DataType) -> bool:
    if pa.types.is_timestamp(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_holds_timestamp(kind.field(index).type) for index in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _holds_timestamp(kind.value_type)
    return False


def _timestamps_as_text(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(kind):
        return pa.string()
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_timestamps_as_text(field.type)) for field in kind])
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_timestamps_as_text(kind.value_type)))
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_timestamps_as_text(kind.value_type)))
    return kind


def _read_options(block: _Block) -> pa_json.ReadOptions:
    # One Arrow block per our block: inference sees all of it, and row numbers in
    # errors count from its start.
    return pa_json.ReadOptions(block_size=max(len(block.data), 1) + 1, use_threads=True)


def _rows(block: _Block) -> Iterator[dict]:
    """The records of `block`, decoded by Python's decoder."""
    row = 0
    for number, text in enumerate(block.data.split(b"\n")):
        if text.strip():
            try:
                yield json.loads(text)
            except ValueError as error:
                line = block.first_line + number if block.lines is None else block.line_of(row)
                raise RecordError(str(error), record=block.first_record + row, line=line) from None
            row += 1


def _texted(block: _Block, fields: set[str]) -> _Block:
    """`block` with each value of `fields` replaced by its JSON text (blank lines kept,
    so that line numbers still hold)."""
    out = []
    for text in block.data.split(b"\n"):
        if text.strip():
            row = json.loads(text)
            for name in fields:
                if row.get(name) is not None:
                    row[name] = json.dumps(row[name], ensure_ascii=False)
            text = json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode()
        out.append(text)
    return _Block(b"\n".join(out), block.first_record, block.first_line, block.lines)


def _difference(schema: pa.Schema, other: pa.Schema) -> str:
    for field in other:
        if field.name not in schema.names:
            return f"field {field.name!r} appears"
        if schema.field(field.name).type != field.type:
            return f"field {field.name!r} is {field.type} there, {schema.field(field.name).type} before"
    return "the records differ from the schema"


def _located(block: _Block, error: Exception, prefix: str = "") -> RecordError:
    """`error` of Arrow's parser over `block`, as a `RecordError` naming the record."""
    message = str(error)
    found = _ROW.search(message)
    if found is not None:
        row = int(found.group(1))
        line = block.line_of(row)
        text = _line_text(block, line)
        try:
            value = json.loads(text) if text is not None else {}
        except ValueError:
            value = {}
        if not isinstance(value, dict):
            message = f"a record must be a JSON object, not {json_kind(value)}"
            found = None
        return RecordError(
            prefix + (message[: found.start()] if found else message), record=block.first_record + row, line=line
        )
    row = 0
    for number, text in enumerate(block.data.split(b"\n")):
        if not text.strip():
            continue
        try:
            json.loads(text)
        except ValueError as decoding:
            line = block.lines[row] if block.lines is not None else block.first_line + number
            return RecordError(f"{prefix}{message} ({decoding})", record=block.first_record + row, line=line)
        row += 1
    return RecordError(prefix + message, record=block.first_record)


def _line_text(block: _Block, line: int) -> bytes | None:
    """The text of `line` when `block` is the content's own lines (not re-encoded)."""
    if block.lines is not None:
        return None
    parts = block.data.split(b"\n")
    index = line - block.first_line
    return parts[index] if 0 <= index < len(parts) else None


def _first_line_is_json(data: bytes) -> bool:
    for text in data.split(b"\n", 64):
        if text.strip():
            try:
                return isinstance(json.loads(text), dict)
            except ValueError:
                return False
    return True


def _chunks(first: bytes, stream: BinaryIO) -> Iterator[bytes]:
    if first:
        yield first
    while chunk := stream.read(_READ_SIZE):
        yield chunk


def _line_blocks(chunks: Iterable[bytes], limit: int) -> Iterator[_Block]:
    """JSON Lines in blocks of about `BLOCK_SIZE`, each cut after a newline."""
    pending = bytearray()
    record, line = 0, 1
    for chunk in chunks:
        pending += chunk
        if len(pending) < BLOCK_SIZE:
            continue
        cut = pending.rfind(b"\n")
        if cut < 0:
            if len(pending) > limit:
                raise RecordError(f"a record is longer than max_record_size ({limit} bytes)", record=record, line=line)
            continue
        data = bytes(pending[: cut + 1])
        del pending[: cut + 1]
        block = _Block(data, record, line)
        record += _records_in(data)
        line += data.count(b"\n")
        yield block
    if pending.strip():
        yield _Block(bytes(pending), record, line)


def _records_in(data: bytes) -> int:
    return sum(1 for text in data.split(b"\n") if text.strip())


def _value_blocks(chunks: Iterable[bytes], limit: int) -> Iterator[_Block]:
    """JSON values one after another, or one array of them, decoded by Python's decoder
    and re-encoded one per line in blocks."""
    decoder = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8")()
    source = iter(chunks)
    text, position, line, eof = "", 0, 1, False
    record, in_array, started = 0, False, False
    out: list[bytes] = []
    lines: list[int] = []
    size, first_record = 0, 0

    def more() -> bool:
        nonlocal text, position, eof
        if eof:
            return False
        chunk = next(source, None)
        try:
            decoded = utf8.decode(chunk or b"", final=chunk is None)
        except UnicodeDecodeError as error:
            raise RecordError(f"the content is not UTF-8 text ({error.reason})", record=record, line=line) from None
        eof = chunk is None
        text = text[position:] + decoded
        position = 0
        return True

    def skip_space() -> bool:
        """Past whitespace; False at the end of the content."""
        nonlocal position, line
        while True:
            length = len(text)
            while position < length and text[position] in " \t\r\n":
                if text[position] == "\n":
                    line += 1
                position += 1
            if position < length:
                return True
            if not more():
                return False

    while True:
        if not skip_space():
            if in_array:
                raise RecordError("the array of records is not closed (no ']')", record=record, line=line)
            break
        if not started:
            started = True
            if text[position] == "[":
                in_array = True
                position += 1
                continue
        if in_array and text[position] == "]":
            position += 1
            if skip_space():
                raise RecordError("content follows the array of records", record=record, line=line)
            break
        while True:
            try:
                value, end = decoder.raw_decode(text, position)
            except json.JSONDecodeError as error:
                if len(text) - position > limit:
                    raise RecordError(
                        f"a record is longer than max_record_size ({limit} bytes)", record=record, line=line
                    ) from None
                if more():
                    continue
                at = line + text.count("\n", position, error.pos)
                raise RecordError(error.msg, record=record, line=at) from None
            except RecursionError:
                raise RecordError("a record is nested too deeply to read", record=record, line=line) from None
            if end == len(text) and not eof and more():
                continue  # a number at the end of what was read may go on
            break
        if end - position > limit:
            raise RecordError(f"a record is longer than max_record_size ({limit} bytes)", record=record, line=line)
        if not isinstance(value, dict):
            raise RecordError(f"a record must be a JSON object, not {json_kind(value)}", record=record, line=line)
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
        out.append(encoded)
        lines.append(line)
        size += len(encoded) + 1
        line += text.count("\n", position, end)
        position = end
        record += 1
        if in_array and skip_space():
            if text[position] == ",":
                position += 1
            elif text[position] != "]":
                raise RecordError("expected ',' or ']' after a record", record=record, line=line)
        if size >= BLOCK_SIZE:
            yield _Block(b"\n".join(out) + b"\n", first_record, lines[0], lines)
            out, lines, size, first_record = [], [], 0, record
    if out:
        yield _Block(b"\n".join(out) + b"\n", first_record, lines[0], lines)


# -- writing --------------------------------------------------------------------------


class JsonRecordSetWriter(RecordWriter):
    type_name = "JsonRecordSetWriter"
    description = "Writes records as JSON: an array of objects, or one object per line."
    mime_type = "application/json"
    properties = (
        PropertyDescriptor(
            "output_grouping",
            "choice",
            default="array",
            choices=("array", "one-line-per-object"),
            description="one JSON array of all the records, or one object per line (JSON Lines)",
        ),
        PropertyDescriptor(
            "suppress_null_values",
            "choice",
            default="never-suppress",
            choices=("never-suppress", "always-suppress"),
            description="write a field whose value is null, or leave it out",
        ),
        PropertyDescriptor("pretty_print", "boolean", default=False, description="indent the JSON (array output)"),
    )

    def open(self, sink: BinaryIO, schema: pa.Schema) -> RecordSetWriter:
        return _JsonSetWriter(
            sink,
            lines=self.config["output_grouping"] == "one-line-per-object",
            suppress_nulls=self.config["suppress_null_values"] == "always-suppress",
            indent=2 if self.config["pretty_print"] else None,
        )

    def fit(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch  # a field of values of several types is written value by value, as each was

    def each_record(self, batch: pa.RecordBatch) -> list[bytes]:
        """As a record set of one would be written (an array of one record, when the
        grouping is an array, as NiFi's writer writes a Kafka message), without a line's end."""
        writer = self.open(io.BytesIO(), batch.schema)
        assert isinstance(writer, _JsonSetWriter)
        return [(text if writer.lines else f"[{text}]").encode() for text in writer.encode(batch)]


class _JsonSetWriter(RecordSetWriter):
    def __init__(self, sink: BinaryIO, *, lines: bool, suppress_nulls: bool, indent: int | None):
        self.sink, self.lines, self.suppress_nulls = sink, lines, suppress_nulls
        self.indent = None if lines else indent
        self.separators = (",", ": ") if self.indent else (",", ":")
        self.count = 0

    def encode(self, batch: pa.RecordBatch) -> list[str]:
        """Each record of `batch` as JSON text."""
        encoded = []
        mixed = [field.name for field in batch.schema if untyped(field) == JSON_TEXT]
        for row in batch.to_pylist(maps_as_pydicts="strict"):
            for name in mixed:
                if row[name] is not None:
                    row[name] = json.loads(row[name])
            if self.suppress_nulls:
                row = {key: value for key, value in row.items() if value is not None}
            try:
                encoded.append(
                    json.dumps(
                        row, ensure_ascii=False, default=_json_value, indent=self.indent, separators=self.separators
                    )
                )
            except (TypeError, ValueError) as error:
                raise RecordError(f"cannot be written as JSON: {error}", record=self.count + len(encoded)) from None
        return encoded

    def write(self, batch: pa.RecordBatch) -> None:
        encoded = self.encode(batch)
        if not encoded:
            return
        if self.lines:  # a newline between records, none after the last, as NiFi writes them
            self.sink.write((("\n" if self.count else "") + "\n".join(encoded)).encode())
        else:
            self.sink.write((("[" if self.count == 0 else ",") + ",".join(encoded)).encode())
        self.count += len(encoded)

    def close(self) -> None:
        if not self.lines:
            self.sink.write(b"]" if self.count else b"[]")


def _json_value(value):
    """What `json` cannot write by itself, as NiFi's JSON writer writes it."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    raise TypeError(f"a value of type {type(value).__name__} cannot be written as JSON")
