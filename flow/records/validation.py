"""Records checked against a schema, a batch at a time: ValidateRecord's decision, a pure
function of the batch, the schema and two switches.

A record is valid when every field of the schema is there (or may be null), holds a
value of the field's type, and (unless extra fields are allowed) it has no field the
schema lacks. The type check:

- a value of the field's kind that converts to its type without loss (an integer of
  any width for an int or a long field when it is within its range, an integer or a
  float for a float or a double field) is valid;
- any other value is invalid when type checking is strict; when it is not, a value
  that converts to the field's type (the text "12" for an integer field) is valid and
  is written converted, and one that does not is invalid.

A field a lenient read left untyped (`flow.records.readers.lenient_schema`) is judged
value by value by what it held: a JSON value of a field whose values disagree in type
is decoded and judged by its own JSON type. Text of a format whose values are all
text (CSV: `text`) is judged by what it converts to, however strict the check.

`check_batch` returns the valid records converted to the schema (in its field order),
the invalid ones as they came (their own schema; a JSON value held as text is text
again, its own for a string), and for each invalid record its index in the batch and
the first reason found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from .readers import JSON_TEXT, untyped


@dataclass
class Checked:
    valid: pa.RecordBatch
    invalid: pa.RecordBatch
    reasons: list[tuple[int, str]] = field(default_factory=list)  # (index in the batch, why)


def check_batch(
    batch: pa.RecordBatch, schema: pa.Schema, *, strict: bool, allow_extra: bool, text: bool = False
) -> Checked:
    """Split `batch` into the records valid for `schema` and the rest (see the module)."""
    rows = batch.num_rows
    why: list[str | None] = [None] * rows
    columns = []

    def fail(mask: list[bool] | pa.Array, reason: str) -> None:
        flags = mask.to_pylist() if isinstance(mask, pa.Array) else mask
        for index, bad in enumerate(flags):
            if bad and why[index] is None:
                why[index] = reason

    for target in schema:
        if target.name not in batch.schema.names:
            if not target.nullable:
                fail([True] * rows, f"field {target.name!r} is missing")
            columns.append(pa.nulls(rows, target.type))
            continue
        column = batch.column(target.name)
        if not target.nullable and column.null_count:
            fail(column.is_null(), f"field {target.name!r} is missing or null")
        held = untyped(batch.schema.field(target.name))
        if held == JSON_TEXT:
            converted = _per_json_value(column, target, strict, fail)
        else:
            judged_strictly = strict and not (text and pa.types.is_string(column.type))
            converted = _converted(column, target.type, judged_strictly)
            if converted is None:
                converted = _per_value(column, target, judged_strictly, fail)
        columns.append(converted)
    if not allow_extra:
        for name in batch.schema.names:
            if name not in schema.names:
                column = batch.column(name)
                fail(column.is_valid(), f"field {name!r} is not in the schema")
    bad = pa.array([reason is not None for reason in why], pa.bool_())
    good = pc.invert(bad)
    valid = pa.RecordBatch.from_arrays(columns, schema=schema).filter(good)
    reasons = [(index, reason) for index, reason in enumerate(why) if reason is not None]
    return Checked(valid, _as_held(batch.filter(bad)), reasons)


def _as_held(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` with each JSON-text field's values as text again: a string as itself,
    any other value as its JSON."""
    arrays = []
    for member, column in zip(batch.schema, batch.columns, strict=True):
        if untyped(member) == JSON_TEXT:
            values = [None if text is None else _decoded_text(text) for text in column.to_pylist()]
            column = pa.array(values, pa.string())
        arrays.append(column)
    plain = pa.schema([member.remove_metadata() for member in batch.schema])
    return pa.RecordBatch.from_arrays(arrays, schema=plain)


def _decoded_text(text: str) -> str:
    value = json.loads(text)
    return value if isinstance(value, str) else text


def _per_json_value(column: pa.Array, target: pa.Field, strict: bool, fail) -> pa.Array:
    """`column` (each value's JSON text) as `target.type`, each value judged by the JSON
    type it had: strictly, a number for a number field, text for a text field, and so
    on; else whatever converts."""
    values: list[object] = []
    invalid: list[bool] = []
    reason = f"field {target.name!r} is not a {target.type}"
    for text in column.to_pylist():
        if text is None:
            values.append(None)
            invalid.append(False)
            continue
        value = json.loads(text)
        converted = _typed(value, target.type, strict)
        values.append(converted[0] if converted else None)
        invalid.append(not converted)
    fail(invalid, reason)
    return pa.array(values, target.type)


def _typed(value, target: pa.DataType, strict: bool) -> tuple | None:
    """(the value as `target` holds it,) when it is one, or (not strict) converts to one."""
    if _json_fits(value, target):
        try:
            return (pa.array([value], target)[0].as_py(),)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError):
            return None
    if strict or isinstance(value, (dict, list)):
        return None
    try:
        return (pc.cast(pa.array([value]), target, safe=True)[0].as_py(),)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _json_fits(value, target: pa.DataType) -> bool:
    """Whether a decoded JSON `value` is of `target`'s kind (true and false are not numbers)."""
    if pa.types.is_boolean(target):
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if pa.types.is_integer(target):
        return isinstance(value, int)
    if pa.types.is_floating(target) or pa.types.is_decimal(target):
        return isinstance(value, (int, float))
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return isinstance(value, str)
    if pa.types.is_struct(target) or pa.types.is_map(target):
        return isinstance(value, dict)
    if pa.types.is_list(target) or pa.types.is_large_list(target):
        return isinstance(value, list)
    return not isinstance(value, (dict, list))


def _widens(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether a value of `source` is of `target`'s kind, so that a strict check takes it
    when it converts without loss: integers of any width for an integer field (a value
    out of its range does not convert), integers and floats for a float field, text
    for text."""
    if source == target or pa.types.is_null(source):
        return True
    if pa.types.is_integer(source):
        return pa.types.is_integer(target) or pa.types.is_floating(target) or pa.types.is_decimal(target)
    if pa.types.is_floating(source):
        return pa.types.is_floating(target)
    if pa.types.is_string(source) or pa.types.is_large_string(source):
        return pa.types.is_string(target) or pa.types.is_large_string(target)
    return False


def _converted(column: pa.Array, target: pa.DataType, strict: bool) -> pa.Array | None:
    """`column` as `target` when every value converts as the rules allow; None when
    some may not (each is then checked on its own)."""
    if column.type == target:
        return column
    if strict and not _widens(column.type, target) and not _nested_alike(column.type, target):
        return None
    try:
        return pc.cast(column, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _nested_alike(source: pa.DataType, target: pa.DataType) -> bool:
    """Nested types compared by their shape: Arrow's cast checks the fields inside."""
    return pa.types.is_nested(source) and pa.types.is_nested(target) and type(source) is type(target)


def _per_value(column: pa.Array, target: pa.Field, strict: bool, fail) -> pa.Array:
    """`column` as `target.type`, value by value: a value that does not convert is
    marked invalid (and left null in the valid side, where it is never written)."""
    values: list[object] = []
    invalid: list[bool] = []
    for scalar in column:
        if not scalar.is_valid:
            values.append(None)
            invalid.append(False)
            continue
        if strict and not _widens(scalar.type, target.type):
            values.append(None)
            invalid.append(True)
            continue
        try:
            values.append(pc.cast(pa.array([scalar.as_py()], scalar.type), target.type, safe=True)[0].as_py())
            invalid.append(False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            values.append(None)
            invalid.append(True)
    fail(invalid, f"field {target.name!r} is a {column.type}, not a {target.type}")
    return pa.array(values, target.type)
