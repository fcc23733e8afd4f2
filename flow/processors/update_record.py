"""UpdateRecord and RemoveRecordField: fields of every record set, copied or removed by
record path (`flow.records.record_path`), as NiFi's.

UpdateRecord's dynamic properties are record paths; each value is what the field
becomes in every record of the FlowFile:

- `literal-value` (the default): the value is an expression evaluated once per
  FlowFile against its attributes; the result takes the field's type where the field
  exists (text that does not convert to it sends the FlowFile to `failure`) and is
  text where it does not;
- `record-path-value`: the value is another record path, whose value in each record
  is copied (null where the record lacks it), or a RecordPath function of such paths
  (`concat(/first, ' ', /last)`, `toUpperCase(/name)`: `flow.records.record_values`).

The paths are applied in the order the properties are given. RemoveRecordField's
dynamic properties name the fields to remove (their names are free; each value is a
record path). Both rewrite the content streamed, and send records that cannot be
read (or a value that does not fit) to `failure` whole, with `record.error.*`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ExpressionError
from ..processor import ProcessContext, Processor, PropertyDescriptor
from ..records.errors import RecordError
from ..records.readers import RecordReader
from ..records.record_path import RecordPathError, column_of, compile_path, with_values, without
from ..records.record_values import Value, compile_value, evaluate
from ..records.rewrite import rewrite_records
from .records import READER_PROPERTY, WRITER_PROPERTY, each_flowfile

if TYPE_CHECKING:
    from ..session import ProcessSession

LITERAL = "literal-value"
RECORD_PATH = "record-path-value"

Change = Callable[[pa.RecordBatch], pa.RecordBatch]


class _RecordEdit(Processor):
    """A processor that rewrites every record by `_changes(context, flowfile)`."""

    properties: ClassVar[tuple[PropertyDescriptor, ...]] = (READER_PROPERTY, WRITER_PROPERTY)
    relationships = ("success", "failure")
    dynamic_properties = True

    @classmethod
    def _paths_problem(cls, dynamic, paths_in_names: bool, compile=compile_path) -> list[tuple[str, str]]:
        if not dynamic:
            return [("record_reader", f"{cls.type_name} needs at least one record path property")]
        for name, expression in dynamic.items():
            try:
                compile(name if paths_in_names else expression.evaluate())
            except RecordPathError as error:
                return [(name, str(error))]
            except ExpressionError:
                return [(name, "a record path is fixed text, not an expression")]
        return []

    def _changes(self, context: ProcessContext, flowfile) -> list[Change]:
        raise NotImplementedError

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        reader, writer = context["record_reader"], context["record_writer"]

        def edit(flowfile) -> None:
            edited = _EditingReader(reader, self._changes(context, flowfile))
            updated, _ = rewrite_records(session, flowfile, edited, writer)
            session.transfer(updated, "success")

        each_flowfile(self.id, context, session, edit)


class _EditingReader(RecordReader):
    """`reader`, its batches passed through `changes` on the way out."""

    def __init__(self, reader: RecordReader, changes: list[Change]):
        super().__init__(reader.id, reader.config)
        self.reader, self.changes = reader, changes

    def given_schema(self, flowfile):
        return self.reader.given_schema(flowfile)

    def infer_schema(self, open_stream):
        return self.reader.infer_schema(open_stream)

    def batches(self, open_stream, schema) -> Iterator[pa.RecordBatch]:
        for batch in self.reader.batches(open_stream, schema):
            for change in self.changes:
                batch = change(batch)
            yield batch


class UpdateRecord(_RecordEdit):
    type_name = "UpdateRecord"
    description = "Sets fields of every record, named by record paths, to a value or to another field's value."
    properties = (
        READER_PROPERTY,
        WRITER_PROPERTY,
        PropertyDescriptor(
            "replacement_value_strategy",
            "choice",
            default=LITERAL,
            choices=(LITERAL, RECORD_PATH),
            description="a property's value is the value itself (an expression), or a record path to copy from "
            "(or a RecordPath function of paths, as concat(/first, ' ', /last))",
        ),
    )

    @classmethod
    def validate(cls, properties, dynamic):
        problems = cls._paths_problem(dynamic, paths_in_names=True)
        if problems or properties["replacement_value_strategy"] != RECORD_PATH:
            return problems
        return cls._paths_problem(dynamic, paths_in_names=False, compile=compile_value)

    def _changes(self, context: ProcessContext, flowfile) -> list[Change]:
        copying = context["replacement_value_strategy"] == RECORD_PATH
        changes: list[Change] = []
        for name, expression in context.dynamic.items():
            steps = compile_path(name)
            if copying:
                value = compile_value(expression.evaluate())
                changes.append(partial(_computed_field, steps=steps, value=value))
                continue
            try:
                text = expression.evaluate(flowfile)
            except ExpressionError as error:
                raise RecordError(f"{name}: {error}") from None
            changes.append(partial(_set_literal, steps=steps, text=text, name=name))
        return changes


def _computed_field(batch: pa.RecordBatch, steps: tuple[str, ...], value: Value) -> pa.RecordBatch:
    return with_values(batch, steps, evaluate(value, batch))


def _set_literal(batch: pa.RecordBatch, steps: tuple[str, ...], text: str, name: str) -> pa.RecordBatch:
    current = column_of(batch, steps)
    values = pa.array([text] * batch.num_rows, pa.string())
    if not pa.types.is_null(current.type) and current.type != pa.string():
        try:
            values = pc.cast(values, current.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise RecordError(f"{name}: the value {text!r} is not a {current.type}, the field's type") from None
    return with_values(batch, steps, values)


class RemoveRecordField(_RecordEdit):
    type_name = "RemoveRecordField"
    description = "Removes fields, named by record paths (the dynamic properties' values), from every record."

    @classmethod
    def validate(cls, properties, dynamic):
        return cls._paths_problem(dynamic, paths_in_names=False)

    def _changes(self, context: ProcessContext, flowfile) -> list[Change]:
        paths = [compile_path(expression.evaluate()) for expression in context.dynamic.values()]
        return [partial(without, steps=steps) for steps in paths]
