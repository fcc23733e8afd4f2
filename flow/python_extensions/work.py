"""What a NiFi Python processor does in one `on_trigger`, inside the engine's session,
as NiFi's framework does it around `transform` and `create`:

- FlowFileTransform: each FlowFile of a batch is given to `transform`; the FlowFile
  (same id) goes to the result's relationship with its attributes added and, when the
  result has contents, that content; a copy of the FlowFile as it came goes to
  `original` (unless `original` is auto-terminated). A result for `failure` sends the
  FlowFile there as it came, with the result's attributes.
- RecordTransform: each record the flow's reader reads is given to `transform` as a
  dict; the records of the results are written with the flow's writer, one FlowFile
  per (relationship, partition), in the order first met, each with `record.count`,
  `mime.type` and the partition's items as attributes; the FlowFile read goes to
  `original`.
- FlowFileSource: `create` makes one FlowFile, or none.

A processor that raises (or returns what is not a result, or a relationship it does
not have) sends the FlowFile it was given to `failure`, with the error in its
`python.error` attribute and in the log (at most a line a minute of each kind), and
nothing it made for that FlowFile goes anywhere. Content that cannot be read sets the
FlowFile aside, penalized, as the standard processors do. The session commits all of
a batch at once: a node killed before the commit leaves every FlowFile where it was,
and the next owner runs them again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from ..errors import UnreadableContent
from ..processors.content_failures import ContentFailures
from ..records.errors import RecordError, SchemaChanged
from ..records.rewrite import MIME_TYPE, RECORD_COUNT, mixed_schema, schema_of_all
from .flowfiles import AttributeMap, InputFlowFile

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..processor import ProcessContext
    from ..session import ProcessSession

READER_NAME, WRITER_NAME = "Record Reader", "Record Writer"  # the properties NiFi's framework adds
ERROR_ATTRIBUTE = "python.error"
# FlowFiles a transform takes per session: the commit is shared by the batch.
TRANSFORM_BATCH = 100
RECORD_BATCH = 16


class NifiProcessor(Protocol):
    """What the work reads of `flow.python_extensions.adapter.NifiProcessor`."""

    @property
    def id(self) -> str: ...
    @property
    def type_name(self) -> str: ...
    @property
    def relationships(self) -> tuple[str, ...]: ...
    @property
    def nifi(self) -> Any: ...
    @property
    def nifi_context(self) -> Any: ...


class ProcessorFailed(Exception):
    """The NiFi processor raised, or returned what the framework cannot use."""


def _relationship(processor: NifiProcessor, result: object, kind: str) -> str:
    relationship = getattr(result, "relationship", None)
    if not isinstance(relationship, str):
        raise ProcessorFailed(f"{kind}() returned {result!r}, not a result with a relationship")
    if relationship not in processor.relationships:
        raise ProcessorFailed(
            f"{kind}() chose relationship {relationship!r}, which the processor does not have "
            f"(it has {', '.join(processor.relationships)})"
        )
    return relationship


def _strings(attributes) -> dict[str, str]:
    if not attributes:
        return {}
    return {str(key): str(value) for key, value in dict(attributes).items()}


def _fail(processor: NifiProcessor, context: ProcessContext, session: ProcessSession, flowfile: FlowFile, error):
    reason = f"{type(error).__name__}: {error}" if not isinstance(error, ProcessorFailed) else str(error)
    context.limited_log.error(
        "python-error", "%s (%s): %s goes to failure: %s", processor.id, processor.type_name, flowfile.id, reason
    )
    session.transfer(session.put_attribute(flowfile, ERROR_ATTRIBUTE, reason[:4096]), "failure")


def transform_flowfiles(processor: NifiProcessor, context: ProcessContext, session: ProcessSession) -> None:
    nifi, nifi_context = processor.nifi, processor.nifi_context
    keep_original = not session.drops("original")
    unreadable = ContentFailures(processor.id, context, session)
    for flowfile in session.get_batch(TRANSFORM_BATCH):
        try:
            result = nifi.transform(nifi_context, InputFlowFile(session, flowfile))
            relationship = _relationship(processor, result, "transform")
            attributes = _strings(result.getAttributes())
            contents = result.getContents()
            if contents is not None and not isinstance(contents, (bytes, bytearray, memoryview)):
                raise ProcessorFailed(f"transform() returned contents of type {type(contents).__name__}, not bytes")
        except UnreadableContent as error:
            unreadable.set_aside(flowfile, error)
            continue
        except Exception as error:  # noqa: BLE001 - the processor's own failure: its FlowFile goes to failure
            _fail(processor, context, session, flowfile, error)
            continue
        if relationship == "failure":
            session.transfer(session.put_all_attributes(flowfile, attributes) if attributes else flowfile, "failure")
            continue
        original = session.clone(flowfile) if keep_original else None
        if attributes:
            flowfile = session.put_all_attributes(flowfile, attributes)
        if contents is not None:
            flowfile = session.write_bytes(flowfile, bytes(contents))
        session.transfer(flowfile, relationship)
        if original is not None:
            session.transfer(original, "original")
    unreadable.log()


class _Outputs:
    """The records of one FlowFile's results, by (relationship, partition), in the order
    each was first met."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, tuple], tuple[dict[str, str], list[dict]]] = {}

    def add(self, relationship: str, partition, record: dict) -> None:
        items = _strings(partition)
        key = (relationship, tuple(sorted(items.items())))
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = (items, [])
        group[1].append(record)


def _read_results(processor: NifiProcessor, session: ProcessSession, flowfile: FlowFile, reader) -> _Outputs:
    nifi, nifi_context = processor.nifi, processor.nifi_context
    attribute_map = AttributeMap(flowfile)
    schema = reader.given_schema(flowfile)
    complete = schema is not None
    while True:
        outputs = _Outputs()
        try:
            for batch in reader.batches(lambda: session.read(flowfile), schema):
                for record in batch.to_pylist():
                    result = nifi.transform(nifi_context, record, batch.schema, attribute_map)
                    relationship = _relationship(processor, result, "transform")
                    if result.getRecord() is not None:
                        outputs.add(relationship, result.getPartition(), result.getRecord())
        except SchemaChanged:
            schema, complete = schema_of_all(session, flowfile, reader), True
            continue
        except RecordError as error:
            if complete:
                raise
            schema, complete = mixed_schema(session, flowfile, reader, error), True
            continue
        return outputs


def _write_group(session: ProcessSession, parent: FlowFile, writer, items: dict[str, str], records: list[dict]):
    child = session.create(parent)
    try:
        batch = pa.RecordBatch.from_pylist(records)
        with session.write(child) as out:
            record_set = writer.open(out, batch.schema)
            record_set.write(writer.fit(batch))
            record_set.close()
    except BaseException:
        session.remove(child)
        raise
    assert out.flowfile is not None
    return session.put_all_attributes(
        out.flowfile, {**items, RECORD_COUNT: str(len(records)), MIME_TYPE: writer.mime_type}
    )


def transform_records(processor: NifiProcessor, context: ProcessContext, session: ProcessSession) -> None:
    reader, writer = context[READER_NAME], context[WRITER_NAME]
    unreadable = ContentFailures(processor.id, context, session)
    for flowfile in session.get_batch(RECORD_BATCH):
        made: list[tuple[FlowFile, str]] = []
        try:
            outputs = _read_results(processor, session, flowfile, reader)
            for (relationship, _), (items, records) in outputs.groups.items():
                made.append((_write_group(session, flowfile, writer, items, records), relationship))
        except UnreadableContent as error:
            for child, _ in made:
                session.remove(child)
            unreadable.set_aside(flowfile, error)
            continue
        except RecordError as error:
            for child, _ in made:
                session.remove(child)
            context.limited_log.warning("records", "%s: %s goes to failure: %s", processor.id, flowfile.id, error)
            session.transfer(session.put_all_attributes(flowfile, error.attributes()), "failure")
            continue
        except Exception as error:  # noqa: BLE001 - the processor's own failure: its FlowFile goes to failure
            for child, _ in made:
                session.remove(child)
            _fail(processor, context, session, flowfile, error)
            continue
        for child, relationship in made:
            session.transfer(child, relationship)
        session.transfer(flowfile, "original")
    unreadable.log()


def create_flowfile(processor: NifiProcessor, context: ProcessContext, session: ProcessSession) -> None:
    result = processor.nifi.create(processor.nifi_context)
    if result is None:
        return
    relationship = _relationship(processor, result, "create")
    contents = result.getContents()
    flowfile = session.create(attributes=_strings(result.getAttributes()) or None)
    if contents is not None:
        flowfile = session.write_bytes(flowfile, bytes(contents))
    session.transfer(flowfile, relationship)


def _results(returned, kind: str) -> list:
    """What a multiple-output method returned, as a list (None is none)."""
    if returned is None:
        return []
    if isinstance(returned, (str, bytes)) or not hasattr(returned, "__iter__"):
        raise ProcessorFailed(f"{kind}() returned {returned!r}, not a list of results")
    return list(returned)


def transform_flowfiles_many(processor: NifiProcessor, context: ProcessContext, session: ProcessSession) -> None:
    """FlowFileTransformMultipleOutput: a FlowFile per result, made from the input, and
    the input to `original`; a failure keeps none of what the transform returned."""
    nifi, nifi_context = processor.nifi, processor.nifi_context
    unreadable = ContentFailures(processor.id, context, session)
    for flowfile in session.get_batch(TRANSFORM_BATCH):
        try:
            outputs = []
            for result in _results(nifi.transform(nifi_context, InputFlowFile(session, flowfile)), "transform"):
                relationship = _relationship(processor, result, "transform")
                contents = result.getContents()
                if contents is not None and not isinstance(contents, (bytes, bytearray, memoryview)):
                    raise ProcessorFailed(f"transform() returned contents of type {type(contents).__name__}, not bytes")
                outputs.append((relationship, _strings(result.getAttributes()), contents))
        except UnreadableContent as error:
            unreadable.set_aside(flowfile, error)
            continue
        except Exception as error:  # noqa: BLE001 - the processor's own failure: its FlowFile goes to failure
            _fail(processor, context, session, flowfile, error)
            continue
        for relationship, attributes, contents in outputs:
            child = session.clone(flowfile)
            if attributes:
                child = session.put_all_attributes(child, attributes)
            if contents is not None:
                child = session.write_bytes(child, bytes(contents))
            session.transfer(child, relationship)
        session.transfer(flowfile, "original")
    unreadable.log()


def create_flowfiles(processor: NifiProcessor, context: ProcessContext, session: ProcessSession) -> None:
    """MultipleFlowFileSource: a new FlowFile per result, all in this session."""
    results = _results(processor.nifi.create(processor.nifi_context), "create")
    made = []
    for result in results:
        relationship = _relationship(processor, result, "create")
        made.append((relationship, _strings(result.getAttributes()) or None, result.getContents()))
    for relationship, attributes, contents in made:
        flowfile = session.create(attributes=attributes)
        if contents is not None:
            flowfile = session.write_bytes(flowfile, bytes(contents))
        session.transfer(flowfile, relationship)


WORK = {
    "transform": transform_flowfiles,
    "record": transform_records,
    "source": create_flowfile,
    "transforms": transform_flowfiles_many,
    "sources": create_flowfiles,
}
