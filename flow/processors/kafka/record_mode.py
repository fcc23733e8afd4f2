"""Record mode of the Kafka processors, NiFi's record-oriented ConsumeKafka and
PublishKafka: with a record reader and a record writer set (the flow's services),

- ConsumeKafka reads each message's value with the reader and writes the messages of a
  partition read in one task as one FlowFile through the writer (as few FlowFiles as
  their schemas allow, in order: `flow.records.messages`). A message the reader cannot
  read goes to `parse.failure` by itself, its value as the content and the reader's
  error in `record.error.*`; the messages around it go on to `success`. Either way its
  position is committed with the FlowFiles, so it is read once.
- PublishKafka reads each FlowFile's records with the reader and sends each record as
  one message, written by the writer, all in the FlowFile's transaction; the key of
  each message is the value of `message_key_field` in its record. A FlowFile whose
  records cannot be read or written goes to `failure` whole, with `record.error.*`.

A schema the reader takes from an attribute (`schema_text`) is evaluated against the
attributes of the partition's first message in the batch (ConsumeKafka) or of the
FlowFile (PublishKafka).
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...flowfile import FlowFile
from ...records.errors import RecordError, SchemaChanged
from ...records.messages import MessageFailure, read_messages
from ...records.rewrite import MIME_TYPE, RECORD_COUNT, copy_records
from ..records import READER_PROPERTY, WRITER_PROPERTY

if TYPE_CHECKING:
    from ...records.readers import RecordReader
    from ...records.writers import RecordWriter
    from ...session import ProcessSession

PARSE_FAILURE = "parse.failure"

CONSUME_PROPERTIES = (
    replace(
        READER_PROPERTY,
        required=False,
        description="record mode: the reader service each message's value is read with (with record_writer)",
    ),
    replace(
        WRITER_PROPERTY,
        required=False,
        description="record mode: the writer service the records of a partition's messages are written with, "
        "many messages to a FlowFile",
    ),
)
PUBLISH_PROPERTIES = (
    replace(
        READER_PROPERTY,
        required=False,
        description="record mode: the reader service a FlowFile's records are read with; each record is one "
        "message (with record_writer)",
    ),
    replace(
        WRITER_PROPERTY,
        required=False,
        description="record mode: the writer service each message's value is written with, one record each",
    ),
)


def validate_record_mode(properties: Mapping[str, Any], *, key_field: str | None = None) -> list[tuple[str, str]]:
    """Problems of the record-mode properties: a reader needs a writer and the other way
    round, and record mode excludes a demarcator (and needs it for `key_field`)."""
    reader, writer = properties.get("record_reader"), properties.get("record_writer")
    problems = []
    if reader is not None and writer is None:
        problems.append(("record_writer", "required with record_reader (record mode needs both)"))
    if writer is not None and reader is None:
        problems.append(("record_reader", "required with record_writer (record mode needs both)"))
    if reader is not None and properties.get("message_demarcator"):
        problems.append(("message_demarcator", "not with record_reader: record mode makes one message per record"))
    if key_field is not None and properties.get(key_field) and reader is None:
        problems.append((key_field, "only with record_reader and record_writer (record mode)"))
    return problems


def relationships(base: tuple[str, ...], properties: Mapping[str, Any]) -> tuple[str, ...]:
    """ConsumeKafka's relationships: `parse.failure` too in record mode."""
    return (*base, PARSE_FAILURE) if properties.get("record_reader") is not None else base


# -- ConsumeKafka --------------------------------------------------------------------


def consumed(
    session: ProcessSession,
    reader: RecordReader,
    writer: RecordWriter,
    messages: list,
    attributes: Callable[[Any, bool], dict[str, str]],
) -> list[tuple[FlowFile, bytes, str]]:
    """The FlowFiles of one partition's `messages` (in offset order), their contents and
    relationships: the records of runs of messages to `success`, each message that
    cannot be read (or whose records cannot be written) to `parse.failure`.
    `attributes(message, single)` are the Kafka attributes of a FlowFile."""
    values = [message.value() or b"" for message in messages]
    made: list[tuple[FlowFile, bytes, str]] = []

    def failed(index: int, error: RecordError) -> None:
        found = {**attributes(messages[index], True), **error.attributes()}
        made.append((session.create(attributes=found), values[index], PARSE_FAILURE))

    try:
        schema = reader.given_schema(_probe(attributes(messages[0], False)))
    except RecordError as error:
        for index in range(len(messages)):
            failed(index, error)
        return made
    for item in read_messages(reader, values, schema):
        if isinstance(item, MessageFailure):
            failed(item.at, item.error)
            continue
        sink = io.BytesIO()
        try:
            count = copy_records(item.table.to_batches(), writer, sink, item.table.schema)
        except RecordError as error:
            for index in item.indexes:
                failed(index, error)
            continue
        run = [messages[index] for index in item.indexes]
        found = attributes(run[0], False)
        found.update(
            {
                "kafka.count": str(len(run)),
                "kafka.max.offset": str(run[-1].offset()),
                RECORD_COUNT: str(count),
                MIME_TYPE: writer.mime_type,
            }
        )
        made.append((session.create(attributes=found), sink.getvalue(), "success"))
    return made


def _probe(attributes: dict[str, str]) -> FlowFile:
    """A FlowFile of `attributes` only, for evaluating the reader's schema against."""
    now = int(time.time() * 1000)
    return FlowFile("", attributes, None, "", 0, now, now)


# -- PublishKafka --------------------------------------------------------------------


def to_publish(
    session: ProcessSession, flowfile: FlowFile, reader: RecordReader, writer: RecordWriter, key_field: str | None
) -> tuple[list[bytes], list[bytes | None] | None]:
    """Each record of `flowfile` as a message value written by `writer`, and its key
    (the text of `key_field` in the record, None when null; no keys without `key_field`: the
    FlowFile's key is each message's). Raises
    `RecordError` (the records cannot be read or written) or `UnreadableContent`."""
    schema = reader.given_schema(flowfile)
    try:
        batches = list(reader.batches(lambda: session.read(flowfile), schema))
    except SchemaChanged:
        schema = reader.infer_schema(lambda: session.read(flowfile))
        batches = list(reader.batches(lambda: session.read(flowfile), schema))
    values: list[bytes] = []
    keys: list[bytes | None] | None = [] if key_field else None
    for batch in batches:
        if keys is not None:
            if key_field not in batch.schema.names:
                raise RecordError(f"the records have no field {key_field!r} (message_key_field)", record=len(values))
            keys += [_key(value) for value in batch.column(key_field).to_pylist()]
        values += writer.each_record(batch)
    return values, keys


def _key(value: object) -> bytes | None:
    """A field's value as a message key: text as it is, a number or a boolean as its
    text (as NiFi writes them), a nested value as JSON."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    return str(value).encode()
