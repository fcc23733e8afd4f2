"""A small attribute expression language, after NiFi's: `${attribute:function(args)}`.

    "file-${filename:toUpper()}.txt"         text with embedded expressions
    "${count:plus(1):mod(10):equals(0)}"    functions chain left to right
    "${now()}" "${UUID()}" "${literal('x')}" subject functions
    "${anyAttribute('a', 'b'):isEmpty()}"    one condition over several attributes
    "${allAttributes('a', 'b'):join(',')}"   ... or their values joined (or counted)
    "$${not an expression}" "cost: $$5"      "$$" before "{" escapes a "$" (only there)

Arguments are 'quoted' or "quoted" text, numbers, true/false, or nested `${...}`.
`compile_expression` parses once (errors name the offending position, an unknown
function, a wrong number of arguments, an invalid constant pattern); the result's
`evaluate(flowfile)` returns a string (booleans as "true"/"false", missing as "", a
date, from `now()` or `toDate()`, as Java's `Date.toString()` writes it).

The functions over several attributes (`anyAttribute`, `allAttributes`,
`anyMatchingAttribute`, `allMatchingAttributes`, `anyDelineatedValue`,
`allDelineatedValues`) apply the rest of the chain to each value they select: the
`any` ones are true when the chain is true for one value, the `all` ones when it is
for every value, unless the chain ends with `join(delimiter)` or `count()`, which make
one value of them all (joined, or the number that are neither missing nor false).

Evaluation never fails otherwise than with an `ExpressionError` naming the expression
(`ExpressionEvaluationError`, with `expression` and `reason`), whatever the attributes
hold; processors route the FlowFile concerned, not the batch. Limits, because attribute
values come from outside and must not exhaust the node:

- a string a function returns, and the expressions' share of a result, are at most
  `MAX_STRING_LENGTH` characters (1 Mi); the functions whose result grows with their
  arguments (padLeft, padRight, append, prepend, replace, replaceAll) refuse before
  building a longer one, the others (toUpper, ...) grow a value by a few times at
  most. One evaluation builds at most `MAX_BUILT_PER_EVALUATION` characters in all;
- numbers are NiFi's: integers are 64-bit (an overflow is an error, not a bigger
  number), decimals finite, and a number's text is at most 64 characters;
- expressions nest at most `MAX_NESTING` deep;
- patterns (matches, find, replaceAll), constant or from an attribute, are Python
  regular expressions of at most 512 characters, run only when the worst case of
  their backtracking on the value at hand fits the evaluation's budget of
  `REGEX_STEPS_PER_EVALUATION` steps and holds at most `REGEX_STACK_DEPTH` entries
  of the engine's stack (`flow.bounded_regex` explains the bounds: nested or
  adjacent quantifiers on a long value are refused, not run for minutes).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import math
import random as _random
import re
import socket
import threading
import time
import uuid as _uuid
from collections.abc import Callable

from . import expression_encodings as encodings
from . import expression_math
from .bounded_regex import (
    REGEX_STACK_DEPTH,
    REGEX_STEPS_PER_EVALUATION,
    UNBOUNDED,
    BoundedPattern,
    PatternRefused,
    bounded,
)
from .errors import ExpressionError
from .expression_dates import DatePatternError, format_millis, parse_millis, parse_pattern, zone
from .java_text import double_text

MAX_STRING_LENGTH = 1 << 20
MAX_BUILT_PER_EVALUATION = 32 * MAX_STRING_LENGTH
MAX_NESTING = 32
MAX_NUMBER_TEXT = 64
MAX_ARGUMENTS = 256  # of a function that takes any number (in)
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
# replaceAll's Python callback per match, counted against the pattern budget: it costs
# about as much as this many backtracking steps.
_STEPS_PER_CALLBACK = 50
# evaluateELString(), counted the same way: a value whose expressions evaluate
# themselves again, several times over, ends within the budget
_STEPS_PER_EVALUATION = 1000

# NiFi's escapes in quoted text; a backslash before anything else is kept.
_ESCAPES = {"'": "'", '"': '"', "r": "\r", "n": "\n", "t": "\t"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_counter = itertools.count()
# How Java's Date.toString() writes a date (in the JVM's zone: here the machine's)
_DATE_TEXT = "EEE MMM dd HH:mm:ss zzz yyyy"


class JavaDate(int):
    """A date of NiFi's expression language: milliseconds since the epoch, which as a
    result is written as Java's `Date.toString()` writes it. Arithmetic on it makes a
    plain number (`${now():minus(1000)}` is milliseconds), as `toNumber()` does."""

    __slots__ = ()


class ExpressionEvaluationError(ExpressionError):
    """An expression failed on a FlowFile: `expression` is its text, `reason` what went wrong."""

    def __init__(self, expression: str, reason: str):
        super().__init__(f"expression {_shorten(expression, 200)!r} failed: {reason}")
        self.expression = expression
        self.reason = reason

    def __reduce__(self):
        return type(self), (self.expression, self.reason)


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _shown(value) -> str:
    return repr(_shorten(value)) if isinstance(value, str) else repr(value)


def _checked(number):
    """`number` if NiFi could hold it (a 64-bit integer, a finite decimal)."""
    if isinstance(number, int) and not _LONG_MIN <= number <= _LONG_MAX:
        raise ExpressionError("the result does not fit in a 64-bit integer")
    if isinstance(number, float) and not math.isfinite(number):
        raise ExpressionError(f"the result is not a finite number ({number})")
    return number


def _number(value):
    if isinstance(value, bool):
        raise ExpressionError(f"expected a number, got a boolean {value}")
    if isinstance(value, (int, float)):
        return _checked(value)
    if value is None or value == "":
        raise ExpressionError("expected a number, got an empty value")
    text = str(value)
    if len(text) > MAX_NUMBER_TEXT:
        raise ExpressionError(
            f"expected a number, got {_shown(text)} (a number has at most {MAX_NUMBER_TEXT} characters)"
        )
    try:
        number = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise ExpressionError(f"expected a number, got {_shown(text)}") from None
    try:
        return _checked(number)
    except ExpressionError:
        raise ExpressionError(f"expected a 64-bit integer or a finite decimal, got {_shown(text)}") from None


def _text(value) -> str:
    if type(value) is str:  # most values: first
        return value
    if value is None:
        return ""
    if type(value) is JavaDate:
        return format_millis(value, _DATE_TEXT)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_text(value)
    return str(value)


def is_true(text: str) -> bool:
    """How a boolean expression's text reads: "true", whatever the case and spaces."""
    return text.strip().lower() == "true"


def _truth(value) -> bool:
    if isinstance(value, bool):
        return value
    return is_true(_text(value))


def _room(length: int) -> None:
    """Refuse, before building it, a string longer than the limit."""
    if length > MAX_STRING_LENGTH:
        raise ExpressionError(f"the result would be {length:,} characters long; the limit is {MAX_STRING_LENGTH:,}")


class _Meter:
    """What one evaluation has spent: characters built and pattern steps."""

    __slots__ = ("built", "depth", "flowfile", "steps")

    def __init__(self, flowfile=None):
        self.built = 0
        self.steps = 0
        self.flowfile = flowfile  # what evaluateELString() evaluates against
        self.depth = 0  # of evaluateELString() within evaluateELString()

    def charge_string(self, length: int) -> None:
        _room(length)
        self.built += length
        if self.built > MAX_BUILT_PER_EVALUATION:
            raise ExpressionError(f"the expression built more than {MAX_BUILT_PER_EVALUATION:,} characters in all")

    def charge_steps(self, steps: int) -> None:
        self.steps += steps
        if self.steps > REGEX_STEPS_PER_EVALUATION:
            raise ExpressionError(f"the expression's patterns took more than {REGEX_STEPS_PER_EVALUATION:,} steps")

    def charge_pattern(self, pattern: str, subject: str, *, search: bool) -> BoundedPattern:
        """`pattern` (`.compiled`), once its worst case on `subject` fits the budget."""
        try:
            guarded = bounded(pattern)
        except PatternRefused as error:
            raise ExpressionError(str(error)) from None
        estimate = guarded.estimate(len(subject), search=search)
        if estimate.depth > REGEX_STACK_DEPTH:
            raise ExpressionError(
                f"pattern {_shown(pattern)} could hold {estimate.depth:,} backtracking entries at once on "
                f"{len(subject):,} characters, past the limit of {REGEX_STACK_DEPTH:,}: repeat a character class "
                "rather than a group, avoid repeats of repeats, or match a shorter value"
            )
        self.steps += estimate.steps
        if self.steps > REGEX_STEPS_PER_EVALUATION:
            many = f"{estimate.steps:,}" if estimate.steps < UNBOUNDED else "more than 10**24"
            raise ExpressionError(
                f"pattern {_shown(pattern)} could backtrack for {many} steps on {len(subject):,} characters, "
                f"past the budget of {REGEX_STEPS_PER_EVALUATION:,}: avoid nested or adjacent quantifiers "
                "that can match the same text, or match a shorter value"
            )
        return guarded


def _pad(value, width, fill, *, left: bool) -> str:
    text = _text(value)
    width = int(_number(width))
    _room(width)
    fill = _text(fill)[:1] or "_"
    return text.rjust(width, fill) if left else text.ljust(width, fill)


def _pad_left(v, n, c="_"):
    return _pad(v, n, c, left=True)


def _pad_right(v, n, c="_"):
    return _pad(v, n, c, left=False)


def _append(v, x):
    head, tail = _text(v), _text(x)
    _room(len(head) + len(tail))
    return head + tail


def _prepend(v, x):
    head, tail = _text(x), _text(v)
    _room(len(head) + len(tail))
    return head + tail


def _replace(v, a, b):
    text, old, new = _text(v), _text(a), _text(b)
    _room(len(text) + text.count(old) * (len(new) - len(old)))
    return text.replace(old, new)


def _matches(meter: _Meter, v, x):
    text = _text(v)
    return meter.charge_pattern(_text(x), text, search=False).compiled.fullmatch(text) is not None


def _find(meter: _Meter, v, x):
    text = _text(v)
    return meter.charge_pattern(_text(x), text, search=True).compiled.search(text) is not None


def _replace_all(meter: _Meter, v, a, b):
    return _substitute(meter, v, a, b, count=0)


def _substitute(meter: _Meter, v, a, b, count: int):
    text = _text(v)
    guarded = meter.charge_pattern(_text(a), text, search=True)
    replacement = _python_replacement(_text(b), guarded.compiled.groups)
    if _replaced_length_bound(guarded, len(text), replacement) <= MAX_STRING_LENGTH:
        return guarded.compiled.sub(replacement, text, count=count)
    size = len(text)

    def expand(match) -> str:
        nonlocal size
        meter.charge_steps(_STEPS_PER_CALLBACK)
        expanded = match.expand(replacement)
        size += len(expanded) - (match.end() - match.start())
        _room(size)
        return expanded

    return guarded.compiled.sub(expand, text, count=count)


def _replace_first(meter: _Meter, v, a, b):
    return _substitute(meter, v, a, b, count=1)


_JAVA_REFERENCE = re.compile(r"\$(?:\d|\{)")


def _python_replacement(replacement: str, groups: int) -> str:
    """A replacement as Python's `re.sub` reads it. NiFi's (Java's) syntax, `$1` and
    `${name}` with `\\` escaping the next character, is translated where the replacement
    uses it; otherwise it is Python's own (`\\1`, `\\g<name>`), as Custody's flows wrote it."""
    if not _JAVA_REFERENCE.search(replacement):
        return replacement
    out = []
    index = 0
    while index < len(replacement):
        char = replacement[index]
        if char == "\\" and index + 1 < len(replacement):
            out.append(replacement[index + 1].replace("\\", "\\\\"))
            index += 2
        elif char == "$" and replacement.startswith("{", index + 1):
            end = replacement.find("}", index)
            if end < 0:
                raise ExpressionError(f"unterminated group reference in replacement {_shown(replacement)}")
            out.append(f"\\g<{replacement[index + 2 : end]}>")
            index = end + 1
        elif char == "$" and index + 1 < len(replacement) and replacement[index + 1].isdigit():
            # Java reads a second digit only while the number still names a group
            end = index + 2
            while (
                end < len(replacement)
                and replacement[end].isdigit()
                and int(replacement[index + 1 : end + 1]) <= groups
            ):
                end += 1
            out.append(f"\\g<{replacement[index + 1 : end]}>")
            index = end
        else:
            out.append(char.replace("\\", "\\\\"))
            index += 1
    return "".join(out)


def _replaced_length_bound(guarded, length: int, replacement: str) -> int:
    """The longest text replaceAll can make of `length` characters: each of at most
    length + 1 matches adds the replacement, whose group references (each has a
    backslash) expand to text of the match (matches do not overlap), or to anything of
    the subject when a lookaround captured it."""
    references = replacement.count("\\")
    each_reference = length if not guarded.looks_around else (length + 1) * length
    return length + (length + 1) * len(replacement) + references * each_reference


def _evaluate_el_string(meter: _Meter, v):
    """The subject read as an expression and evaluated against the same FlowFile."""
    text = _text(v)
    if "$" not in text:
        return text
    if meter.depth >= MAX_NESTING:
        raise ExpressionError(f"evaluateELString() nests more than {MAX_NESTING} deep")
    meter.charge_steps(_STEPS_PER_EVALUATION)
    expression = _compiled(text) if len(text) <= _CACHED_TEXT else compile_expression(text)
    meter.depth += 1
    try:
        return expression.render_within(meter)
    finally:
        meter.depth -= 1


_CACHED_TEXT = 4096


@functools.lru_cache(maxsize=256)
def _compiled(text: str) -> Expression:
    return compile_expression(text)


def _math(v, method, argument=None):
    subject = _number(v)
    return expression_math.run(_text(method), _plain(subject), None if argument is None else _plain(_number(argument)))


def _is_number_value(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _plain(number):
    """A number without its date-ness (`toNumber()` of a date is its milliseconds)."""
    return int(number) if type(number) is JavaDate else number


def _divide(v, x):
    """Java's division: whole numbers divide whole, the quotient cut toward zero."""
    left, right = _plain(_number(v)), _plain(_number(x))
    if isinstance(left, int) and isinstance(right, int):
        quotient = abs(left) // abs(right)
        return _checked(quotient if (left < 0) == (right < 0) else -quotient)
    return _checked(left / right)


def _mod(v, x):
    """Java's remainder: it takes the sign of the dividend (-7 mod 3 is -1)."""
    left, right = _plain(_number(v)), _plain(_number(x))
    if isinstance(left, int) and isinstance(right, int):
        remainder = abs(left) % abs(right)
        return -remainder if left < 0 else remainder
    if right == 0:
        raise ZeroDivisionError("float modulo")
    return _checked(math.fmod(left, right))


def _whole(v):
    """toNumber(): a whole number, a decimal cut toward zero as NiFi's is."""
    number = _plain(_number(v))
    return int(number) if isinstance(number, float) else number


def _arithmetic(operation: Callable) -> Callable:
    def apply(v, x):
        return _checked(operation(_number(v), _number(x)))

    return apply


FUNCTIONS: dict[str, Callable] = {
    "toUpper": lambda v: _text(v).upper(),
    "toLower": lambda v: _text(v).lower(),
    "trim": lambda v: _text(v).strip(),
    "length": lambda v: len(_text(v)),
    "isEmpty": lambda v: _text(v).strip() == "",
    "isNull": lambda v: v is None,
    "notNull": lambda v: v is not None,
    "not": lambda v: not _truth(v),
    "equals": lambda v, x: _text(v) == _text(x),
    "equalsIgnoreCase": lambda v, x: _text(v).lower() == _text(x).lower(),
    "notEquals": lambda v, x: _text(v) != _text(x),
    "contains": lambda v, x: _text(x) in _text(v),
    "startsWith": lambda v, x: _text(v).startswith(_text(x)),
    "endsWith": lambda v, x: _text(v).endswith(_text(x)),
    "matches": _matches,
    "find": _find,
    "replace": _replace,
    "replaceAll": _replace_all,
    "replaceFirst": _replace_first,
    "append": _append,
    "prepend": _prepend,
    "substring": lambda v, a, b=None: _text(v)[int(_number(a)) : None if b is None else int(_number(b))],
    "substringBefore": lambda v, x: _text(v).split(_text(x), 1)[0],
    "substringAfter": lambda v, x: _text(v).split(_text(x), 1)[1] if _text(x) in _text(v) else _text(v),
    "padLeft": _pad_left,
    "padRight": _pad_right,
    "gt": lambda v, x: _number(v) > _number(x),
    "ge": lambda v, x: _number(v) >= _number(x),
    "lt": lambda v, x: _number(v) < _number(x),
    "le": lambda v, x: _number(v) <= _number(x),
    "plus": _arithmetic(lambda a, b: a + b),
    "minus": _arithmetic(lambda a, b: a - b),
    "multiply": _arithmetic(lambda a, b: a * b),
    "divide": _divide,
    "mod": _mod,
    "toNumber": _whole,
    "toDecimal": lambda v: float(_number(v)),
    "toString": lambda v: _text(v),
    "and": lambda v, x: _truth(v) and _truth(x),
    "or": lambda v, x: _truth(v) or _truth(x),
    "ifElse": lambda v, a, b: a if _truth(v) else b,
    "replaceNull": lambda v, x: x if v is None else v,
    "replaceEmpty": lambda v, x: x if _text(v).strip() == "" else v,
    "indexOf": lambda v, x: _text(v).find(_text(x)),
    "lastIndexOf": lambda v, x: _text(v).rfind(_text(x)),
    "substringBeforeLast": lambda v, x: _text(v).rsplit(_text(x), 1)[0],
    "substringAfterLast": lambda v, x: _text(v).rsplit(_text(x), 1)[-1],
    "in": lambda v, *x: _text(v) in {_text(item) for item in x},
    "isJson": lambda v: _is_json(_text(v)),
    "jsonPath": lambda v, x: _json_path(_text(v), _text(x)),
    "jsonPathDelete": lambda v, x: _json_changed(_text(v), _text(x), "delete"),
    "jsonPathSet": lambda v, x, value: _json_changed(_text(v), _text(x), "set_value", _json_value(value)),
    "jsonPathAdd": lambda v, x, value: _json_changed(_text(v), _text(x), "add", _json_value(value)),
    "jsonPathPut": lambda v, x, key, value: _json_changed(_text(v), _text(x), "put", _text(key), _json_value(value)),
    "repeat": lambda v, n, m=None: _repeat(_text(v), int(_number(n)), None if m is None else int(_number(m))),
    "format": lambda v, p, z=None: format_millis(int(_number(v)), _text(p), _zone_name(z)),
    "formatInstant": lambda v, p, z: format_millis(int(_number(v)), _text(p), _zone_name(z)),
    "toDate": lambda v, p=None, z=None: _to_date(v, p, z),
    "toInstant": lambda v, p, z: _to_date(v, p, z),
    "urlEncode": lambda v: encodings.url_encode(_text(v)),
    "urlDecode": lambda v: encodings.url_decode(_text(v)),
    "base64Encode": lambda v: encodings.base64_encode(_text(v)),
    "base64Decode": lambda v: encodings.base64_decode(_text(v)),
    "escapeJson": lambda v: encodings.escape_json(_text(v)),
    "unescapeJson": lambda v: encodings.unescape_json(_text(v)),
    "escapeXml": lambda v: encodings.escape_xml(_text(v)),
    "unescapeXml": lambda v: encodings.unescape_xml(_text(v)),
    "escapeCsv": lambda v: encodings.escape_csv(_text(v)),
    "escapeHtml3": lambda v: encodings.escape_html(_text(v), 3),
    "escapeHtml4": lambda v: encodings.escape_html(_text(v), 4),
    "unescapeHtml3": lambda v: encodings.unescape_html(_text(v), 3),
    "unescapeHtml4": lambda v: encodings.unescape_html(_text(v), 4),
    "UUID3": lambda v, n: encodings.name_uuid(_text(v), _text(n), 3),
    "UUID5": lambda v, n: encodings.name_uuid(_text(v), _text(n), 5),
    "math": _math,
    "evaluateELString": _evaluate_el_string,
    "unescapeCsv": lambda v: encodings.unescape_csv(_text(v)),
    "hash": lambda v, a: encodings.hash_text(_text(v), _text(a)),
    "toRadix": lambda v, r, w=0: encodings.to_radix(int(_number(v)), int(_number(r)), int(_number(w))),
    "fromRadix": lambda v, r: encodings.from_radix(_text(v), int(_number(r))),
    "getDelimitedField": lambda v, i, d=",", q='"', e="\\", s=False: encodings.delimited_field(
        _text(v), int(_number(i)), _text(d), _text(q), _text(e), _truth(s)
    ),
}
# The argument of these that is a date pattern, checked at parse time when it is constant.
_DATE_PATTERN_ARGUMENT = {"format": 0, "formatInstant": 0, "toDate": 0, "toInstant": 0}
# These put their value arguments into JSON: a number an expression gives is a JSON
# number, but one written as a constant is JSON text, as NiFi 2.3.0 writes it.
_JSON_VALUE_FUNCTIONS = frozenset({"jsonPathSet", "jsonPathAdd", "jsonPathPut"})
# These take the evaluation's meter first: their cost depends on the pattern.
_METERED = frozenset({"matches", "find", "replaceAll", "replaceFirst", "evaluateELString"})
# The argument of these that is a pattern, checked at parse time when it is constant.
_PATTERN_ARGUMENT = {"matches": 0, "find": 0, "replaceAll": 0, "replaceFirst": 0}

SUBJECTS: dict[str, Callable] = {
    "now": lambda: JavaDate(time.time() * 1000),
    "UUID": lambda: str(_uuid.uuid4()),
    "nextInt": lambda: next(_counter),
    "hostname": lambda: socket.gethostname(),
    "literal": lambda x: x,
    "random": lambda: _random.getrandbits(63),
    "ip": lambda: _host_address(),
    "thread": lambda: threading.current_thread().name,
    "math": lambda method: expression_math.run(_text(method), None),
    "getUri": lambda scheme, user, host, port, path, query, fragment: _get_uri(
        scheme, user, host, port, path, query, fragment
    ),
}
# Subjects that select several values, the rest of the chain applied to each (the
# arity of each: names or patterns, one or more; a value and its delimiter)
MULTIPLE_SUBJECTS: dict[str, tuple[int, int]] = {
    "anyAttribute": (1, MAX_ARGUMENTS),
    "allAttributes": (1, MAX_ARGUMENTS),
    "anyMatchingAttribute": (1, MAX_ARGUMENTS),
    "allMatchingAttributes": (1, MAX_ARGUMENTS),
    "anyDelineatedValue": (2, 2),
    "allDelineatedValues": (2, 2),
}
# Functions that make one value of the values an `all...` subject selected
AGGREGATES: dict[str, tuple[int, int]] = {"join": (1, 1), "count": (0, 0)}


def _arity(function: Callable, skip: int) -> tuple[int, int]:
    """How many arguments `function` takes after its first `skip` parameters (min, max)."""
    parameters = list(inspect.signature(function).parameters.values())[skip:]
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 1, MAX_ARGUMENTS
    required = sum(1 for p in parameters if p.default is inspect.Parameter.empty)
    return required, len(parameters)


def _is_json(text: str) -> bool:
    if not text.strip():
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _json_path(text: str, path: str) -> str:
    from .json_path import PathNotFound, compile_path, json_text

    try:
        document = json.loads(text)
    except ValueError as error:
        raise ExpressionError(f"the subject is not JSON: {error}") from None
    try:
        found = compile_path(path).evaluate(document)
    except PathNotFound:
        return ""
    except ValueError as error:
        raise ExpressionError(str(error)) from None
    if found is None:
        return ""
    return found if isinstance(found, str) else json_text(found, MAX_STRING_LENGTH)


def _get_uri(scheme, user, host, port, path, query, fragment) -> str:  # noqa: PLR0913 - NiFi's seven parts
    def part(value) -> str | None:
        return None if value is None else _text(value)

    number = -1 if port is None else int(_number(port))
    return encodings.java_uri(part(scheme), part(user), part(host), number, part(path), part(query), part(fragment))


def _json_changed(text: str, path: str, change: str, *values) -> str:
    """`text`, a JSON document, changed at `path` by `flow.json_path_update`'s `change`."""
    from . import json_path_update
    from .json_path import JsonPathError, JsonPathEvaluationError, compile_path, json_text

    try:
        document = json.loads(text)
    except ValueError as error:
        raise ExpressionError(f"the subject is not JSON: {error}") from None
    try:
        changed = getattr(json_path_update, change)(compile_path(path), document, *values)
    except (JsonPathError, JsonPathEvaluationError, json_path_update.UpdateRefused) as error:
        raise ExpressionError(str(error)) from None
    return json_text(changed, MAX_STRING_LENGTH)


def _json_value(value):
    """An expression's value as JSON takes it: text, a number, a boolean, or null."""
    return _plain(value)


def _repeat(text: str, least: int, most: int | None) -> str:
    if least < 1 or (most is not None and most < least):
        raise ExpressionError(f"repeat() takes a count of at least 1 (and a maximum no less), got {least}, {most}")
    times = least if most is None else _random.randint(least, most)
    _room(len(text) * times)
    return text * times


def _to_date(value, pattern, zone_name):
    if pattern is None:
        return JavaDate(_number(value))
    return JavaDate(parse_millis(_text(value), _text(pattern), _zone_name(zone_name)))


def _zone_name(value) -> str | None:
    return None if value is None or _text(value) == "" else _text(value)


def _host_address() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


_ARITY = {name: _arity(function, 2 if name in _METERED else 1) for name, function in FUNCTIONS.items()}
_SUBJECT_ARITY = {name: _arity(function, 0) for name, function in SUBJECTS.items()}


def _closes_an_expression(text: str) -> bool:
    """Whether `text` holds a `${` whose braces close (NiFi reads quoted text with one
    as text with expressions, and without one as plain text)."""
    start = text.find("${")
    while start >= 0:
        depth = 0
        for char in text[start + 1 :]:
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth == 0:
                return True
        start = text.find("${", start + 2)
    return False


def escaped_dollars(text: str, position: int) -> tuple[str, int, bool]:
    """The run of `$` at `position`, read by NiFi's rule: before `{`, each pair is one
    literal `$` and an odd one left starts an expression (`$${a}` is the text `${a}`,
    `$$${a}` a dollar and an expression); anywhere else the dollars are kept as they
    are (`$$5` stays `$$5`). Returns the literal text, where reading goes on (at the
    expression's `${` when one follows), and whether one does."""
    end = position
    while end < len(text) and text[end] == "$":
        end += 1
    run = end - position
    if not text.startswith("{", end):
        return "$" * run, end, False
    return "$" * (run // 2), position + run // 2 * 2, run % 2 == 1


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.position = 0
        self.depth = 0

    def error(self, message: str) -> ExpressionError:
        return ExpressionError(f"{message} at position {self.position} of {_shorten(self.text, 200)!r}")

    def peek(self, literal: str) -> bool:
        return self.text.startswith(literal, self.position)

    def expect(self, literal: str) -> None:
        if not self.peek(literal):
            raise self.error(f"expected {literal!r}")
        self.position += len(literal)

    def skip_space(self) -> None:
        while self.position < len(self.text) and self.text[self.position] in " \t":
            self.position += 1

    def template(self, stop: str | None = None):
        parts: list = []
        literal: list[str] = []
        text = self.text
        while self.position < len(text):
            if stop and text.startswith(stop, self.position):
                break
            if text[self.position] == "$":
                dollars, self.position, expression_follows = escaped_dollars(text, self.position)
                literal.append(dollars)
                if expression_follows:
                    if "".join(literal):
                        parts.append("".join(literal))
                    literal = []
                    parts.append(self.expression())
            else:
                literal.append(text[self.position])
                self.position += 1
        if literal:
            parts.append("".join(literal))
        return parts

    def expression(self):
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"expressions nest at most {MAX_NESTING} deep")
        self.expect("${")
        self.skip_space()
        subject = self.subject()
        calls = []
        self.skip_space()
        while self.peek(":"):
            self.position += 1
            self.skip_space()
            match = _IDENTIFIER.match(self.text, self.position)
            if not match:
                raise self.error("expected a function name")
            name = match.group(0)
            if any(function is None for function, _, _ in calls):
                raise self.error(
                    "join() and count() end an expression, as in NiFi; to go on from their value, "
                    "nest it: ${literal(${...}):...}"
                )
            if name in AGGREGATES:
                self.check_aggregate(name, subject)
                self.position = match.end()
                calls.append((None, self.arguments(name, AGGREGATES[name]), name))
                self.skip_space()
                continue
            if name not in FUNCTIONS:
                raise self.error(f"unknown function {name!r}")
            self.position = match.end()
            arguments = self.arguments(name, _ARITY[name])
            calls.append((FUNCTIONS[name], arguments, name))
            self.skip_space()
        self.expect("}")
        self.depth -= 1
        return ("expr", subject, calls)

    def check_aggregate(self, name: str, subject) -> None:
        if subject[0] != "multi" or not subject[1].startswith("all"):
            raise self.error(f"{name}() follows allAttributes, allMatchingAttributes or allDelineatedValues only")

    def subject(self):
        if self.peek("'") or self.peek('"'):
            return ("attr", self.quoted())
        match = _IDENTIFIER.match(self.text, self.position)
        if not match:
            raise self.error("expected an attribute name or a function")
        name = match.group(0)
        if name in MULTIPLE_SUBJECTS and self.text.startswith("(", match.end()):
            self.position = match.end()
            return ("multi", name, self.arguments(name, MULTIPLE_SUBJECTS[name]))
        if self.text.startswith("(", match.end()):
            if name not in SUBJECTS:
                raise self.error(f"unknown function {name!r}")
            self.position = match.end()
            return ("call", SUBJECTS[name], self.arguments(name, _SUBJECT_ARITY[name]), name)
        self.position = match.end()
        return ("attr", name)

    def quoted(self) -> str:
        """Quoted text, with NiFi's escapes: \\' \\" \\r \\n \\t are the character, and
        any other backslash stays, with what follows it (so that a pattern's \\d or \\.
        reaches the regular expression as written; \\\\ stays two backslashes, as in NiFi)."""
        quote = self.text[self.position]
        self.position += 1
        out = []
        while self.position < len(self.text):
            char = self.text[self.position]
            if char == "\\" and self.position + 1 < len(self.text):
                following = self.text[self.position + 1]
                out.append(_ESCAPES.get(following, "\\" + following))
                self.position += 2
                continue
            if char == quote:
                self.position += 1
                return "".join(out)
            out.append(char)
            self.position += 1
        raise self.error("unterminated quoted text")

    def quoted_argument(self) -> tuple[object, ...]:
        """Quoted text as an argument: a constant, or, when it holds `${`, text with
        embedded expressions, as NiFi reads `equals('${other}.bak')` (`$${` keeps one
        literally)."""
        text = self.quoted()
        if not _closes_an_expression(text):
            return ("const", text)  # `'${'` alone is text, as in NiFi
        inner = _Parser(text)
        inner.depth = self.depth
        return ("text", inner.template())

    def number(self, text: str):
        try:
            return _number(text) if "." not in text else _checked(float(text))
        except ExpressionError as error:
            raise self.error(str(error)) from None

    def arguments(self, name: str, arity: tuple[int, int]) -> list[tuple[object, ...]]:
        start = self.position
        self.expect("(")
        arguments: list[tuple[object, ...]] = []  # nodes: ("const", value), or an expression's
        self.skip_space()
        while not self.peek(")"):
            if self.peek("'") or self.peek('"'):
                arguments.append(self.quoted_argument())
            elif self.peek("${"):
                arguments.append(self.expression())
            else:
                match = _NUMBER.match(self.text, self.position)
                if match:
                    arguments.append(("const", self.number(match.group(0))))
                    self.position = match.end()
                elif self.peek("true") or self.peek("false"):
                    value = self.peek("true")
                    self.position += 4 if value else 5
                    arguments.append(("const", value))
                elif self.peek("null"):  # getUri's "no such part", as NiFi writes it
                    self.position += 4
                    arguments.append(("const", None))
                else:
                    raise self.error("expected an argument")
            self.skip_space()
            if self.peek(","):
                self.position += 1
                self.skip_space()
            elif not self.peek(")"):
                raise self.error("expected ',' or ')'")
        self.expect(")")
        self.check_arguments(name, arity, arguments, start)
        return arguments

    def check_arguments(
        self, name: str, arity: tuple[int, int], arguments: list[tuple[object, ...]], start: int
    ) -> None:
        low, high = arity
        if not low <= len(arguments) <= high:
            wanted = f"{low}" if low == high else f"{low} to {high}"
            self.position = start
            raise self.error(f"{name}() takes {wanted} argument(s), got {len(arguments)}")
        if name in _JSON_VALUE_FUNCTIONS:  # a number written as an argument is text there, as NiFi 2.3.0 puts it
            arguments[:] = [
                ("const", _text(node[1])) if node[0] == "const" and _is_number_value(node[1]) else node
                for node in arguments
            ]
        index = _DATE_PATTERN_ARGUMENT.get(name)
        if index is not None and len(arguments) > index and arguments[index][0] == "const":
            try:
                parse_pattern(_text(arguments[index][1]))
                if len(arguments) > index + 1 and arguments[index + 1][0] == "const":
                    zone(_text(arguments[index + 1][1]))
            except (DatePatternError, ValueError) as error:
                self.position = start
                raise self.error(f"{name}(): {error}") from None
        index = _PATTERN_ARGUMENT.get(name)
        if index is not None and arguments[index][0] == "const":
            try:
                bounded(_text(arguments[index][1]))
            except PatternRefused as error:
                self.position = start
                raise self.error(f"{name}(): {error}") from None


def _attribute(name: str, flowfile):
    if flowfile is None:
        return None
    if name == "uuid":
        return flowfile.id
    if name == "fileSize":
        return flowfile.size
    if name == "entryDate":
        return flowfile.entry_date
    if name == "lineageStartDate":
        return flowfile.lineage_start_date
    return flowfile.attributes.get(name)


def _evaluate(node, flowfile, meter: _Meter):
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "attr":
        return _attribute(node[1], flowfile)
    if kind == "text":
        return _joined(node[1], flowfile, meter)
    if kind == "call":
        _, function, arguments, name = node
        return _apply(name, function, (), [_evaluate(a, flowfile, meter) for a in arguments], meter)
    subject = node[1]
    if subject[0] == "multi":
        return _evaluate_multiple(subject, node[2], flowfile, meter)
    value = _evaluate(subject, flowfile, meter)
    for function, arguments, name in node[2]:
        value = _apply(name, function, (value,), [_evaluate(a, flowfile, meter) for a in arguments], meter)
    return value


def _joined(parts: list, flowfile, meter: _Meter) -> str:
    """Text and embedded expressions, evaluated and joined."""
    pieces = []
    evaluated = 0
    for part in parts:
        if isinstance(part, str):
            pieces.append(part)
            continue
        piece = _text(_evaluate(part, flowfile, meter))
        evaluated += len(piece)
        _room(evaluated)
        pieces.append(piece)
    return "".join(pieces)


def _chain(value, calls, flowfile, meter: _Meter):
    for function, arguments, name in calls:
        value = _apply(name, function, (value,), [_evaluate(a, flowfile, meter) for a in arguments], meter)
    return value


def _evaluate_multiple(subject, calls, flowfile, meter: _Meter):
    """A chain after anyAttribute() and its kin: each selected value through the calls
    up to join() or count() (if the chain ends with one), then the any/all or that."""
    _, name, arguments = subject
    # nothing selected: the chain runs once on a missing value, as in NiFi (so that
    # `${allMatchingAttributes('x.*'):isEmpty()}` is true when there is none)
    values = _selected(name, [_evaluate(a, flowfile, meter) for a in arguments], flowfile, meter) or [None]
    split = next((index for index, call in enumerate(calls) if call[0] is None), len(calls))
    results = []
    for value in values:
        meter.charge_steps(_STEPS_PER_CALLBACK)
        results.append(_chain(value, calls[:split], flowfile, meter))
    if split == len(calls):
        if name.startswith("any"):
            return any(_truth(result) for result in results if result is not None)
        return bool(results) and all(result is not None and _truth(result) for result in results)
    _, aggregate_arguments, aggregate = calls[split]
    present = [result for result in results if result is not None]
    if aggregate == "count":
        value = sum(1 for result in present if result is not False)
    else:
        delimiter = _text(_evaluate(aggregate_arguments[0], flowfile, meter))
        value = _apply("join", delimiter.join, (), [[_text(result) for result in present]], meter)
    return value


def _selected(name: str, arguments: list, flowfile, meter: _Meter) -> list:
    """The values a multiple subject selects: named attributes (None where missing),
    attributes whose names match a pattern (Java's `matches`: the whole name), or the
    pieces of a value split as Java's String.split splits it (the delimiter a pattern)."""
    if name in ("anyAttribute", "allAttributes"):
        return [_attribute(_text(argument), flowfile) for argument in arguments]
    if name in ("anyMatchingAttribute", "allMatchingAttributes"):
        if flowfile is None:
            return []
        names = list(flowfile.attributes)
        if "uuid" not in flowfile.attributes:
            names.insert(0, "uuid")
        patterns = [_text(argument) for argument in arguments]
        return [
            _attribute(attribute, flowfile)
            for attribute in names
            if any(meter.charge_pattern(p, attribute, search=False).compiled.fullmatch(attribute) for p in patterns)
        ]
    text, delimiter = arguments[0], arguments[1]
    if text is None or delimiter is None:
        return []
    return _java_split(meter, _text(text), _text(delimiter))


def _java_split(meter: _Meter, text: str, delimiter: str) -> list[str]:
    """Java's `text.split(delimiter)`: a zero-width match at the start makes no leading
    empty piece, and trailing empty pieces are dropped (an unmatched text is itself)."""
    pattern = meter.charge_pattern(delimiter, text, search=True).compiled
    pieces: list[str] = []
    start = 0
    for match in pattern.finditer(text):
        if match.end() == 0:
            continue
        pieces.append(text[start : match.start()])
        start = match.end()
    if not pieces:
        return [text]
    pieces.append(text[start:])
    while pieces and pieces[-1] == "":
        pieces.pop()
    return pieces


def _apply(name: str, function: Callable, subject: tuple, arguments: list, meter: _Meter):
    try:
        if name in _METERED:
            result = function(meter, *subject, *arguments)
        else:
            result = function(*subject, *arguments)
        if isinstance(result, str):
            meter.charge_string(len(result))
        return result
    except Exception as error:  # noqa: BLE001 - whatever a function raises, the expression failed
        on = f" on {_shown(subject[0])}" if subject else ""
        reason = str(error) if isinstance(error, ExpressionError) else f"{type(error).__name__}: {error}"
        raise ExpressionError(f"{name}() failed{on}: {reason}") from None


class Expression:
    def __init__(self, text: str, parts: list):
        self.text = text
        self._parts = parts
        self.is_literal = all(isinstance(p, str) for p in parts)
        self._literal = "".join(parts) if self.is_literal else None

    def evaluate(self, flowfile=None) -> str:
        """The text of the expression for `flowfile`. Raises `ExpressionEvaluationError`
        (an `ExpressionError`) naming the expression and the reason, never anything else."""
        if self._literal is not None:
            return self._literal
        try:
            return self._render(flowfile, _Meter(flowfile))
        except ExpressionError as error:
            raise ExpressionEvaluationError(self.text, str(error)) from None
        except Exception as error:  # noqa: BLE001 - e.g. MemoryError, RecursionError: still the expression's
            raise ExpressionEvaluationError(self.text, f"{type(error).__name__}: {error}") from None

    def render_within(self, meter: _Meter) -> str:
        """The text for the FlowFile of an evaluation under way, charged to its meter."""
        if self._literal is not None:
            return self._literal
        return self._render(meter.flowfile, meter)

    def _render(self, flowfile, meter: _Meter) -> str:
        return _joined(self._parts, flowfile, meter)

    def evaluate_boolean(self, flowfile=None) -> bool:
        return is_true(self.evaluate(flowfile))

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"


def compile_expression(text: str) -> Expression:
    """Parse `text` once. Raises `ExpressionError` saying what is wrong and where."""
    parser = _Parser(str(text))
    try:
        parts = parser.template()
    except RecursionError:
        raise parser.error("the expression is nested too deeply") from None
    return Expression(str(text), parts)
