"""`RecordReader`: the base of the reader services, and the schema each is given.

A reader turns a FlowFile's content into Arrow record batches, all of one schema,
streamed block by block so that content of any size is read in bounded memory. Its
schema comes from its `schema_access_strategy`:

- `infer-schema` (the default): from the first block of records. When a later block
  does not fit (a field first seen there, a number where only integers were), the
  reader raises `SchemaChanged`, and the caller asks `infer_schema` for the schema of
  every record (one more pass over the content) and reads again with it. Most content
  fits one block, and most record streams keep their shape, so this costs a second
  and third pass only where the shape changes.
- `schema-text-property`: an Avro schema (`flow.records.avro_schema`) given in
  `schema_text`, an expression evaluated against the FlowFile (NiFi's default is the
  `avro.schema` attribute, and so is ours). Fields the schema does not name are left
  out, as NiFi's readers do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import pyarrow as pa

from ..controller_service import RECORD_READER, ControllerService
from ..errors import ExpressionError
from ..processor import PropertyDescriptor
from .avro_schema import arrow_schema
from .errors import RecordError

INFER = "infer-schema"
SCHEMA_TEXT = "schema-text-property"

SCHEMA_PROPERTIES = (
    PropertyDescriptor(
        "schema_access_strategy",
        "choice",
        default=INFER,
        choices=(INFER, SCHEMA_TEXT),
        description="infer the schema from the records, or take the Avro schema in schema_text",
    ),
    PropertyDescriptor(
        "schema_text",
        "expression",
        default="${avro.schema}",
        description="an Avro schema (JSON), with schema-text-property; by default the avro.schema attribute",
    ),
)
# Field metadata of a schema from `lenient_schema`: a field whose values disagree in
# type holds each value's JSON text (JSON_TEXT), for ValidateRecord to judge each value
# by what it was.
UNTYPED = b"custody.untyped"
JSON_TEXT = b"json"
# How much content a reader parses at once: the unit of its memory, and of inference.
BLOCK_SIZE = 4 << 20
# A record longer than this is refused by name: it alone would hold a reader's memory.
MAX_RECORD_SIZE_DEFAULT = "16 MB"

# Opens the content anew, as a binary stream in a `with` block.
Opener = Callable[[], AbstractContextManager[Any]]


class RecordReader(ControllerService):
    """A reader service. `batches` and `infer_schema` are the format's; both take
    `open_stream`, which opens the content anew each time it is called."""

    kind = RECORD_READER
    # A format whose values are all text (CSV): a text value is judged by what it
    # converts to, not by its type.
    values_are_text: ClassVar[bool] = False
    # A format that can read many small documents at once, one record on each line
    # (`read_lines`): messages (`flow.records.messages`) are read so.
    reads_lines: ClassVar[bool] = False

    @classmethod
    def validate(cls, properties) -> list[tuple[str, str]]:
        """A literal `schema_text` (one that names no attribute) is read when the flow
        is loaded: a schema that cannot be read is refused there."""
        if properties.get("schema_access_strategy") == SCHEMA_TEXT:
            expression = properties.get("schema_text")
            if expression is not None and expression.is_literal:
                try:
                    arrow_schema(expression.evaluate())
                except RecordError as error:
                    return [("schema_text", error.message)]
        return []

    def known_schema(self) -> pa.Schema | None:
        """The schema this reader gives every FlowFile, when it is known before any is
        read (a literal `schema_text`); None when it depends on the FlowFile or the records."""
        if self.config.get("schema_access_strategy", INFER) != SCHEMA_TEXT:
            return None
        expression = self.config["schema_text"]
        return arrow_schema(expression.evaluate()) if expression.is_literal else None

    def given_schema(self, flowfile) -> pa.Schema | None:
        """The schema the reader was given for `flowfile`, None when it infers one.
        Raises `RecordError` for a schema that cannot be read."""
        if self.config.get("schema_access_strategy", INFER) != SCHEMA_TEXT:
            return None
        try:
            text = self.config["schema_text"].evaluate(flowfile)
        except ExpressionError as error:
            raise RecordError(f"schema_text: {error}") from None
        if not text.strip():
            raise RecordError("schema_text is empty for this FlowFile (no avro.schema attribute?)")
        return arrow_schema(text)

    def batches(self, open_stream: Opener, schema: pa.Schema | None) -> Iterator[pa.RecordBatch]:
        """The records, as batches of `schema` (inferred from the first block when None:
        `SchemaChanged` when later records do not fit it). Raises `RecordError` for
        records that cannot be read."""
        raise NotImplementedError

    def read_lines(self, data: bytes, schema: pa.Schema | None) -> pa.Table:
        """The records of `data`, one on each line, with `schema` (inferred over all of
        them when None), for a reader that `reads_lines`. Raises `RecordError` naming the
        first record (by its line's index) that cannot be read, or does not fit."""
        raise NotImplementedError

    def infer_schema(self, open_stream: Opener) -> pa.Schema:
        """The schema every record fits (one pass over the content); `RecordError` when
        no schema does (a field that is a number in one record and text in another)."""
        raise NotImplementedError

    def lenient_schema(self, open_stream: Opener) -> pa.Schema:
        """A schema every record can be read with, even when their types disagree: a
        field that holds values of several types is text, marked `UNTYPED` in its
        metadata with how its values are held. For validating records, not converting
        them. By default `infer_schema`."""
        return self.infer_schema(open_stream)


def untyped(field: pa.Field) -> bytes | None:
    """How `field`'s values are held when `lenient_schema` made it text (JSON_TEXT),
    None for a typed field."""
    return (field.metadata or {}).get(UNTYPED)


def marked(field: pa.Field, how: bytes) -> pa.Field:
    return field.with_metadata({**(field.metadata or {}), UNTYPED: how})


def plain_text(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` with each field that `lenient_schema` made JSON text (`JSON_TEXT`) as
    plain text: a string as itself, any other value as its JSON text (`1`, `true`,
    `{"a":1}`), unmarked. What a writer of a typed format writes for a field whose
    values were of several types (NiFi's CHOICE, written as text)."""
    marked_fields = [index for index, field in enumerate(batch.schema) if untyped(field) == JSON_TEXT]
    if not marked_fields:
        return batch
    arrays, fields = list(batch.columns), list(batch.schema)
    for index in marked_fields:
        arrays[index] = pa.array([_plain(text) for text in arrays[index].to_pylist()], pa.string())
        field = fields[index]
        metadata = {key: value for key, value in (field.metadata or {}).items() if key != UNTYPED}
        fields[index] = pa.field(field.name, pa.string(), field.nullable, metadata or None)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields, batch.schema.metadata))


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` as `plain_text` makes a batch's."""
    return plain_text(pa.RecordBatch.from_pylist([], schema=schema)).schema


def _plain(text: str | None) -> str | None:
    if text is None:
        return None
    value = json.loads(text)
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def fit_batch(
    batch: pa.RecordBatch, target: pa.Schema, record: int, missing: Callable[[pa.Field, int], pa.Array]
) -> pa.RecordBatch:
    """`batch` matched to `target` by field name, in its order: a field both have is cast
    to `target`'s type, a field `batch` lacks is `missing(field, rows)` (which raises
    `RecordError` when it may not be missing), a field `target` lacks is dropped. A
    value that does not cast is a `RecordError` naming the field (`record`: the index
    of the batch's first record)."""
    if batch.schema == target:
        return batch
    arrays = []
    for field in target:
        if field.name in batch.schema.names:
            column = batch.column(field.name)
            try:
                arrays.append(column.cast(field.type) if column.type != field.type else column)
            except (pa.ArrowException, TypeError, ValueError) as error:
                raise RecordError(
                    f"field {field.name!r} does not fit the given schema: {error}", record=record
                ) from None
        else:
            arrays.append(missing(field, batch.num_rows))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def unify(schemas: list[pa.Schema], where: str) -> pa.Schema:
    """One schema every one of `schemas` fits: integers widen to floats, nulls to any type,
    new fields are added. `RecordError` when two disagree (text and a number)."""
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise RecordError(f"no one schema fits every record {where}: {error}") from None
