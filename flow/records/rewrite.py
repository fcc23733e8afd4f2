"""One FlowFile's records read by a reader service and written again by a writer
service, streamed batch by batch: ConvertRecord's work, and the part every record
processor that rewrites content shares.

The new content is written to a new claim as it is read (copy-on-write, as every
write of a session): when the reader or the writer fails half-way, that claim is
dropped and the FlowFile is as it was. A reader that inferred its schema from the
first block and meets records that do not fit it (`SchemaChanged`) is asked for the
schema of every record, and the FlowFile is written again from the start with it.
Records whose values disagree in type (a number here, text there: NiFi infers a
CHOICE) are read again with such a field as JSON text (`lenient_schema`): the JSON
writer writes each value as it was, the other writers as text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from .errors import RecordError, SchemaChanged
from .readers import untyped

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession
    from .readers import RecordReader
    from .writers import RecordWriter

RECORD_COUNT = "record.count"
MIME_TYPE = "mime.type"


def rewrite_records(
    session: ProcessSession, flowfile: FlowFile, reader: RecordReader, writer: RecordWriter
) -> tuple[FlowFile, int]:
    """The new version of `flowfile` whose content is its records in `writer`'s format,
    with `record.count` and `mime.type` set, and how many records it holds. Raises
    `RecordError` when they cannot be read or written, `UnreadableContent` when the
    content cannot be read at all; either way `flowfile` is left as it was."""
    schema = reader.given_schema(flowfile)
    inferred_again = False
    while True:
        try:
            with session.write(flowfile) as out:
                count = copy_records(reader.batches(lambda: session.read(flowfile), schema), writer, out, schema)
        except SchemaChanged as change:
            if inferred_again:  # cannot happen with a reader true to its word: say so rather than loop
                raise RecordError(
                    f"the records still do not fit the schema inferred over all of them: {change}"
                ) from None
            schema, inferred_again = schema_of_all(session, flowfile, reader), True
            continue
        except RecordError as error:
            if inferred_again or schema is not None:
                raise
            # Inferred from a block whose records disagree on a field's type: read again
            # with that field as text (NiFi infers a CHOICE), when that is the reason.
            schema, inferred_again = mixed_schema(session, flowfile, reader, error), True
            continue
        assert out.flowfile is not None  # set as the block was left without an exception
        updated = session.put_all_attributes(out.flowfile, {RECORD_COUNT: str(count), MIME_TYPE: writer.mime_type})
        return updated, count


def schema_of_all(session: ProcessSession, flowfile: FlowFile, reader: RecordReader) -> pa.Schema:
    """The schema every record of `flowfile` fits (`infer_schema`), or where their types
    disagree, the one with such fields as JSON text (`mixed_schema`)."""
    try:
        return reader.infer_schema(lambda: session.read(flowfile))
    except RecordError as error:
        return mixed_schema(session, flowfile, reader, error)


def mixed_schema(session: ProcessSession, flowfile: FlowFile, reader: RecordReader, error: RecordError) -> pa.Schema:
    """The schema that reads every record when some fields hold values of several types
    (each such field JSON text, `RecordReader.lenient_schema`); raises `error` when no
    field does; the lenient read's own `RecordError` for a malformed record."""
    lenient = reader.lenient_schema(lambda: session.read(flowfile))  # a malformed record: its own error
    if not any(untyped(field) for field in lenient):
        raise error
    return lenient


def copy_records(batches: Iterable[pa.RecordBatch], writer: RecordWriter, sink, schema: pa.Schema | None) -> int:
    """Write `batches` through `writer` to `sink`; how many records. The writer is opened
    with the first batch's schema (`schema`, or none, when there are no records)."""
    count = 0
    opened = None
    for batch in batches:
        batch = writer.fit(batch)
        if opened is None:
            opened = writer.open(sink, batch.schema)
        opened.write(batch)
        count += batch.num_rows
    if opened is None:
        empty = pa.RecordBatch.from_pylist([], schema=schema if schema is not None else pa.schema([]))
        opened = writer.open(sink, writer.fit(empty).schema)  # a field of mixed values as the writer takes it
    opened.close()
    return count
