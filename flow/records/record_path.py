"""Record paths: which field of a record a processor means, as NiFi writes them for
the common case: `/name`, and `/outer/inner` for a field of a nested record.

    path   := ('/' name)+
    name   := any characters but '/', '[', ']', and not empty

(NiFi's full RecordPath language, with predicates, array indexes, wildcards and
functions, is larger; a path using any of it is refused by name when the flow is
loaded, rather than read differently.)

`compile_path` checks a path and gives its steps; `column_of` reads the values the path
names from a record batch, null where a record lacks them.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


class RecordPathError(ValueError):
    """A record path that cannot be read; the message says where."""


def compile_path(text: str) -> tuple[str, ...]:
    """The field names of `text`, outermost first. Raises `RecordPathError`."""
    path = text.strip()
    if not path.startswith("/"):
        raise RecordPathError(f"a record path starts with '/' (as /name), got {text!r}")
    steps = tuple(path[1:].split("/"))
    for position, step in enumerate(steps):
        if not step:
            raise RecordPathError(f"record path {text!r} has an empty field name at step {position + 1}")
        if any(mark in step for mark in "[]*()'\""):
            raise RecordPathError(f"record path {text!r}: only /field/field paths are supported here, not {step!r}")
    return steps


def column_of(batch: pa.RecordBatch, steps: tuple[str, ...]) -> pa.Array:
    """The values `steps` name in each record of `batch` (null where a record lacks them)."""
    if steps[0] not in batch.schema.names:
        return pa.nulls(batch.num_rows)
    column = batch.column(steps[0])
    for step in steps[1:]:
        if not pa.types.is_struct(column.type) or column.type.get_field_index(step) < 0:
            return pa.nulls(batch.num_rows)
        column = pc.struct_field(column, step)
    return column


def with_values(batch: pa.RecordBatch, steps: tuple[str, ...], values: pa.Array) -> pa.RecordBatch:
    """`batch` with the field `steps` names set to `values` in every record: replaced
    where the field is, added (last) where it is not; a record whose enclosing record is
    null gets one holding just that field."""
    arrays, names = list(batch.columns), list(batch.schema.names)
    top = steps[0]
    current = batch.column(top) if top in names else None
    updated = _set_in(current, steps[1:], values, batch.num_rows)
    if current is None:
        arrays.append(updated)
        names.append(top)
    else:
        arrays[names.index(top)] = updated
    return pa.RecordBatch.from_arrays(arrays, names=names)


def without(batch: pa.RecordBatch, steps: tuple[str, ...]) -> pa.RecordBatch:
    """`batch` without the field `steps` names (unchanged when it has no such field)."""
    names = list(batch.schema.names)
    if steps[0] not in names:
        return batch
    if len(steps) == 1:
        return batch.drop_columns([steps[0]])
    column = batch.column(steps[0])
    updated = _remove_in(column, steps[1:])
    arrays = list(batch.columns)
    arrays[names.index(steps[0])] = updated
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _set_in(current: pa.Array | None, steps: tuple[str, ...], values: pa.Array, rows: int) -> pa.Array:
    if not steps:
        return values
    if current is None or not pa.types.is_struct(current.type):
        return pa.StructArray.from_arrays([_set_in(None, steps[1:], values, rows)], names=[steps[0]])
    fields = [current.type.field(index).name for index in range(current.type.num_fields)]
    children = [pc.struct_field(current, name) for name in fields]
    if steps[0] in fields:
        position = fields.index(steps[0])
        children[position] = _set_in(children[position], steps[1:], values, rows)
    else:
        fields.append(steps[0])
        children.append(_set_in(None, steps[1:], values, rows))
    return pa.StructArray.from_arrays(children, names=fields)


def _remove_in(current: pa.Array, steps: tuple[str, ...]) -> pa.Array:
    if not pa.types.is_struct(current.type) or current.type.get_field_index(steps[0]) < 0:
        return current
    fields = [current.type.field(index).name for index in range(current.type.num_fields)]
    children = [pc.struct_field(current, name) for name in fields]
    position = fields.index(steps[0])
    if len(steps) == 1:
        del fields[position], children[position]
    else:
        children[position] = _remove_in(children[position], steps[1:])
    if not fields:
        return pa.nulls(len(current))
    return pa.StructArray.from_arrays(children, names=fields, mask=current.is_null())
