"""Avro schemas (the JSON text of the Avro 1.11 specification) as Arrow schemas, and
back: how a record reader is given its schema (NiFi's "Schema Text", by default the
`avro.schema` attribute), and how a writer says what it wrote.

Avro to Arrow:

| Avro | Arrow |
|---|---|
| null | null |
| boolean | bool |
| int / long | int32 / int64 |
| float / double | float32 / float64 |
| string, enum | string |
| bytes, fixed | binary, fixed_size_binary |
| record | struct (the top-level record: the schema's fields) |
| array / map | list / map<string, ...> |
| union of null and one type | that type, nullable |
| date, time-millis, time-micros | date32, time32[ms], time64[us] |
| timestamp-millis / -micros (local- too) | timestamp[ms, UTC] / timestamp[us, UTC] (local: no zone) |
| decimal (bytes or fixed) | decimal128(precision, scale) (decimal256 beyond 38 digits) |
| uuid (string) | string |

A field that is not nullable in Avro is not nullable in Arrow. A union of two or more
non-null types has no Arrow counterpart a record writer can take, and is refused by name.
"""

from __future__ import annotations

import json

import pyarrow as pa

from .errors import RecordError

_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}


def arrow_schema(text: str) -> pa.Schema:
    """The Arrow schema of an Avro schema given as JSON text (a record). Raises
    `RecordError` saying what is wrong."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise RecordError(f"the schema is not valid JSON: {error}") from None
    if not isinstance(document, dict) or document.get("type") != "record":
        raise RecordError('the schema must be an Avro record schema ({"type": "record", "fields": [...]})')
    named: dict[str, pa.DataType] = {}
    struct = _record(document, named, "")
    return pa.schema(list(struct))


def _record(document: dict, named: dict, path: str) -> pa.StructType:
    fields = document.get("fields")
    if not isinstance(fields, list):
        raise RecordError(f"record {document.get('name', path or '?')!r} has no list of fields")
    placeholder_name = document.get("name")
    result = []
    for field in fields:
        if not isinstance(field, dict) or not isinstance(field.get("name"), str):
            raise RecordError(f"a field of record {placeholder_name or path or '?'!r} has no name")
        name = field["name"]
        kind, nullable = _type(field.get("type"), named, f"{path}.{name}" if path else name)
        result.append(pa.field(name, kind, nullable=nullable))
    struct = pa.struct(result)
    if isinstance(placeholder_name, str):
        named[placeholder_name] = struct
        namespace = document.get("namespace")
        if isinstance(namespace, str) and namespace:
            named[f"{namespace}.{placeholder_name}"] = struct
    return struct


def _type(avro, named: dict, path: str) -> tuple[pa.DataType, bool]:
    """(Arrow type, nullable) of the Avro type `avro` at field `path`."""
    if isinstance(avro, list):
        others = [member for member in avro if member != "null"]
        if len(others) == 0:
            return pa.null(), True
        if len(others) > 1:
            raise RecordError(
                f"field {path!r} is a union of {len(others)} types besides null; a record field holds one type"
            )
        kind, _ = _type(others[0], named, path)
        return kind, len(others) < len(avro)
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro], avro == "null"
        if avro in named:
            return named[avro], False
        raise RecordError(f"field {path!r} has an unknown type {avro!r}")
    if not isinstance(avro, dict):
        raise RecordError(f"field {path!r} has no type")
    logical = avro.get("logicalType")
    kind = avro.get("type")
    if logical is not None:
        found = _logical(logical, kind, avro, path)
        if found is not None:
            return found, False
    if kind == "record":
        return _record(avro, named, path), False
    if kind == "enum":
        return pa.string(), False
    if kind == "fixed":
        size = avro.get("size")
        if not isinstance(size, int) or size < 1:
            raise RecordError(f"field {path!r} is a fixed without a size")
        return pa.binary(size), False
    if kind == "array":
        item, nullable = _type(avro.get("items"), named, f"{path}[]")
        return pa.list_(pa.field("item", item, nullable=nullable)), False
    if kind == "map":
        value, nullable = _type(avro.get("values"), named, f"{path}{{}}")
        return pa.map_(pa.string(), pa.field("value", value, nullable=nullable)), False
    return _type(kind, named, path)


_UNITS = {"millis": "ms", "micros": "us", "nanos": "ns"}


def _logical(logical, kind, avro: dict, path: str) -> pa.DataType | None:
    """The Arrow type of a logical type, None for one Arrow has no better type for
    (the underlying type is used then, as the Avro specification asks)."""
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = avro.get("precision"), avro.get("scale", 0)
        if (
            not isinstance(precision, int)
            or not isinstance(scale, int)
            or not 0 < precision
            or not 0 <= scale <= precision
        ):
            raise RecordError(f"field {path!r} is a decimal without a valid precision and scale")
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    if logical == "date" and kind == "int":
        return pa.date32()
    if logical == "time-millis" and kind == "int":
        return pa.time32("ms")
    if logical == "time-micros" and kind == "long":
        return pa.time64("us")
    if kind == "long" and isinstance(logical, str) and logical.rsplit("-", 1)[-1] in _UNITS:
        unit = _UNITS[logical.rsplit("-", 1)[-1]]
        if logical.startswith("timestamp-"):
            return pa.timestamp(unit, tz="UTC")
        if logical.startswith("local-timestamp-"):
            return pa.timestamp(unit)
    return None


def avro_schema(schema: pa.Schema, name: str = "record") -> dict:
    """An Avro record schema for `schema` (for the `avro.schema` attribute a writer
    sets): every field a union with null where the Arrow field is nullable."""
    counter = iter(range(1, 1 << 30))
    fields = [{"name": field.name, "type": _nullable(field, field.name, counter)} for field in schema]
    return {"type": "record", "name": name, "fields": fields}


def _avro_type(kind: pa.DataType, where: str, counter):
    if pa.types.is_null(kind):
        return "null"
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_integer(kind):
        return "int" if kind.bit_width <= 32 and pa.types.is_signed_integer(kind) else "long"
    if pa.types.is_float32(kind) or pa.types.is_float16(kind):
        return "float"
    if pa.types.is_float64(kind):
        return "double"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "string"
    if pa.types.is_fixed_size_binary(kind):
        return {"type": "fixed", "name": f"fixed{next(counter)}", "size": kind.byte_width}
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return "bytes"
    if pa.types.is_decimal(kind):
        return {"type": "bytes", "logicalType": "decimal", "precision": kind.precision, "scale": kind.scale}
    if pa.types.is_date(kind):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(kind):
        unit = {"s": "millis", "ms": "millis", "us": "micros", "ns": "nanos"}[kind.unit]
        local = "" if kind.tz else "local-"
        return {"type": "long", "logicalType": f"{local}timestamp-{unit}"}
    if pa.types.is_time32(kind):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(kind):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_struct(kind):
        fields = [
            {"name": kind.field(i).name, "type": _nullable(kind.field(i), f"{where}.{kind.field(i).name}", counter)}
            for i in range(kind.num_fields)
        ]
        return {"type": "record", "name": f"record{next(counter)}", "fields": fields}
    if pa.types.is_map(kind):
        return {"type": "map", "values": _nullable(kind.item_field, f"{where}{{}}", counter)}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return {"type": "array", "items": _nullable(kind.value_field, f"{where}[]", counter)}
    raise RecordError(f"field {where!r} is of type {kind}, which Avro has no type for")


def _nullable(field: pa.Field, where: str, counter):
    avro = _avro_type(field.type, where, counter)
    return ["null", avro] if field.nullable and avro != "null" else avro
