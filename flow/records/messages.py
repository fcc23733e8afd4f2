"""Records to and from many small messages (Kafka records), as NiFi's record-mode
ConsumeKafka and PublishKafka read and write them.

Reading: each message is a document of the reader's format. The messages read in one
task become as few record sets as their schemas allow (`read_messages`): messages one
after another whose records fit one schema are one set, in order; a message that
cannot be read is left out by itself, with its error, and the messages around it go
on in the set.
Reading a small document has a fixed cost (Arrow's JSON reader: about 0.6 ms, however
small the document), so a reader that can read one record per line (`reads_lines`:
JSON) is given every message at once, one per line, and only the messages at and
after a failure are read again; a message that is not one line is read by itself.

Writing: each record becomes one message (`RecordWriter.each_record`), a whole
document of the writer's format (NiFi's JSON writer, grouping records in an array,
writes each record as an array of one).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from contextlib import nullcontext
from typing import NamedTuple

import pyarrow as pa

from .errors import RecordError, SchemaChanged
from .readers import RecordReader


class MessageRecords(NamedTuple):
    """The records of the messages at `indexes` (in order), one table of one schema."""

    indexes: tuple[int, ...]
    table: pa.Table


class MessageFailure(NamedTuple):
    """Message `at`, which the reader could not read (or whose set the writer could not write)."""

    at: int
    error: RecordError


def read_messages(
    reader: RecordReader, values: Sequence[bytes], schema: pa.Schema | None
) -> list[MessageRecords | MessageFailure]:
    """The records of `values`, in order: runs of messages read as one table, and the
    messages that cannot be read. `schema`: the reader's given schema, or None to infer."""
    found: list[MessageRecords | MessageFailure] = []
    start = 0
    while start < len(values):
        if reader.reads_lines and _one_line(values[start]):
            end = start + 1
            while end < len(values) and _one_line(values[end]):
                end += 1
            found += _read_lines(reader, values, start, end, schema)
            start = end
        else:
            found.append(_read_one(reader, values, start, schema))
            start += 1
    return _merged(found)


def _one_line(value: bytes) -> bool:
    """Whether `value` is one record on one line, to read with others: a JSON object
    (the cheapest sign of one) with no line break inside."""
    text = value.strip()
    return text[:1] == b"{" and b"\n" not in text and b"\r" not in text


def _read_lines(
    reader: RecordReader, values: Sequence[bytes], start: int, end: int, schema: pa.Schema | None
) -> list[MessageRecords | MessageFailure]:
    """Messages `start` to `end`, each one line, read together: where a read fails at a
    record, the messages before it are one run and the rest are read again from it."""
    found: list[MessageRecords | MessageFailure] = []
    while start < end:
        stop = end
        while True:
            try:
                table = reader.read_lines(b"\n".join(value.strip() for value in values[start:stop]), schema)
            except RecordError as error:
                at = error.record if error.record is not None else 0
                if 0 < at < stop - start:
                    stop = start + at  # those before it read together; it and the rest again after
                    continue
                if stop - start > 1:
                    found.append(_read_one_line(reader, values, start, schema))
                    start += 1
                    break
                found.append(MessageFailure(start, error))
                start += 1
                break
            found.append(MessageRecords(tuple(range(start, stop)), table))
            start = stop
            break
    return found


def _read_one_line(
    reader: RecordReader, values: Sequence[bytes], index: int, schema: pa.Schema | None
) -> MessageRecords | MessageFailure:
    try:
        return MessageRecords((index,), reader.read_lines(values[index].strip(), schema))
    except RecordError as error:
        return MessageFailure(index, error)


def _read_one(
    reader: RecordReader, values: Sequence[bytes], index: int, schema: pa.Schema | None
) -> MessageRecords | MessageFailure:
    """Message `index` read by itself, as a FlowFile's content is."""

    def opener():
        return nullcontext(io.BytesIO(values[index]))

    try:
        try:
            batches = list(reader.batches(opener, schema))
        except SchemaChanged:
            schema = reader.infer_schema(opener)
            batches = list(reader.batches(opener, schema))
    except SchemaChanged as change:  # a reader untrue to its inferred schema: the message is at fault
        return MessageFailure(index, RecordError(str(change), record=change.record))
    except RecordError as error:
        return MessageFailure(index, error)
    if batches:
        return MessageRecords((index,), pa.Table.from_batches(batches))
    return MessageRecords((index,), (schema or pa.schema([])).empty_table())


def _merged(found: list[MessageRecords | MessageFailure]) -> list[MessageRecords | MessageFailure]:
    """Each set of records joined to the one before it (past the failures between them)
    where one schema fits both: a message with a field the ones before it lack, a float
    where they had integers. A set that fits none before it starts a new one."""
    merged: list[MessageRecords | MessageFailure] = []
    last: int | None = None  # where in `merged` the last set of records is
    for item in found:
        if isinstance(item, MessageRecords) and last is not None:
            before = merged[last]
            assert isinstance(before, MessageRecords)
            try:
                table = pa.concat_tables([before.table, item.table], promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                pass
            else:
                merged[last] = MessageRecords(before.indexes + item.indexes, table)
                continue
        if isinstance(item, MessageRecords):
            last = len(merged)
        merged.append(item)
    return merged
