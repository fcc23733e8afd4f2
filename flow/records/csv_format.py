"""CSV records: `CSVReader` and `CSVRecordSetWriter`, named as NiFi's are.

The reader is Arrow's streaming CSV reader (RFC 4180 quoting, quoted newlines), a
`BLOCK_SIZE` block at a time. Its options: `value_separator`, `quote_character`,
`escape_character` (none by default, as RFC 4180 has it; NiFi's default is a
backslash), whether the first line is a header
(without one the columns are `f0`, `f1`, ...), and `null_string`, the text that
means null (by default an empty field of a non-text column is null and an empty
text field is empty text).

Schema: inferred by Arrow from the first block (integers, floats, booleans, dates,
timestamps, text). When a later block does not fit (a column of integers that holds
a word further down) the reader says so (`SchemaChanged`) and `infer_schema` reads
every row as text to find, per column, the narrowest of integer, float, boolean and
text that every value takes. A given Avro schema names the columns to keep (by their
header names) and their types.

A row with too many or too few fields is named by its index and line; so is a value
that does not fit its column's given type.

The writer (`csv_writing`) writes a header line (unless told not to), quotes as NiFi's
writer does (by default only the values that need it) and writes nulls as
`null_string`. As NiFi's writer does, a decimal is written as Java writes a double
(`7.0`, `1.0E7`), a list as `[a, b]`, a map as `{k=v}` and a struct (a record) as its
JSON (`flow.java_text`).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from ..processor import PropertyDescriptor
from .csv_writing import QUOTE_MODES, CsvSetWriter, CsvStyle
from .errors import RecordError, SchemaChanged
from .readers import BLOCK_SIZE, SCHEMA_PROPERTIES, Opener, RecordReader
from .writers import RecordSetWriter, RecordWriter

_CONVERSION = "CSV conversion error"
_INVALID_VALUE = re.compile(r"In CSV column #(\d+): .*invalid value '(.*)'$", re.S)
# The narrowest first: a column takes the first type every one of its values casts to.
_CANDIDATES = (pa.int64(), pa.float64(), pa.bool_())


_CHARACTER_PROPERTIES = (
    PropertyDescriptor("value_separator", "string", default=",", description="the character between values"),
    PropertyDescriptor("quote_character", "string", default='"', description="the character that quotes a value"),
)


class CSVReader(RecordReader):
    type_name = "CSVReader"
    description = "Reads CSV records (RFC 4180), with or without a header line."
    values_are_text = True
    properties = (
        SCHEMA_PROPERTIES
        + _CHARACTER_PROPERTIES
        + (
            PropertyDescriptor(
                "escape_character",
                "string",
                default="",
                description="the character that escapes the next one (none by default, as RFC 4180 has it)",
            ),
            PropertyDescriptor(
                "treat_first_line_as_header", "boolean", default=True, description="the first line names the columns"
            ),
            PropertyDescriptor(
                "null_string",
                "string",
                default="",
                description="the text that means null (by default an empty field of a column that is not text)",
            ),
        )
    )

    @classmethod
    def validate(cls, properties):
        return _validate_characters(
            properties, ("value_separator", "quote_character"), ("escape_character",)
        ) or super().validate(properties)

    def batches(self, open_stream: Opener, schema: pa.Schema | None) -> Iterator[pa.RecordBatch]:
        return self._batches(open_stream, schema, scanning=False)

    def _batches(self, open_stream: Opener, schema: pa.Schema | None, scanning: bool) -> Iterator[pa.RecordBatch]:
        given = schema is not None and not scanning
        if schema is None:
            schema = self._first_block_schema(open_stream)
        records = 0
        with open_stream() as stream:
            try:
                reader = self._open(stream, schema, given)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                raise self._located(open_stream, error, records) from None
            if reader is None:
                return
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                    if not given and _CONVERSION in str(error):
                        raise SchemaChanged(records, str(error)) from None
                    raise self._located(open_stream, error, records) from None
                records += batch.num_rows
                if given:  # the schema's own fields, metadata and all
                    batch = pa.RecordBatch.from_arrays(batch.columns, schema=schema)
                yield batch

    def _first_block_schema(self, open_stream: Opener) -> pa.Schema | None:
        """None, to read with the types Arrow infers from the first block, unless it
        would read a column as a date, a time or a timestamp: then those types with such
        columns as text, as NiFi's CSVReader reads them without a date format (so that
        `2024-12-01T10:00:00Z` is written back as it was read)."""
        with open_stream() as stream:
            try:
                reader = self._open(stream, None, False)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None  # the read proper says what is wrong, and where
            if reader is None or not any(pa.types.is_temporal(field.type) for field in reader.schema):
                return None
            return pa.schema(
                [field.with_type(pa.string()) if pa.types.is_temporal(field.type) else field for field in reader.schema]
            )

    def infer_schema(self, open_stream: Opener) -> pa.Schema:
        with open_stream() as stream:
            try:
                reader = self._open(stream, None, False)
            except pa.ArrowInvalid as error:
                raise self._located(open_stream, error, 0) from None
            if reader is None:
                return pa.schema([])
            names = reader.schema.names
        text = pa.schema([(name, pa.string()) for name in names])
        candidates = {name: list(_CANDIDATES) for name in names}
        for batch in self._batches(open_stream, text, scanning=True):
            for name, column in zip(names, batch.columns, strict=True):
                candidates[name] = [kind for kind in candidates[name] if _casts(column, kind)]
        return pa.schema([(name, (candidates[name] or [pa.string()])[0]) for name in names])

    def _open(self, stream: BinaryIO, schema: pa.Schema | None, given: bool) -> pa_csv.CSVStreamingReader | None:
        """Arrow's reader over `stream` (None when the content is empty): with the types
        of `schema` when there is one, and only its columns when it was `given`."""
        config = self.config
        header = config["treat_first_line_as_header"]
        names = schema.names if schema is not None else None
        read = pa_csv.ReadOptions(
            block_size=BLOCK_SIZE,
            autogenerate_column_names=not header and names is None,
            column_names=None if header else names,
        )
        parse = pa_csv.ParseOptions(
            delimiter=config["value_separator"],
            quote_char=config["quote_character"] or False,
            escape_char=config["escape_character"] or False,
            newlines_in_values=True,
        )
        null = config["null_string"] or ""
        convert = pa_csv.ConvertOptions(
            null_values=[null],
            # Reading every value as text to infer the types: an empty value is null there.
            strings_can_be_null=bool(null) or (schema is not None and not given),
            quoted_strings_can_be_null=False,
            column_types={field.name: field.type for field in schema} if schema is not None else None,
            include_columns=names if given and header else None,
            include_missing_columns=given,
        )
        try:
            return pa_csv.open_csv(stream, read_options=read, parse_options=parse, convert_options=convert)
        except pa.ArrowInvalid as error:
            if "Empty CSV file" in str(error):
                return None
            raise

    def _located(self, open_stream: Opener, error: Exception, records: int) -> RecordError:
        """`error` of Arrow's reader as a `RecordError` naming the row: the content read
        again by Python's CSV reader to find it (only when something is wrong)."""
        message = str(error)
        invalid = _INVALID_VALUE.search(message)
        config = self.config
        header = config["treat_first_line_as_header"]
        try:
            with open_stream() as stream:
                text = io.TextIOWrapper(stream, encoding="utf-8", newline="")
                rows = csv.reader(
                    text,
                    delimiter=config["value_separator"],
                    quotechar=config["quote_character"] or None,
                    escapechar=config["escape_character"] or None,
                    doublequote=True,
                    strict=False,
                )
                width = None
                record = -1 if header else 0
                for row in rows:
                    line = rows.line_num
                    if width is None:
                        width = len(row)
                        if header:
                            record = 0
                            continue
                    if invalid is not None:
                        column, value = int(invalid.group(1)), invalid.group(2)
                        if column < len(row) and row[column] == value:
                            return RecordError(message, record=record, line=line)
                    elif len(row) != width:
                        return RecordError(message, record=record, line=line)
                    record += 1
        except (csv.Error, UnicodeDecodeError, ValueError):
            pass
        return RecordError(message, record=records)


def _casts(column: pa.Array, kind: pa.DataType) -> bool:
    try:
        pc.cast(column, kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _validate_characters(properties, single: tuple[str, ...], optional: tuple[str, ...]) -> list[tuple[str, str]]:
    for name in single:
        value = properties.get(name)
        if value is None or len(value) != 1:
            return [(name, f"must be one character, got {value!r}")]
    for name in optional:
        value = properties.get(name)
        if value and len(value) != 1:
            return [(name, f"must be one character or empty, got {value!r}")]
    if len({properties.get(name) for name in single}) != len(single):
        return [(single[-1], "must differ from value_separator")]
    return []


class CSVRecordSetWriter(RecordWriter):
    type_name = "CSVRecordSetWriter"
    description = "Writes records as CSV, quoting as NiFi's writer does, with a header line."
    mime_type = "text/csv"
    properties = _CHARACTER_PROPERTIES + (
        PropertyDescriptor(
            "escape_character",
            "string",
            default="",
            description="put before a quote or itself inside quotes (none: a quote is doubled, as RFC 4180 has it)",
        ),
        PropertyDescriptor(
            "quote_mode",
            "choice",
            default="minimal",
            choices=QUOTE_MODES,
            description="which values are quoted: those that need it, all, or all but numbers",
        ),
        PropertyDescriptor(
            "trim_fields", "boolean", default=False, description="drop spaces around each value before writing it"
        ),
        PropertyDescriptor("include_header_line", "boolean", default=True, description="write the column names first"),
        PropertyDescriptor("null_string", "string", default="", description="the text written for a null"),
    )

    @classmethod
    def validate(cls, properties):
        return _validate_characters(properties, ("value_separator", "quote_character"), ("escape_character",))

    def open(self, sink: BinaryIO, schema: pa.Schema) -> RecordSetWriter:
        config = self.config
        style = CsvStyle(
            separator=config["value_separator"],
            quote=config["quote_character"],
            escape=config["escape_character"] or "",
            quote_mode=config["quote_mode"],
            null_string=config["null_string"] or "",
            trim=config["trim_fields"],
        )
        return CsvSetWriter(sink, schema, style, config["include_header_line"])
