"""FlattenJson: nested JSON made one level deep (its keys joined by a separator), or a
flattened document made nested again, as NiFi's FlattenJson (which uses the
json-flattener library, 0.17.1 in NiFi 2.3.0).

Flattening walks the document depth first. An object member adds its name to the key,
after the separator; a name that is empty or holds the separator, `[` or `]` is
written `["name"]` instead (unless `ignore_reserved_characters`). An array element
adds `[i]`, or the separator and `i` in mode `dot notation`. What each mode does with
arrays:
    normal                 every element is flattened: {"a":[{"b":1}]} -> {"a[0].b":1}
    keep arrays            an array is a value: {"a":[{"b":{"c":1}}]} -> {"a":[{"b.c":1}]}
                           (the objects in it are flattened by themselves)
    dot notation           as normal, with MongoDB's indexes: {"a.0.b":1}; a name holding
                           the separator cannot be written, and the FlowFile fails
    keep primitive arrays  an array of strings, numbers, booleans and nulls is a value;
                           any other array is flattened as in normal
Empty objects and arrays stay as they are; a document that is not an object or an
array is written back as it is; an empty document becomes `null`, as NiFi writes it.

Unflattening reads each key back into its parts (names, `[i]`, `["name"]`; in `dot
notation` the parts between separators, numbers being indexes) and builds the nested
document, with null filling the array places no key named. Two keys that need one
place to be both a value and a container (`{"a":1,"a.b":2}`) send the FlowFile to
`failure`, as does content that is not JSON.

The text is written as NiFi's library writes it: numbers in Java's notation (1.0E-7;
when flattening, a decimal whose Java text has no fraction is written as the integer it
is, 1e20 as 100000000000000000000, and -0.0 as 0.0); when flattening, the keys and
string values of the top level with every character beyond ASCII, `/` and control
characters escaped (\\u00E9, \\/), those inside kept arrays and their objects with only
quotes, backslashes and control characters escaped.

Ours: the whitespace of `pretty_print` is Python's two-space indentation, not the
library's own layout (the JSON is the same); control characters in kept arrays are
escaped (the library writes some raw, which is not JSON); text after the document is
refused (NiFi's parser stops reading at the end of the first value); content over
`max_content_size` (default 100 MB: the document is held parsed in memory) goes to
`failure` unread. Every FlowFile sent to `failure` is penalized, the reason in
`flatten.error`; content that cannot be read goes there through `content_failures`.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from decimal import Decimal
from typing import TYPE_CHECKING

from ..errors import ExpressionError, UnreadableContent
from ..java_text import double_text
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..session import ProcessSession

ERROR_ATTRIBUTE = "flatten.error"
SUCCESS, FAILURE = "success", "failure"
NORMAL, KEEP_ARRAYS, DOT_NOTATION, KEEP_PRIMITIVE_ARRAYS = (
    "normal",
    "keep arrays",
    "dot notation",
    "keep primitive arrays",
)
FLATTEN, UNFLATTEN = "flatten", "unflatten"
BATCH = 16
_BRACKETS = "[]"


class FlattenError(ValueError):
    """The document cannot be flattened or unflattened; the message says why."""


# -- writing JSON text as the library does -------------------------------------------

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_STRICT_CHARACTERS = re.compile(r'["\\/\x00-\x1f\x80-\U0010ffff]')
_PLAIN_CHARACTERS = re.compile(r'["\\\x00-\x1f]')


def _escape(match: re.Match) -> str:
    character = match.group()
    if character in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[character]
    if character == "/":
        return "\\/"
    code = ord(character)
    if code > 0xFFFF:  # as UTF-16 surrogates, as Java escapes it
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


def quoted(text: str, strict: bool) -> str:
    """`text` as a JSON string: `strict` escapes `/` and every character beyond ASCII too."""
    return '"' + (_STRICT_CHARACTERS if strict else _PLAIN_CHARACTERS).sub(_escape, text) + '"'


def java_double_text(value: float) -> str:
    """`value` as Java's Double.toString writes it (`flow.java_text`); a JSON number is finite."""
    if not math.isfinite(value):
        raise FlattenError(f"{value} is not a JSON number")
    return double_text(value)


def flattened_number(value: int | float) -> str:
    """A number as the flattener writes it: through Java's BigDecimal of its text, so a
    decimal whose text has no fraction left (1.0E20) is written as an integer."""
    if isinstance(value, int):
        return str(value)
    if value == 0:
        return "0.0"
    text = java_double_text(value)
    if "E" in text:
        mantissa, exponent = text.split("E")
        if int(exponent) >= len(mantissa.split(".")[1]):
            return str(int(Decimal(text)))
    return text


def write(value, *, strict: bool, flattening: bool, indent: int | None, level: int = 0) -> str:
    """`value` as JSON text: `strict` escaping for its own keys and strings (what it holds
    is written plainly), numbers as the flattener or as Jackson writes them, compact or
    indented by `indent` spaces."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return quoted(value, strict)
    if isinstance(value, (int, float)):
        return (
            flattened_number(value)
            if flattening
            else (str(value) if isinstance(value, int) else java_double_text(value))
        )
    if isinstance(value, dict):
        items = [
            (quoted(key, strict), _write_child(item, strict, flattening, indent, level)) for key, item in value.items()
        ]
        if indent is None:
            return "{" + ",".join(f"{key}:{item}" for key, item in items) + "}"
        if not items:
            return "{ }"
        inner = " " * (indent * (level + 1))
        body = ",\n".join(f"{inner}{key} : {item}" for key, item in items)
        return "{\n" + body + "\n" + " " * (indent * level) + "}"
    if isinstance(value, list):
        elements = [_write_child(item, strict, flattening, indent, level) for item in value]
        if indent is None:
            return "[" + ",".join(elements) + "]"
        if not elements:
            return "[ ]"
        inner = " " * (indent * (level + 1))
        return "[\n" + ",\n".join(inner + element for element in elements) + "\n" + " " * (indent * level) + "]"
    raise FlattenError(f"cannot write a {type(value).__name__} as JSON")


def _write_child(item, strict: bool, flattening: bool, indent: int | None, level: int) -> str:
    # The library writes a container's own strings with its escaping, and what it holds
    # (a kept array, an object in it) through new containers, escaped plainly.
    strict = strict and not isinstance(item, (dict, list))
    return write(item, strict=strict, flattening=flattening, indent=indent, level=level + 1)


# -- flattening ---------------------------------------------------------------------


class Flattener:
    """Flattens parsed documents by one configuration (see the module docstring)."""

    def __init__(self, mode: str, separator: str, ignore_reserved: bool):
        self.mode = mode
        self.separator = separator
        self.ignore_reserved = ignore_reserved

    def flatten(self, document: object) -> object:
        """The flattened document: the flat map, or the value a document that holds no
        object member or array element is (a scalar, an empty array, a kept array)."""
        flat: dict[str, object] = {}
        root: list = []
        self._reduce(document, [], flat, root)
        return root[0] if root else flat

    def _reduce(self, value, path: list, flat: dict, root: list) -> None:
        # Iterative, as the library is: a deep document must not exhaust the stack.
        stack = [(value, path)]
        while stack:
            node, where = stack.pop()
            if isinstance(node, dict) and node:
                stack.extend((item, [*where, ("name", key)]) for key, item in reversed(list(node.items())))
            elif isinstance(node, list) and node:
                if self.mode == KEEP_ARRAYS or (
                    self.mode == KEEP_PRIMITIVE_ARRAYS and not any(isinstance(item, (dict, list)) for item in node)
                ):
                    self._put(where, [self._value(item) for item in node], flat, root)
                else:
                    stack.extend((item, [*where, ("index", index)]) for index, item in reversed(list(enumerate(node))))
            else:
                converted = self._value(node)
                if where or converted != {}:
                    self._put(where, converted, flat, root)

    def _put(self, where: list, value, flat: dict, root: list) -> None:
        if not where:
            root.append(value)
        else:
            flat[self._key(where)] = value

    def _value(self, node):
        """A value as the flat document holds it: scalars as they are, containers empty
        but in mode keep arrays (arrays kept, objects flattened by themselves)."""
        if isinstance(node, list):
            return [self._value(item) for item in node] if self.mode == KEEP_ARRAYS else []
        if isinstance(node, dict):
            if self.mode == KEEP_ARRAYS and node:
                return self.flatten(node)
            return {}
        return node

    def _key(self, where: list) -> str:
        key = ""
        for kind, part in where:
            if kind == "index":
                key += f"{self.separator}{part}" if self.mode == DOT_NOTATION else f"[{part}]"
            elif (part == "" and self.mode != DOT_NOTATION) or self._reserved(part):
                key += f'["{part}"]'
            else:
                key += (self.separator if key else "") + part
        return key

    def _reserved(self, name: str) -> bool:
        if self.ignore_reserved:
            return False
        if self.mode == DOT_NOTATION and self.separator in name:
            raise FlattenError(
                f"the key {name!r} holds the separator {self.separator!r}, which dot notation cannot write"
            )
        return any(character in name for character in (self.separator, *_BRACKETS))


# -- unflattening -------------------------------------------------------------------


class Unflattener:
    """Unflattens parsed documents by one configuration (see the module docstring)."""

    def __init__(self, mode: str, separator: str):
        self.mode = mode
        self.separator = separator
        sep = re.escape(separator)
        self._parts = re.compile(rf'\[\s*\d+\s*\]|\[\s*".*?"\s*\]|[^{sep}\[\]]+')

    def unflatten(self, document):
        if isinstance(document, list):
            return self._array(document)
        if not isinstance(document, dict):
            return document
        result = None
        for key, value in document.items():
            parts = self._split(key)
            if not parts:
                raise FlattenError(f"the key {key!r} names no place")
            if result is None:
                result = [] if parts[0][0] == "index" else {}
            container = result
            for (kind, part), (next_kind, _) in zip(parts, parts[1:], strict=False):
                container = self._child(container, kind, part, [] if next_kind == "index" else {}, key)
            kind, part = parts[-1]
            if kind == "name" and isinstance(value, list):
                value = [self.unflatten(item) if isinstance(item, dict) else self._unflat_item(item) for item in value]
            self._set(container, kind, part, value, key)
        return {} if result is None else result

    def _unflat_item(self, item):
        return self._array(item) if isinstance(item, list) else item

    def _array(self, array: list) -> list:
        return [
            self._array(item) if isinstance(item, list) else self.unflatten(item) if isinstance(item, dict) else item
            for item in array
        ]

    def _split(self, key: str) -> list[tuple[str, object]]:
        if self.mode == DOT_NOTATION:
            return [("index", int(part)) if part.isdigit() else ("name", part) for part in key.split(self.separator)]
        parts: list[tuple[str, object]] = []
        for match in self._parts.finditer(key):
            text = match.group()
            if re.fullmatch(r"\[\s*\d+\s*\]", text):
                parts.append(("index", int(text[1:-1])))
            elif re.fullmatch(r'\[\s*".*?"\s*\]', text):
                parts.append(("name", re.sub(r'"\s*\]$', "", re.sub(r'^\[\s*"', "", text))))
            else:
                parts.append(("name", text))
        return parts

    @staticmethod
    def _child(container, kind: str, part, empty, key: str):
        """The container at `part` of `container`, made (`empty`) if there is none."""
        if kind == "name":
            if not isinstance(container, dict):
                raise FlattenError(f"the key {key!r} names a member of what is an array")
            found = container.get(part)
            if found is None:
                found = container[part] = empty
        else:
            if not isinstance(container, list):
                raise FlattenError(f"the key {key!r} names an element of what is an object")
            container.extend([None] * (part + 1 - len(container)))
            found = container[part]
            if found is None:
                found = container[part] = empty
        if type(found) is not type(empty):
            raise FlattenError(f"the key {key!r} goes through a place that holds {json.dumps(found)[:40]}")
        return found

    @staticmethod
    def _set(container, kind: str, part, value, key: str) -> None:
        if kind == "name":
            if not isinstance(container, dict):
                raise FlattenError(f"the key {key!r} names a member of what is an array")
            container[part] = value
        else:
            if not isinstance(container, list):
                raise FlattenError(f"the key {key!r} names an element of what is an object")
            container.extend([None] * (part + 1 - len(container)))
            container[part] = value


# -- the processor ------------------------------------------------------------------


def separator_problem(separator: str) -> str | None:
    """What is wrong with `separator` as the library takes it, None when nothing is."""
    if len(separator) != 1:
        return f"the separator must be a single character, got {separator!r}"
    if separator == '"' or separator.isspace() or separator in _BRACKETS:
        return f"the separator cannot be a quote, whitespace or a bracket, got {separator!r}"
    return None


def transform(text: str, return_type: str, mode: str, separator: str, ignore_reserved: bool, pretty: bool) -> str:
    """The flattened (or unflattened) JSON text of `text`. Raises FlattenError."""
    indent = 2 if pretty else None
    if not text.strip():
        return "null"  # NiFi's parser reads nothing as a missing value, written null
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise FlattenError("the content is JSON nested too deeply to read") from None
    except ValueError as error:
        raise FlattenError(f"the content is not valid JSON: {error}") from None
    try:
        if return_type == FLATTEN:
            flat = Flattener(mode, separator, ignore_reserved).flatten(document)
            return write(flat, strict=True, flattening=True, indent=indent)
        return write(Unflattener(mode, separator).unflatten(document), strict=False, flattening=False, indent=indent)
    except RecursionError:
        raise FlattenError("the content is JSON nested too deeply to write") from None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


class FlattenJson(Processor):
    type_name = "FlattenJson"
    description = (
        "Flattens nested JSON content into one level of keys joined by a separator, or unflattens it, in NiFi's "
        "four modes, as NiFi's FlattenJson."
    )
    properties = (
        PropertyDescriptor(
            "separator",
            "expression",
            default=".",
            description="the one character that joins keys (not a quote, whitespace or a bracket); an expression, "
            "evaluated for each FlowFile",
        ),
        PropertyDescriptor(
            "flatten_mode",
            "choice",
            default=KEEP_ARRAYS,
            choices=(NORMAL, KEEP_ARRAYS, DOT_NOTATION, KEEP_PRIMITIVE_ARRAYS),
            description="what becomes of arrays: flattened (normal; dot notation with MongoDB's indexes), kept as "
            "values (keep arrays), kept when they hold no object or array (keep primitive arrays)",
        ),
        PropertyDescriptor(
            "ignore_reserved_characters",
            "boolean",
            default=False,
            description='write a key holding the separator or a bracket as it is, not as ["key"]',
        ),
        PropertyDescriptor("return_type", "choice", default=FLATTEN, choices=(FLATTEN, UNFLATTEN)),
        PropertyDescriptor("character_set", "string", default="UTF-8", description="of the content, read and written"),
        PropertyDescriptor("pretty_print", "boolean", default=False),
        PropertyDescriptor(
            "max_content_size",
            "size",
            default="100 MB",
            minimum=1,
            description="larger content goes to failure unread (the document is held parsed in memory)",
        ),
    )
    relationships = (SUCCESS, FAILURE)

    @classmethod
    def validate(cls, properties, dynamic):
        try:
            codecs.lookup(str(properties.get("character_set")))
        except LookupError:
            return [("character_set", f"unknown character set {properties.get('character_set')!r}")]
        separator = properties.get("separator")
        if separator is not None and separator.is_literal:
            problem = separator_problem(separator.evaluate())
            if problem is not None:
                return [("separator", problem)]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        charset = context["character_set"]
        limit = context["max_content_size"]
        unreadable = ContentFailures(self.id, context, session)
        for flowfile in session.get_batch(BATCH):
            if flowfile.size > limit:
                self._fail(
                    context,
                    session,
                    flowfile,
                    f"the content is {flowfile.size:,} bytes, over max_content_size ({limit:,})",
                )
                continue
            try:
                separator = context["separator"].evaluate(flowfile)
            except ExpressionError as error:
                self._fail(context, session, flowfile, f"separator: {error}")
                continue
            problem = separator_problem(separator)
            if problem is not None:
                self._fail(context, session, flowfile, problem)
                continue
            try:
                data = session.read_bytes(flowfile)
            except UnreadableContent as error:
                unreadable.set_aside(flowfile, error)
                continue
            # NiFi's reader puts U+FFFD for bytes that are not text in the character set.
            text = data.decode(charset, errors="replace")
            del data
            try:
                result = transform(
                    text,
                    context["return_type"],
                    context["flatten_mode"],
                    separator,
                    context["ignore_reserved_characters"],
                    context["pretty_print"],
                )
            except FlattenError as error:
                self._fail(context, session, flowfile, f"cannot {context['return_type']}: {error}")
                continue
            flowfile = session.write_bytes(flowfile, result.encode(charset, errors="replace"))
            session.transfer(flowfile, SUCCESS)
        unreadable.log()

    def _fail(self, context: ProcessContext, session: ProcessSession, flowfile, reason: str) -> None:
        context.limited_log.warning("failure", "%s: %s goes to failure: %s", self.id, flowfile.id, reason)
        flowfile = session.put_attribute(flowfile, ERROR_ATTRIBUTE, reason)
        session.transfer(session.penalize(flowfile), FAILURE)
