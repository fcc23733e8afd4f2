"""A small attribute expression language, after NiFi's: `${attribute:function(args)}`.

    "file-${filename:toUpper()}.txt"         text with embedded expressions
    "${count:plus(1):mod(10):equals(0)}"    functions chain left to right
    "${now()}" "${UUID()}" "${literal('x')}" subject functions
    "$${not an expression}"                  "$$" escapes a "$"

Arguments are 'quoted' or "quoted" text, numbers, true/false, or nested `${...}`.
`compile_expression` parses once (errors name the offending position); the result's
`evaluate(flowfile)` returns a string (booleans as "true"/"false", missing as "").
"""

from __future__ import annotations

import itertools
import re
import socket
import time
import uuid as _uuid
from collections.abc import Callable

from .errors import ExpressionError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_counter = itertools.count()


def _number(value):
    if isinstance(value, bool):
        raise ExpressionError(f"expected a number, got a boolean {value}")
    if isinstance(value, (int, float)):
        return value
    if value is None or value == "":
        raise ExpressionError("expected a number, got an empty value")
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ExpressionError(f"expected a number, got {value!r}") from None


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _truth(value) -> bool:
    if isinstance(value, bool):
        return value
    return _text(value).strip().lower() == "true"


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
    "matches": lambda v, x: re.fullmatch(_text(x), _text(v)) is not None,
    "find": lambda v, x: re.search(_text(x), _text(v)) is not None,
    "replace": lambda v, a, b: _text(v).replace(_text(a), _text(b)),
    "replaceAll": lambda v, a, b: re.sub(_text(a), _text(b), _text(v)),
    "append": lambda v, x: _text(v) + _text(x),
    "prepend": lambda v, x: _text(x) + _text(v),
    "substring": lambda v, a, b=None: _text(v)[int(_number(a)):None if b is None else int(_number(b))],
    "substringBefore": lambda v, x: _text(v).split(_text(x), 1)[0],
    "substringAfter": lambda v, x: _text(v).split(_text(x), 1)[1] if _text(x) in _text(v) else _text(v),
    "padLeft": lambda v, n, c="_": _text(v).rjust(int(_number(n)), _text(c)[:1] or "_"),
    "gt": lambda v, x: _number(v) > _number(x),
    "ge": lambda v, x: _number(v) >= _number(x),
    "lt": lambda v, x: _number(v) < _number(x),
    "le": lambda v, x: _number(v) <= _number(x),
    "plus": lambda v, x: _number(v) + _number(x),
    "minus": lambda v, x: _number(v) - _number(x),
    "multiply": lambda v, x: _number(v) * _number(x),
    "divide": lambda v, x: _number(v) // _number(x) if isinstance(_number(v), int) and isinstance(_number(x), int) else _number(v) / _number(x),
    "mod": lambda v, x: _number(v) % _number(x),
    "toNumber": lambda v: _number(v),
    "toString": lambda v: _text(v),
    "and": lambda v, x: _truth(v) and _truth(x),
    "or": lambda v, x: _truth(v) or _truth(x),
    "ifElse": lambda v, a, b: a if _truth(v) else b,
}

SUBJECTS: dict[str, Callable] = {
    "now": lambda: int(time.time() * 1000),
    "UUID": lambda: str(_uuid.uuid4()),
    "nextInt": lambda: next(_counter),
    "hostname": lambda: socket.gethostname(),
    "literal": lambda x: x,
}


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.position = 0

    def error(self, message: str) -> ExpressionError:
        return ExpressionError(f"{message} at position {self.position} of {self.text!r}")

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
            if text.startswith("$$", self.position):
                literal.append("$")
                self.position += 2
            elif text.startswith("${", self.position):
                if literal:
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
            self.position = match.end()
            if name not in FUNCTIONS:
                raise self.error(f"unknown function {name!r}")
            arguments = self.arguments()
            calls.append((FUNCTIONS[name], arguments, name))
            self.skip_space()
        self.expect("}")
        return ("expr", subject, calls)

    def subject(self):
        if self.peek("'") or self.peek('"'):
            return ("attr", self.quoted())
        match = _IDENTIFIER.match(self.text, self.position)
        if not match:
            raise self.error("expected an attribute name or a function")
        name = match.group(0)
        self.position = match.end()
        if self.peek("("):
            if name not in SUBJECTS:
                raise self.error(f"unknown function {name!r}")
            return ("call", SUBJECTS[name], self.arguments())
        return ("attr", name)

    def quoted(self) -> str:
        quote = self.text[self.position]
        self.position += 1
        out = []
        while self.position < len(self.text):
            char = self.text[self.position]
            if char == "\\" and self.position + 1 < len(self.text):
                out.append(self.text[self.position + 1])
                self.position += 2
                continue
            if char == quote:
                self.position += 1
                return "".join(out)
            out.append(char)
            self.position += 1
        raise self.error("unterminated quoted text")

    def arguments(self) -> list:
        self.expect("(")
        arguments = []
        self.skip_space()
        while not self.peek(")"):
            if self.peek("'") or self.peek('"'):
                arguments.append(("const", self.quoted()))
            elif self.peek("${"):
                arguments.append(self.expression())
            else:
                match = _NUMBER.match(self.text, self.position)
                if match:
                    text = match.group(0)
                    arguments.append(("const", float(text) if "." in text else int(text)))
                    self.position = match.end()
                elif self.peek("true") or self.peek("false"):
                    value = self.peek("true")
                    self.position += 4 if value else 5
                    arguments.append(("const", value))
                else:
                    raise self.error("expected an argument")
            self.skip_space()
            if self.peek(","):
                self.position += 1
                self.skip_space()
            elif not self.peek(")"):
                raise self.error("expected ',' or ')'")
        self.expect(")")
        return arguments


def _evaluate(node, flowfile):
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "attr":
        name = node[1]
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
    if kind == "call":
        return node[1](*[_evaluate(a, flowfile) for a in node[2]])
    value = _evaluate(node[1], flowfile)
    for function, arguments, name in node[2]:
        try:
            value = function(value, *[_evaluate(a, flowfile) for a in arguments])
        except ExpressionError:
            raise
        except (TypeError, ValueError, ZeroDivisionError, re.error) as error:
            raise ExpressionError(f"{name}() failed on {value!r}: {error}") from None
    return value


class Expression:
    def __init__(self, text: str, parts: list):
        self.text = text
        self._parts = parts
        self.is_literal = all(isinstance(p, str) for p in parts)
        self._literal = "".join(parts) if self.is_literal else None

    def evaluate(self, flowfile=None) -> str:
        if self._literal is not None:
            return self._literal
        parts = self._parts
        if len(parts) == 1:
            return _text(_evaluate(parts[0], flowfile))
        return "".join(p if isinstance(p, str) else _text(_evaluate(p, flowfile)) for p in parts)

    def evaluate_boolean(self, flowfile=None) -> bool:
        return self.evaluate(flowfile).strip().lower() == "true"

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"


def compile_expression(text: str) -> Expression:
    parser = _Parser(str(text))
    parts = parser.template()
    return Expression(str(text), parts)
