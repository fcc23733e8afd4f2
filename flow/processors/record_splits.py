"""SplitRecord and PartitionRecord: one FlowFile's records into several, as NiFi's.

SplitRecord writes every `records_per_split` records into a FlowFile of their own,
in order, with NiFi's fragment attributes (`fragment.identifier`, `fragment.index`
from 0, `fragment.count`, `segment.original.filename`) and `record.count`.

PartitionRecord groups the records by the values its dynamic properties name (each a
record path, `flow.records.record_path`): one FlowFile per distinct combination, in
the order each was first met, with an attribute per property holding that value (none
when the value is null), `record.count` and the fragment attributes.

Both stream: a split is written as its records are read, and PartitionRecord keeps one
writer open per partition seen so far (its memory grows with the partitions, not the
records). The original goes to `original`; records that cannot be read send it to
`failure` whole, with `record.error.*`, and no split or partition of it goes anywhere.
"""

from __future__ import annotations

import uuid
from contextlib import ExitStack
from typing import TYPE_CHECKING

import pyarrow as pa

from ..processor import ProcessContext, Processor, PropertyDescriptor
from ..records.errors import RecordError, SchemaChanged
from ..records.readers import plain_text
from ..records.record_path import RecordPathError, column_of, compile_path
from ..records.rewrite import MIME_TYPE, RECORD_COUNT, mixed_schema, schema_of_all
from .records import READER_PROPERTY, WRITER_PROPERTY, each_flowfile

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession


class _RecordFork(Processor):
    """What SplitRecord and PartitionRecord share: reading each FlowFile's records once,
    handing every batch to `_take`, and sending the children made or the original to
    `failure` (the whole read again with the schema of every record when a later block
    widens it)."""

    relationships = ("splits", "original", "failure")
    child_relationship = "splits"

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        def fork(flowfile: FlowFile) -> None:
            children = self._fork(context, session, flowfile)
            identifier = str(uuid.uuid4())
            for index, (child, attributes) in enumerate(children):
                fragment = {
                    "fragment.identifier": identifier,
                    "fragment.index": str(index),
                    "fragment.count": str(len(children)),
                    "segment.original.filename": flowfile.attributes.get("filename", ""),
                }
                session.transfer(session.put_all_attributes(child, {**attributes, **fragment}), self.child_relationship)
            session.transfer(flowfile, "original")

        each_flowfile(self.id, context, session, fork)

    def _fork(self, context: ProcessContext, session: ProcessSession, flowfile: FlowFile) -> list:
        reader, writer = context["record_reader"], context["record_writer"]
        schema = reader.given_schema(flowfile)
        complete = schema is not None  # given, or inferred over every record
        while True:
            fork = _Children(session, flowfile, writer)
            try:
                with fork:
                    for batch in reader.batches(lambda: session.read(flowfile), schema):
                        self._take(context, fork, batch)
            except SchemaChanged:
                fork.discard()
                schema, complete = schema_of_all(session, flowfile, reader), True
                continue
            except RecordError as error:
                fork.discard()
                if complete:
                    raise
                # Values of several types in a field (read as text), or a malformed record.
                schema, complete = mixed_schema(session, flowfile, reader, error), True
                continue
            except BaseException:
                fork.discard()
                raise
            return fork.finished()

    def _take(self, context: ProcessContext, fork: _Children, batch: pa.RecordBatch) -> None:
        raise NotImplementedError


class _Child:
    """One child being written: the FlowFile, its output stream, its record set."""

    __slots__ = ("flowfile", "out", "records", "count", "attributes")

    def __init__(self, flowfile: FlowFile, out, records, attributes: dict[str, str]):
        self.flowfile, self.out, self.records, self.attributes = flowfile, out, records, attributes
        self.count = 0

    def current(self) -> FlowFile:
        """The child as it is now: its written version once its output was closed."""
        return self.out.flowfile if self.out.flowfile is not None else self.flowfile


class _Children:
    """The children of one FlowFile being written, each with its writer open, in the
    order they were begun; those still open are closed together at the end of the
    `with` block. `split` is SplitRecord's count of the splits it finished."""

    def __init__(self, session: ProcessSession, parent: FlowFile, writer):
        self.session, self.parent, self.writer = session, parent, writer
        self._stack = ExitStack()
        self._open: dict[object, _Child] = {}
        self._done: list[_Child] = []
        self.split = 0

    def __enter__(self) -> _Children:
        self._stack.__enter__()
        return self

    def count(self, key: object) -> int:
        child = self._open.get(key)
        return child.count if child is not None else 0

    def write(self, key: object, batch: pa.RecordBatch, attributes: dict[str, str] | None = None) -> None:
        """Append `batch` to the child of `key` (begun now if new)."""
        batch = self.writer.fit(batch)  # a field of mixed values as the writer takes it
        child = self._open.get(key)
        if child is None:
            flowfile = self.session.create(self.parent)
            out = self._stack.enter_context(self.session.write(flowfile))
            child = self._open[key] = _Child(flowfile, out, self.writer.open(out, batch.schema), attributes or {})
        child.records.write(batch)
        child.count += batch.num_rows

    def finish(self, key: object) -> None:
        """Close the record set of the child of `key` (a full split): a new one may begin."""
        child = self._open.pop(key)
        child.records.close()
        self._done.append(child)

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            for key in list(self._open):
                self.finish(key)
        self._stack.__exit__(kind, value, traceback)

    def finished(self) -> list[tuple[FlowFile, dict[str, str]]]:
        """The children written, with the attributes each is to get, in order."""
        mime = {MIME_TYPE: self.writer.mime_type}
        return [(child.current(), {**child.attributes, RECORD_COUNT: str(child.count), **mime}) for child in self._done]

    def discard(self) -> None:
        """Remove every child begun (the read failed, or starts over)."""
        for child in [*self._done, *self._open.values()]:
            self.session.remove(child.current())
        self._done, self._open = [], {}


class SplitRecord(_RecordFork):
    type_name = "SplitRecord"
    description = "Splits each FlowFile's records into FlowFiles of at most records_per_split records."
    properties = (
        READER_PROPERTY,
        WRITER_PROPERTY,
        PropertyDescriptor("records_per_split", "integer", required=True, minimum=1, description="records per split"),
    )

    def _take(self, context: ProcessContext, fork: _Children, batch: pa.RecordBatch) -> None:
        size = context["records_per_split"]
        offset = 0
        while offset < batch.num_rows:
            piece = batch.slice(offset, size - fork.count(fork.split))
            fork.write(fork.split, piece)
            offset += piece.num_rows
            if fork.count(fork.split) >= size:
                fork.finish(fork.split)
                fork.split += 1


class PartitionRecord(_RecordFork):
    type_name = "PartitionRecord"
    description = "Groups each FlowFile's records by the values of record paths: one FlowFile per distinct value."
    properties = (READER_PROPERTY, WRITER_PROPERTY)
    relationships = ("success", "original", "failure")
    child_relationship = "success"
    dynamic_properties = True

    @classmethod
    def validate(cls, properties, dynamic):
        if not dynamic:
            return [
                ("record_reader", "PartitionRecord needs at least one record path: a property whose value is /field")
            ]
        for name, expression in dynamic.items():
            if not expression.is_literal:
                return [(name, "a record path is fixed text, not an expression")]
            try:
                compile_path(expression.evaluate())
            except RecordPathError as error:
                return [(name, str(error))]
        return []

    def _take(self, context: ProcessContext, fork: _Children, batch: pa.RecordBatch) -> None:
        names = list(context.dynamic)
        plain = plain_text(batch)  # a value of a field of mixed types by its text, not its JSON
        columns = [column_of(plain, compile_path(context.dynamic[name].evaluate())).to_pylist() for name in names]
        groups: dict[tuple, list[int]] = {}
        for row, key in enumerate(zip(*columns, strict=True)):
            groups.setdefault(tuple(_hashable(value) for value in key), []).append(row)
        for key, rows in groups.items():
            attributes = {name: _text(value) for name, value in zip(names, key, strict=True) if value is not None}
            fork.write(key, batch.take(pa.array(rows, pa.int64())), attributes)


def _hashable(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
