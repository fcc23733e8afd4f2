"""Values written as Java writes them, where NiFi's output is Java's `toString` of a
value: a double (`Double.toString`: `2.0`, `1.0E7`), a list (`[a, b]`, as
`List.toString`), a map (`{k=v}`), a record (its JSON, as NiFi's records write
themselves). The expression language's decimals and the CSV writer's cells use them,
so that Custody writes the bytes NiFi writes.
"""

from __future__ import annotations

import decimal
import json
import math

import pyarrow as pa
import pyarrow.compute as pc


def double_text(number: float) -> str:
    """A decimal as Java's `Double.toString` writes it (Java 19 and later): the shortest
    digits that read back the same, with at least one after the point (`2.0`), plain
    from 0.001 to below 10,000,000 and otherwise in Java's scientific notation (`1.0E7`,
    `1.2E-4`)."""
    if not math.isfinite(number):
        return "NaN" if number != number else ("Infinity" if number > 0 else "-Infinity")
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    sign = "-" if number < 0 else ""
    exact = decimal.Decimal(repr(abs(number))).normalize()
    if decimal.Decimal("0.001") <= exact < decimal.Decimal("10000000"):
        text = format(exact, "f")
        return sign + (text if "." in text else text + ".0")
    digits = "".join(map(str, exact.as_tuple().digits))
    exponent = len(digits) - 1 + int(exact.as_tuple().exponent)
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def value_text(value) -> str:
    """A value inside a list or a map as Java's `toString` writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_text(value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    if isinstance(value, list):
        if value and all(isinstance(item, tuple) and len(item) == 2 for item in value):
            return "{" + ", ".join(f"{value_text(k)}={value_text(v)}" for k, v in value) + "}"  # a map
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    return str(value)


def double_column(column: pa.Array) -> pa.Array:
    """A float column as text, each value as `double_text` writes it (nulls kept): cast
    by Arrow, whose shortest digits are Python's and Java's, then given Java's `.0` and
    scientific notation where they differ."""
    values = column.cast(pa.float64())
    text = pc.cast(values, pa.string())
    magnitude = pc.abs(values)
    ordinary = pc.and_(pc.greater_equal(magnitude, 1e-3), pc.less(magnitude, 1e7))
    whole = pc.match_substring_regex(text, r"^-?[0-9]+$")
    text = pc.if_else(pc.and_(ordinary, whole), pc.binary_join_element_wise(text, pa.scalar(".0"), ""), text)
    if pc.all(pc.or_(ordinary, pc.is_null(values))).as_py() is not False:
        return text
    rest = [double_text(number) if number is not None else None for number in values.to_pylist()]
    return pc.if_else(ordinary, text, pa.array(rest, pa.string()))


def nested_column(column: pa.Array) -> pa.Array:
    """A list, map or struct column as text, each value as `value_text` writes it."""
    return pa.array([None if value is None else value_text(value) for value in column.to_pylist()], pa.string())
