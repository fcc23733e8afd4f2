"""Values computed from a record, in NiFi's RecordPath notation: what UpdateRecord's
`record-path-value` strategy sets a field to.

    value     := path | function | text | number
    path      := ('/' name index?)+           /name, /address/city, /tags[0], /tags[-1]
    function  := word '(' (value (',' value)*)? ')'
    text      := "'" ... "'" | '"' ... '"'    (a backslash escapes the quote)
    number    := '-'? digits

The functions are NiFi's standard RecordPath functions of one value per record:

| function | gives |
|---|---|
| `concat(v, ...)` | the values' text joined (a null is left out) |
| `toUpperCase(v)`, `toLowerCase(v)`, `trim(v)` | the text changed |
| `substring(v, start, end)` | characters `start` to `end` (0-based, end excluded; negative counts from the end) |
| `substringBefore(v, s)`, `substringBeforeLast(v, s)` | the text before the first (last) `s`; all where none |
| `substringAfter(v, s)`, `substringAfterLast(v, s)` | the text after the first (last) `s`; all where none |
| `replace(v, search, replacement)` | every `search` replaced |
| `replaceRegex(v, regex, replacement)` | every match replaced (`$1` names a group, as in Java) |
| `replaceNull(v, other)`, `coalesce(v, ...)` | the first value that is not null |
| `padLeft(v, width[, pad])`, `padRight(v, width[, pad])` | padded to `width` with `pad` (`_` by default, as NiFi's) |
| `toString(v[, charset])` | the value as text (bytes decoded with `charset`, UTF-8 by default) |
| `base64Encode(v)`, `base64Decode(v)` | text or bytes, encoded or decoded |
| `hash(v, algorithm)` | the hex digest of the value's text (`SHA-256`, `MD5`, ...) |

A null stays null through every function but `concat`, `replaceNull` and `coalesce`.
Anything else (predicates, wildcards, `//` descendants, other functions) is refused by
name when the flow is loaded. Each value is computed a batch at a time, with Arrow's
compute functions where they exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from .errors import RecordError
from .record_path import RecordPathError


@dataclass(frozen=True)
class Path:
    """Field names outermost first; each with a list index, or None."""

    steps: tuple[tuple[str, int | None], ...]


@dataclass(frozen=True)
class Literal:
    value: str | int


@dataclass(frozen=True)
class Call:
    name: str
    arguments: tuple[Path | Literal | Call, ...]


Value = Path | Literal | Call


def compile_value(text: str) -> Value:
    """The value `text` writes. Raises `RecordPathError` saying what is wrong and where."""
    parser = _Parser(text)
    value = parser.value()
    parser.space()
    if parser.at < len(text):
        raise parser.error("unexpected text after the value")
    return value


def evaluate(value: Value, batch: pa.RecordBatch) -> pa.Array:
    """`value` for each record of `batch`. Raises `RecordError` for a value that cannot
    be computed (text that is not base64, an unknown hash algorithm)."""
    if isinstance(value, Literal):
        kind = pa.int64() if isinstance(value.value, int) else pa.string()
        return pa.array([value.value] * batch.num_rows, kind)
    if isinstance(value, Path):
        return _column(batch, value)
    arguments = [evaluate(argument, batch) for argument in value.arguments]
    return FUNCTIONS[value.name].apply(value, arguments)


def _column(batch: pa.RecordBatch, path: Path) -> pa.Array:
    column: pa.Array | None = None
    for number, (name, index) in enumerate(path.steps):
        if number == 0:
            column = batch.column(name) if name in batch.schema.names else None
        elif column is not None and pa.types.is_struct(column.type) and column.type.get_field_index(name) >= 0:
            column = pc.struct_field(column, name)
        else:
            column = None
        if column is None:
            return pa.nulls(batch.num_rows)
        if index is not None:
            if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
                return pa.nulls(batch.num_rows)
            column = _element(column, index)
    assert column is not None
    return column


def _element(column: pa.Array, index: int) -> pa.Array:
    """Element `index` of each list (negative: from its end), null where it has none."""
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_pylist()
    flat = column.flatten()
    offsets = column.offsets.to_pylist() if hasattr(column, "offsets") else None
    if offsets is None:  # a chunked or sliced list: go through Python
        return pa.array(
            [(row[index] if row is not None and -len(row) <= index < len(row) else None) for row in column.to_pylist()],
            column.type.value_type,
        )
    start = offsets[0]
    picks = []
    for row, length in enumerate(lengths):
        position = index if index >= 0 else length + index
        picks.append(offsets[row] - start + position if 0 <= position < length else None)
    return flat.take(pa.array(picks, pa.int64()))


# -- functions ---------------------------------------------------------------------


def _text(array: pa.Array) -> pa.Array:
    """`array` as text: text as it is, bytes decoded as UTF-8, anything else cast."""
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return array
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), pa.string())
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        return _each(array, lambda value: value.decode("utf-8", "replace"), pa.string())
    if pa.types.is_boolean(array.type):
        return pc.if_else(array, "true", "false")
    try:
        return pc.cast(array, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _each(array, str, pa.string())


def _each(array: pa.Array, change: Callable, kind: pa.DataType) -> pa.Array:
    return pa.array([None if value is None else change(value) for value in array.to_pylist()], kind)


def _scalar(call: Call, position: int) -> str | int:
    argument = call.arguments[position]
    assert isinstance(argument, Literal)  # checked at compile time (`_Function.literal`)
    return argument.value


def _concat(call: Call, arguments: list[pa.Array]) -> pa.Array:
    texts = [_text(argument) for argument in arguments]
    return pc.binary_join_element_wise(*texts, "", null_handling="replace", null_replacement="")


def _substring(call: Call, arguments: list[pa.Array]) -> pa.Array:
    start, end = int(_scalar(call, 1)), int(_scalar(call, 2))
    return pc.utf8_slice_codeunits(_text(arguments[0]), start=start, stop=end)


def _around(before: bool, last: bool) -> Callable[[Call, list[pa.Array]], pa.Array]:
    def cut(call: Call, arguments: list[pa.Array]) -> pa.Array:
        mark = str(_scalar(call, 1))

        def one(text: str) -> str:
            where = text.rfind(mark) if last else text.find(mark)
            if where < 0 or not mark:
                return text
            return text[:where] if before else text[where + len(mark) :]

        return _each(_text(arguments[0]), one, pa.string())

    return cut


def _replace(call: Call, arguments: list[pa.Array]) -> pa.Array:
    return pc.replace_substring(_text(arguments[0]), str(_scalar(call, 1)), str(_scalar(call, 2)))


def _replace_regex(call: Call, arguments: list[pa.Array]) -> pa.Array:
    pattern = re.compile(str(_scalar(call, 1)))
    replacement = re.sub(r"\$(\d+)", r"\\\1", str(_scalar(call, 2)))  # Java's $1 is Python's \1
    return _each(_text(arguments[0]), lambda text: pattern.sub(replacement, text), pa.string())


def _coalesce(call: Call, arguments: list[pa.Array]) -> pa.Array:
    typed = [argument for argument in arguments if not pa.types.is_null(argument.type)]
    if not typed:
        return arguments[0]
    kinds = {argument.type for argument in typed}
    if len(kinds) > 1:
        typed = [_text(argument) for argument in typed]
    return pc.coalesce(*typed)


def _pad(left: bool) -> Callable[[Call, list[pa.Array]], pa.Array]:
    def pad(call: Call, arguments: list[pa.Array]) -> pa.Array:
        width = int(_scalar(call, 1))
        padding = str(_scalar(call, 2)) if len(call.arguments) > 2 else "_"
        if len(padding) != 1:
            return _each(_text(arguments[0]), lambda t: _pad_with(t, width, padding, left), pa.string())
        text = _text(arguments[0])
        return pc.utf8_lpad(text, width, padding) if left else pc.utf8_rpad(text, width, padding)

    return pad


def _pad_with(text: str, width: int, padding: str, left: bool) -> str:
    if len(text) >= width or not padding:
        return text
    fill = (padding * width)[: width - len(text)]
    return fill + text if left else text + fill


def _to_string(call: Call, arguments: list[pa.Array]) -> pa.Array:
    value = arguments[0]
    if len(call.arguments) > 1 and (pa.types.is_binary(value.type) or pa.types.is_large_binary(value.type)):
        charset = str(_scalar(call, 1))
        try:
            "".encode(charset)
        except LookupError:
            raise RecordError(f"toString: unknown character set {charset!r}") from None
        return _each(value, lambda data: data.decode(charset, "replace"), pa.string())
    return _text(value)


def _base64_encode(call: Call, arguments: list[pa.Array]) -> pa.Array:
    value = arguments[0]
    if pa.types.is_binary(value.type) or pa.types.is_large_binary(value.type):
        return _each(value, lambda data: base64.b64encode(data), pa.binary())
    return _each(_text(value), lambda text: base64.b64encode(text.encode()).decode("ascii"), pa.string())


def _base64_decode(call: Call, arguments: list[pa.Array]) -> pa.Array:
    value = arguments[0]
    binary = pa.types.is_binary(value.type) or pa.types.is_large_binary(value.type)

    def decode(item):
        try:
            data = base64.b64decode(item, validate=True)
        except (binascii.Error, ValueError) as error:
            raise RecordError(f"base64Decode: {str(item)[:60]!r} is not base64 ({error})") from None
        return data if binary else data.decode("utf-8", "replace")

    return _each(value if binary else _text(value), decode, pa.binary() if binary else pa.string())


def _hash(call: Call, arguments: list[pa.Array]) -> pa.Array:
    name = str(_scalar(call, 1)).replace("-", "").lower()
    if name not in hashlib.algorithms_available:
        raise RecordError(f"hash: unknown algorithm {_scalar(call, 1)!r}")
    return _each(_text(arguments[0]), lambda text: hashlib.new(name, text.encode()).hexdigest(), pa.string())


@dataclass(frozen=True)
class _Function:
    apply: Callable[[Call, list[pa.Array]], pa.Array]
    least: int
    most: int | None  # None: any number
    literal: tuple[int, ...] = ()  # the arguments that must be text or numbers written in the path


def _unary(change: Callable[[pa.Array], pa.Array]) -> _Function:
    return _Function(lambda call, arguments: change(_text(arguments[0])), 1, 1)


FUNCTIONS: dict[str, _Function] = {
    "concat": _Function(_concat, 1, None),
    "toUpperCase": _unary(pc.utf8_upper),
    "toLowerCase": _unary(pc.utf8_lower),
    "trim": _unary(pc.utf8_trim_whitespace),
    "substring": _Function(_substring, 3, 3, (1, 2)),
    "substringBefore": _Function(_around(True, False), 2, 2, (1,)),
    "substringBeforeLast": _Function(_around(True, True), 2, 2, (1,)),
    "substringAfter": _Function(_around(False, False), 2, 2, (1,)),
    "substringAfterLast": _Function(_around(False, True), 2, 2, (1,)),
    "replace": _Function(_replace, 3, 3, (1, 2)),
    "replaceRegex": _Function(_replace_regex, 3, 3, (1, 2)),
    "replaceNull": _Function(_coalesce, 2, 2),
    "coalesce": _Function(_coalesce, 1, None),
    "padLeft": _Function(_pad(True), 2, 3, (1, 2)),
    "padRight": _Function(_pad(False), 2, 3, (1, 2)),
    "toString": _Function(_to_string, 1, 2, (1,)),
    "base64Encode": _Function(_base64_encode, 1, 1),
    "base64Decode": _Function(_base64_decode, 1, 1),
    "hash": _Function(_hash, 2, 2, (1,)),
}
_INTEGER_ARGUMENTS = {"substring": (1, 2), "padLeft": (1,), "padRight": (1,)}


# -- the parser ----------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str):
        self.text, self.at = text, 0

    def error(self, why: str) -> RecordPathError:
        return RecordPathError(f"record path {self.text!r}, at character {self.at + 1}: {why}")

    def space(self) -> None:
        while self.at < len(self.text) and self.text[self.at].isspace():
            self.at += 1

    def value(self) -> Value:
        self.space()
        if self.at >= len(self.text):
            raise self.error("a value is missing")
        char = self.text[self.at]
        if char == "/":
            return self.path()
        if char in "'\"":
            return Literal(self.quoted(char))
        if char == "-" or char.isdigit():
            return Literal(self.number())
        if char.isalpha():
            return self.call()
        raise self.error(f"{char!r} does not start a value (a /path, a function, 'text' or a number)")

    def path(self) -> Path:
        steps = []
        while self.at < len(self.text) and self.text[self.at] == "/":
            self.at += 1
            if self.at < len(self.text) and self.text[self.at] in "/*":
                raise self.error(f"'{self.text[self.at]}' (descendants and wildcards) is not supported")
            start = self.at
            while self.at < len(self.text) and not _ends_name(self.text[self.at]):
                self.at += 1
            name = self.text[start : self.at]
            if not name:
                raise self.error("a field name is missing after '/'")
            index = None
            if self.at < len(self.text) and self.text[self.at] == "[":
                self.at += 1
                self.space()
                if self.at < len(self.text) and not (self.text[self.at] == "-" or self.text[self.at].isdigit()):
                    raise self.error("only a list index ([0], [-1]) is supported in brackets, not a predicate")
                index = self.number()
                self.space()
                if self.at >= len(self.text) or self.text[self.at] != "]":
                    raise self.error("']' expected after the index")
                self.at += 1
            steps.append((name, index))
        return Path(tuple(steps))

    def quoted(self, quote: str) -> str:
        self.at += 1
        out = []
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == "\\" and self.at + 1 < len(self.text):
                out.append(self.text[self.at + 1])
                self.at += 2
                continue
            if char == quote:
                self.at += 1
                return "".join(out)
            out.append(char)
            self.at += 1
        raise self.error("the text is not closed")

    def number(self) -> int:
        start = self.at
        if self.at < len(self.text) and self.text[self.at] == "-":
            self.at += 1
        while self.at < len(self.text) and self.text[self.at].isdigit():
            self.at += 1
        digits = self.text[start : self.at]
        if digits in ("", "-"):
            raise self.error("a number is expected")
        return int(digits)

    def call(self) -> Call:
        start = self.at
        while self.at < len(self.text) and (self.text[self.at].isalnum() or self.text[self.at] == "_"):
            self.at += 1
        name = self.text[start : self.at]
        self.space()
        if self.at >= len(self.text) or self.text[self.at] != "(":
            raise self.error(f"{name!r} is not a value: a function is followed by '('")
        function = FUNCTIONS.get(name)
        if function is None:
            self.at = start
            raise self.error(f"unknown function {name!r} (supported: {', '.join(sorted(FUNCTIONS))})")
        self.at += 1
        arguments: list[Value] = []
        self.space()
        if self.at < len(self.text) and self.text[self.at] == ")":
            self.at += 1
        else:
            while True:
                arguments.append(self.value())
                self.space()
                if self.at < len(self.text) and self.text[self.at] == ",":
                    self.at += 1
                    continue
                if self.at < len(self.text) and self.text[self.at] == ")":
                    self.at += 1
                    break
                raise self.error(f"',' or ')' expected in the arguments of {name}")
        _check_arguments(self, name, function, arguments)
        return Call(name, tuple(arguments))


def _ends_name(char: str) -> bool:
    return char in "/[],()'\"" or char.isspace()


def _check_arguments(parser: _Parser, name: str, function: _Function, arguments: Sequence[Value]) -> None:
    count = len(arguments)
    if count < function.least or (function.most is not None and count > function.most):
        wanted = (
            f"{function.least}"
            if function.least == function.most
            else f"{function.least} to {function.most}"
            if function.most is not None
            else f"at least {function.least}"
        )
        raise parser.error(f"{name} takes {wanted} argument(s), not {count}")
    for position in function.literal:
        if position < count and not isinstance(arguments[position], Literal):
            raise parser.error(f"argument {position + 1} of {name} must be written in the path ('text' or a number)")
    for position in _INTEGER_ARGUMENTS.get(name, ()):
        argument = arguments[position]
        if position < count and not (isinstance(argument, Literal) and isinstance(argument.value, int)):
            raise parser.error(f"argument {position + 1} of {name} must be a whole number")
    if name == "replaceRegex":
        argument = arguments[1]
        assert isinstance(argument, Literal)
        try:
            re.compile(str(argument.value))
        except re.error as error:
            raise parser.error(f"replaceRegex: not a regular expression: {error}") from None
