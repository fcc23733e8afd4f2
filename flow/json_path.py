r"""JsonPath: a parser and an evaluator of the Jayway (Goessner) syntax that NiFi's
EvaluateJsonPath takes, over documents as `json.loads` gives them.

`compile_path(text)` reads a path once (`JsonPathError` names the position and what is
wrong); `JsonPath.evaluate(document)` applies it. A *definite* path (no deep scan,
wildcard, filter, slice or union of indexes; a union of names only at its end) gives
one value, or raises `PathNotFound` when nothing matches; an *indefinite* one gives
the list of what matched, empty when nothing did. This is Jayway's contract, which
EvaluateJsonPath builds on: not found is a definite path's outcome only.

Grammar (whitespace only inside brackets and filters):

    path       = root segment*
    root       = "$" | "@"          @ is the node a filter tests; at the top, the document
    segment    = "." name | ".*" | ".." name | "..*" | ".." bracket | bracket
    name       = one or more characters but . [ ] ( ) ' " , * ? < > = ! & | ~ and whitespace
    bracket    = "[" selector "]"
    selector   = "*"
               | quoted ("," quoted)*           a name, or a union of names
               | integer ("," integer)*         an index (negative: from the end), or a union
               | [integer] ":" [integer] [":" [integer]]   a slice, as Python slices
               | "?(" or ")"                    a filter
    quoted     = "'" chars "'" | '"' chars '"'  escapes \\ \' \" \/ \b \f \n \r \t \uXXXX
    or         = and ("||" and)*
    and        = unary ("&&" unary)*
    unary      = "!" unary | "(" or ")" | test
    test       = operand [compare operand] | operand ("in" | "nin") list | operand "=~" regex
    compare    = "==" | "!=" | "<" | "<=" | ">" | ">="
    operand    = path | number | quoted | "true" | "false" | "null" | list
    list       = "[" [operand-literal ("," operand-literal)*] "]"
    regex      = "/" chars "/" flags             \/ for a slash; flags among i m s x (u U accepted)

A path that starts with neither `$` nor `@` is read as `$.` before it (`$` before a
bracket), as Jayway reads it.

What each selector takes from a node:
    name          an object's member of that name
    names         at the end of the path, one object holding those of the names the
                  node has (Jayway's merge: `$.book[0]['author','title']`); elsewhere
                  each of their values
    *             an object's member values, an array's elements
    index, slice  an array's elements
    filter        an array's elements that pass; an object itself, if it passes
A scalar gives nothing to any selector. A deep scan `..s` applies `s` to the node and
to every object and array under it, in document order (pre-order); `..[?(f)]` tests
each of them itself, and `..['a','b']` takes only objects that have all the names.

Filters, as Jayway evaluates them: a path operand is the value at that path from @ or
$ (a definite path) or the list of what it matched (an indefinite one); a path alone
tests that it matched, whatever the value (null and false included). `==` holds
between equal values of one type, and between a number and a string that reads as that
number; `!=` is its negation, so it holds for a missing member. `<` `<=` `>` `>=`
compare two numbers or two strings, and are false otherwise. `=~` fully matches a
string, a number's text, or any string element of an array. `in` and `nin` look a
value up in a list literal.

Where this differs from Jayway: slices take a step, and clamp as Python's do (Jayway
ignores the step); functions (`length()`, `min()`...) and the operators `size`,
`empty`, `subsetof`, `anyof`, `noneof`, `contains` are refused when the path is read;
patterns are Python's regular expressions. Numbers come back as Python reads them:
integers and decimals alike, except that Python writes 1e+20 where Java writes 1.0E20.

Guards, because documents come from outside: filters nest at most `MAX_NESTING` deep;
one evaluation takes at most its `budget` of steps (nodes visited, members tried,
conditions tested: a deep scan inside a filter inside a deep scan is quadratic) and
raises `JsonPathEvaluationError` past it; a pattern runs only when its worst case on
the value at hand fits the regular expression budget (`flow.bounded_regex`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from .bounded_regex import REGEX_STACK_DEPTH, REGEX_STEPS_PER_EVALUATION, BoundedPattern, PatternRefused, bounded

MAX_NESTING = 32
DEFAULT_BUDGET = 10_000_000

_NAME_STOP = frozenset(".[]()'\",*?<>=!&|~ \t\r\n")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"-?\d+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_REGEX_FLAGS = {"i": "i", "m": "m", "s": "s", "x": "x", "u": "", "U": ""}
_REFUSED_OPERATORS = ("size", "empty", "subsetof", "anyof", "noneof", "contains")


class JsonPathError(ValueError):
    """A path that cannot be read: `position` (0-based, in the text as given) is where,
    `reason` what is wrong there."""

    def __init__(self, text: str, position: int, reason: str):
        super().__init__(f"invalid JsonPath {text!r} at position {position}: {reason}")
        self.text = text
        self.position = position
        self.reason = reason


class PathNotFound(LookupError):
    """A definite path that matched nothing (Jayway's PathNotFoundException)."""


class JsonPathEvaluationError(ValueError):
    """An evaluation given up: past its budget of steps, or a pattern whose worst case on
    a value would be too costly."""


# -- the parsed path --------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Names:
    names: tuple[str, ...]


@dataclass(frozen=True)
class Wildcard:
    pass


@dataclass(frozen=True)
class Index:
    index: int


@dataclass(frozen=True)
class Indexes:
    indexes: tuple[int, ...]


@dataclass(frozen=True)
class Slice:
    start: int | None
    end: int | None
    step: int | None


@dataclass(frozen=True)
class Filter:
    condition: Condition


Selector = Name | Names | Wildcard | Index | Indexes | Slice | Filter


@dataclass(frozen=True)
class Segment:
    selector: Selector
    deep: bool = False


@dataclass(frozen=True)
class Literal:
    value: object


@dataclass(frozen=True)
class Or:
    parts: tuple[Condition, ...]


@dataclass(frozen=True)
class And:
    parts: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    part: Condition


@dataclass(frozen=True)
class Exists:
    path: JsonPath


@dataclass(frozen=True)
class Compare:
    operator: str
    left: Operand
    right: Operand


@dataclass(frozen=True)
class Member:
    left: Operand
    values: tuple[object, ...]
    negated: bool


@dataclass(frozen=True)
class Matches:
    left: Operand
    pattern: BoundedPattern
    source: str


Condition = Or | And | Not | Exists | Compare | Member | Matches


class JsonPath:
    """A compiled path: `text` as given, `segments`, `definite` (see the module docstring);
    `relative` for a path from @ (the node a filter tests)."""

    def __init__(self, text: str, segments: tuple[Segment, ...], relative: bool):
        self.text = text
        self.segments = segments
        self.relative = relative
        self.definite = _is_definite(segments)

    def evaluate(self, document, *, budget: int = DEFAULT_BUDGET):
        """The value at this path in `document` (a definite path; `PathNotFound` when there
        is none), or the list of the values that matched (an indefinite path). Raises
        `JsonPathEvaluationError` past `budget` steps or for a pattern too costly to run."""
        matches = _select(self.segments, document, document, _Steps(budget))
        if self.definite:
            if not matches:
                raise PathNotFound(f"no value at {self.text}")
            return matches[0]
        return matches

    def __repr__(self) -> str:
        return f"JsonPath({self.text!r})"


Operand = Literal | JsonPath


def compile_path(text: str) -> JsonPath:
    """Read `text` once. Raises `JsonPathError` saying where and what is wrong."""
    text = str(text)
    if not text.strip():
        raise JsonPathError(text, 0, "the path is empty (a path starts with $)")
    if text[0] in "$@":
        prefix = ""
    elif text[0] == "[":
        prefix = "$"
    else:
        prefix = "$."
    parser = _Parser(text, prefix)
    try:
        path = parser.path(top=True)
    except RecursionError:
        raise parser.error("the path nests too deeply") from None
    if not parser.at_end():
        parser.unexpected()
    return path


def _is_definite(segments: tuple[Segment, ...]) -> bool:
    last = len(segments) - 1
    for position, segment in enumerate(segments):
        selector = segment.selector
        if segment.deep or isinstance(selector, (Wildcard, Filter, Indexes, Slice)):
            return False
        if isinstance(selector, Names) and position != last:
            return False
    return True


# -- parsing --------------------------------------------------------------------


class _Parser:
    """Recursive descent over `prefix + text`; positions in errors are the text's."""

    def __init__(self, text: str, prefix: str):
        self.text = text
        self.prefix = prefix
        self.source = prefix + text
        self.position = 0
        self.depth = 0

    # helpers

    def error(self, reason: str, position: int | None = None) -> JsonPathError:
        where = self.position if position is None else position
        return JsonPathError(self.text, max(where - len(self.prefix), 0), reason)

    def at_end(self) -> bool:
        return self.position >= len(self.source)

    def peek(self, length: int = 1) -> str:
        return self.source[self.position : self.position + length]

    def take(self, expected: str) -> bool:
        if self.source.startswith(expected, self.position):
            self.position += len(expected)
            return True
        return False

    def expect(self, expected: str, what: str) -> None:
        if not self.take(expected):
            found = self.peek()
            raise self.error(f"expected {what}, found {found!r}" if found else f"expected {what}, found the end")

    def skip_spaces(self) -> None:
        while self.peek() in (" ", "\t", "\r", "\n") and not self.at_end():
            self.position += 1

    def unexpected(self) -> None:
        found = self.peek()
        if found.isspace():
            raise self.error("unexpected whitespace: a name with spaces is written ['a name']")
        raise self.error(f"unexpected {found!r}")

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"filters nest more than {MAX_NESTING} deep")

    # paths

    def path(self, *, top: bool) -> JsonPath:
        start = self.position
        root = self.source[self.position]
        self.position += 1
        segments: list[Segment] = []
        while not self.at_end():
            character = self.peek()
            if character == ".":
                segments.append(self.dotted())
            elif character == "[":
                segments.append(Segment(self.bracket()))
            elif top:
                self.unexpected()
            else:
                break
            if not top and self.peek() == "(":
                raise self.error("functions such as length() are not supported")
        if top and self.peek() == "(":
            raise self.error("functions such as length() are not supported")
        text = self.source[start : self.position]
        return JsonPath(text if not top else self.text, tuple(segments), relative=root == "@" and not top)

    def dotted(self) -> Segment:
        deep = self.take("..")
        if not deep:
            self.position += 1
        if self.at_end():
            raise self.error("a path cannot end with '.' or '..'")
        if self.take("*"):
            return Segment(Wildcard(), deep)
        if self.peek() == "[":
            if not deep:
                raise self.error("expected a name or * after '.', found '['")
            return Segment(self.bracket(), deep=True)
        if self.peek() == ".":
            raise self.error("'...' is not a selector")
        start = self.position
        while not self.at_end() and self.peek() not in _NAME_STOP:
            self.position += 1
        if self.position == start:
            if self.peek().isspace():
                self.unexpected()
            raise self.error(f"expected a name or * after '{'..' if deep else '.'}', found {self.peek()!r}")
        if self.peek() == "(":
            raise self.error("functions such as length() are not supported")
        return Segment(Name(self.source[start : self.position]), deep)

    def bracket(self) -> Selector:
        opening = self.position
        self.position += 1
        self.skip_spaces()
        character = self.peek()
        if character == "?":
            self.position += 1
            self.expect("(", "'(' after '?' (a filter is [?(...)])")
            self.nest()
            condition = self.disjunction()
            self.depth -= 1
            self.skip_spaces()
            self.expect(")", "')' closing the filter")
            selector: Selector = Filter(condition)
        elif character == "*":
            self.position += 1
            selector = Wildcard()
        elif character in ("'", '"'):
            names = [self.quoted()]
            self.skip_spaces()
            while self.take(","):
                self.skip_spaces()
                if self.peek() not in ("'", '"'):
                    raise self.error("expected a quoted name after ',' (a union holds names or indexes, not both)")
                names.append(self.quoted())
                self.skip_spaces()
            selector = Name(names[0]) if len(names) == 1 else Names(tuple(names))
        elif character == ":" or _INTEGER.match(self.source, self.position):
            selector = self.indexes()
        elif not character:
            raise self.error("the path ends inside '['", opening)
        else:
            raise self.error(f"expected a quoted name, an index, a slice, * or ?(...) in brackets, found {character!r}")
        self.skip_spaces()
        self.expect("]", "']'")
        return selector

    def integer(self) -> int | None:
        match = _INTEGER.match(self.source, self.position)
        if match is None:
            return None
        self.position = match.end()
        return int(match.group())

    def indexes(self) -> Selector:
        first = self.integer()
        self.skip_spaces()
        if self.peek() == ":":
            bounds: list[int | None] = [first]
            while len(bounds) < 3 and self.take(":"):
                self.skip_spaces()
                bounds.append(self.integer())
                self.skip_spaces()
            if self.peek() == ":":
                raise self.error("a slice has at most start:end:step")
            start, end, step = (bounds + [None, None])[:3]
            if step == 0:
                raise self.error("a slice's step cannot be 0")
            return Slice(start, end, step)
        assert first is not None  # `bracket` came here on an integer or a ':'
        indexes = [first]
        while self.take(","):
            self.skip_spaces()
            index = self.integer()
            if index is None:
                raise self.error("expected an index after ',' (a union holds names or indexes, not both)")
            indexes.append(index)
            self.skip_spaces()
        return Index(first) if len(indexes) == 1 else Indexes(tuple(indexes))

    def quoted(self) -> str:
        quote = self.source[self.position]
        start = self.position
        self.position += 1
        pieces: list[str] = []
        while True:
            if self.at_end():
                raise self.error(f"the text quoted at position {max(start - len(self.prefix), 0)} is not closed")
            character = self.source[self.position]
            self.position += 1
            if character == quote:
                return "".join(pieces)
            if character != "\\":
                pieces.append(character)
                continue
            escaped = self.peek()
            if escaped == "u":
                digits = self.source[self.position + 1 : self.position + 5]
                if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                    raise self.error("\\u takes four hexadecimal digits")
                pieces.append(chr(int(digits, 16)))
                self.position += 5
            elif escaped in _ESCAPES:
                pieces.append(_ESCAPES[escaped])
                self.position += 1
            else:
                raise self.error(f"unknown escape \\{escaped}")

    # filters

    def disjunction(self) -> Condition:
        parts = [self.conjunction()]
        self.skip_spaces()
        while self.take("||"):
            parts.append(self.conjunction())
            self.skip_spaces()
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def conjunction(self) -> Condition:
        parts = [self.unary()]
        self.skip_spaces()
        while self.take("&&"):
            parts.append(self.unary())
            self.skip_spaces()
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def unary(self) -> Condition:
        self.skip_spaces()
        if self.peek() == "!" and self.peek(2) != "!=":
            self.position += 1
            self.nest()
            part = self.unary()
            self.depth -= 1
            return Not(part)
        if self.peek() == "(":
            self.position += 1
            self.nest()
            condition = self.disjunction()
            self.depth -= 1
            self.skip_spaces()
            self.expect(")", "')'")
            return condition
        return self.test()

    def test(self) -> Condition:
        start = self.position
        left = self.operand()
        self.skip_spaces()
        for operator in ("==", "!=", "<=", ">=", "<", ">"):
            if self.take(operator):
                if self.peek() == "=":
                    raise self.error(f"unknown operator {operator}=")
                self.skip_spaces()
                return Compare(operator, left, self.operand())
        if self.take("=~"):
            self.skip_spaces()
            return self.regex(left)
        if self.peek() == "=":
            raise self.error("'=' alone is no operator: compare with ==")
        word = _WORD.match(self.source, self.position)
        if word is not None:
            if word.group() in ("in", "nin"):
                self.position = word.end()
                self.skip_spaces()
                if self.peek() != "[":
                    raise self.error(f"{word.group()} takes a list: [value, ...]")
                values = self.literal()
                assert isinstance(values, list)
                return Member(left, tuple(values), negated=word.group() == "nin")
            if word.group() in _REFUSED_OPERATORS:
                raise self.error(f"the operator {word.group()} is not supported")
            raise self.error(f"unknown operator {word.group()!r}")
        if isinstance(left, Literal):
            raise self.error("a value alone is no condition: compare it with a path, or test a path", start)
        return Exists(left)

    def operand(self) -> Operand:
        character = self.peek()
        if character in ("@", "$"):
            self.nest()
            path = self.path(top=False)
            self.depth -= 1
            return path
        if not character:
            raise self.error("the filter ends where a value was expected")
        return Literal(self.literal())

    def literal(self) -> object:
        character = self.peek()
        if character in ("'", '"'):
            return self.quoted()
        if character == "[":
            self.position += 1
            self.nest()
            values: list[object] = []
            self.skip_spaces()
            if not self.take("]"):
                while True:
                    self.skip_spaces()
                    values.append(self.literal())
                    self.skip_spaces()
                    if self.take("]"):
                        break
                    self.expect(",", "',' or ']' in the list")
            self.depth -= 1
            return values
        number = _NUMBER.match(self.source, self.position)
        if number is not None:
            self.position = number.end()
            text = number.group()
            return int(text) if _INTEGER.fullmatch(text) else float(text)
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.source.startswith(word, self.position):
                end = self.position + len(word)
                if end >= len(self.source) or not (self.source[end].isalnum() or self.source[end] == "_"):
                    self.position = end
                    return value
        found = character if character else "the end"
        raise self.error(f"expected a path (@ or $), a number, a quoted string, true, false or null, found {found!r}")

    def regex(self, left: Operand) -> Condition:
        start = self.position
        if not self.take("/"):
            raise self.error("=~ takes a pattern between slashes: /pattern/flags")
        pieces: list[str] = []
        while True:
            if self.at_end():
                raise self.error("the pattern is not closed with '/'", start)
            character = self.source[self.position]
            self.position += 1
            if character == "/":
                break
            if character == "\\" and self.peek() == "/":
                pieces.append("/")
                self.position += 1
            elif character == "\\" and not self.at_end():
                pieces.append(character + self.source[self.position])
                self.position += 1
            else:
                pieces.append(character)
        flags = ""
        while self.peek().isalpha():
            flag = self.peek()
            if flag not in _REGEX_FLAGS:
                raise self.error(f"unknown pattern flag {flag!r} (known: i m s x)")
            flags += _REGEX_FLAGS[flag]
            self.position += 1
        pattern = "".join(pieces)
        source = f"(?{''.join(sorted(set(flags)))}:{pattern})" if flags else pattern
        try:
            guarded = bounded(source)
        except PatternRefused as error:
            raise self.error(str(error), start) from None
        return Matches(left, guarded, f"/{pattern}/{flags}")


# -- evaluating -----------------------------------------------------------------


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


class _Steps:
    """What one evaluation may still spend: steps of the walk, and steps of patterns."""

    __slots__ = ("left", "budget", "pattern_steps")

    def __init__(self, budget: int):
        self.left = budget
        self.budget = budget
        self.pattern_steps = 0

    def spend(self, count: int = 1) -> None:
        self.left -= count
        if self.left < 0:
            raise JsonPathEvaluationError(
                f"the path took more than {self.budget:,} steps on this document (a deep scan inside a filter "
                "visits the document once per node it tests)"
            )


def json_kind(value) -> str:
    """What kind of JSON value `value` (as `json.loads` gives it) is, in words."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return "a number"


def nodes_at(segments: tuple[Segment, ...], document, *, budget: int = DEFAULT_BUDGET) -> list:
    """The nodes `segments` select in `document`, themselves (not copies), so that a
    caller may change them (`flow.json_path_update`)."""
    return _select(tuple(segments), document, document, _Steps(budget))


def passing(condition: Condition, elements: list, root, *, budget: int = DEFAULT_BUDGET) -> list[int]:
    """The indexes of the `elements` that pass a filter's `condition`."""
    steps = _Steps(budget)
    return [index for index, element in enumerate(elements) if _holds(condition, element, root, steps)]


def _select(segments: tuple[Segment, ...], start, root, steps: _Steps) -> list:
    nodes = [start]
    last = len(segments) - 1
    for position, segment in enumerate(segments):
        found: list = []
        leaf = position == last
        for node in nodes:
            if segment.deep:
                _scan(segment.selector, node, root, leaf, steps, found)
            else:
                _apply(segment.selector, node, root, leaf, steps, found)
        nodes = found
        if not nodes:
            break
    return nodes


def _apply(selector: Selector, node, root, leaf: bool, steps: _Steps, found: list) -> None:
    steps.spend()
    if isinstance(node, dict):
        if isinstance(selector, Name):
            if selector.name in node:
                found.append(node[selector.name])
        elif isinstance(selector, Names):
            present = [name for name in selector.names if name in node]
            if leaf:
                found.append({name: node[name] for name in present})
            else:
                found.extend(node[name] for name in present)
        elif isinstance(selector, Wildcard):
            steps.spend(len(node))
            found.extend(node.values())
        elif isinstance(selector, Filter):
            if _holds(selector.condition, node, root, steps):
                found.append(node)
    elif isinstance(node, list):
        if isinstance(selector, Index):
            if -len(node) <= selector.index < len(node):
                found.append(node[selector.index])
        elif isinstance(selector, Indexes):
            found.extend(node[index] for index in selector.indexes if -len(node) <= index < len(node))
        elif isinstance(selector, Slice):
            chosen = node[selector.start : selector.end : selector.step]
            steps.spend(len(chosen))
            found.extend(chosen)
        elif isinstance(selector, Wildcard):
            steps.spend(len(node))
            found.extend(node)
        elif isinstance(selector, Filter):
            for element in node:
                if _holds(selector.condition, element, root, steps):
                    found.append(element)


def _containers(start) -> Iterator:
    """`start` and every object and array under it, in document order (pre-order)."""
    stack = [start]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            children = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            continue
        yield node
        stack.extend(child for child in reversed(children) if isinstance(child, (dict, list)))


def _scan(selector: Selector, start, root, leaf: bool, steps: _Steps, found: list) -> None:
    for node in _containers(start):
        steps.spend()
        if isinstance(selector, Filter):
            if _holds(selector.condition, node, root, steps):
                found.append(node)
        elif isinstance(selector, Names):
            if isinstance(node, dict) and all(name in node for name in selector.names):
                _apply(selector, node, root, leaf, steps, found)
        else:
            _apply(selector, node, root, leaf, steps, found)


def _holds(condition: Condition, node, root, steps: _Steps) -> bool:
    steps.spend()
    if isinstance(condition, Or):
        return any(_holds(part, node, root, steps) for part in condition.parts)
    if isinstance(condition, And):
        return all(_holds(part, node, root, steps) for part in condition.parts)
    if isinstance(condition, Not):
        return not _holds(condition.part, node, root, steps)
    if isinstance(condition, Exists):
        value = _value(condition.path, node, root, steps)
        return value is not MISSING and (condition.path.definite or bool(value))
    if isinstance(condition, Compare):
        left = _value(condition.left, node, root, steps)
        right = _value(condition.right, node, root, steps)
        return _compare(condition.operator, left, right)
    if isinstance(condition, Member):
        left = _value(condition.left, node, root, steps)
        found = any(_equal(left, value) for value in condition.values)
        return (not found) if condition.negated else found
    return _matches(condition, _value(condition.left, node, root, steps), steps)


def _value(operand: Operand, node, root, steps: _Steps):
    if isinstance(operand, Literal):
        return operand.value
    matches = _select(operand.segments, node if operand.relative else root, root, steps)
    if operand.definite:
        return matches[0] if matches else MISSING
    return matches


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number_in(text: str):
    if _NUMBER.fullmatch(text.strip()) is None:
        return None
    return int(text) if _INTEGER.fullmatch(text.strip()) else float(text)


def _equal(left, right) -> bool:
    if left is MISSING or right is MISSING:
        return False
    if _is_number(left):
        if _is_number(right):
            return bool(left == right)
        if isinstance(right, str):
            number = _number_in(right)
            return number is not None and left == number
        return False
    if isinstance(left, str):
        if isinstance(right, str):
            return left == right
        return _is_number(right) and _equal(right, left)
    if isinstance(left, bool) or left is None:
        return type(right) is type(left) and left == right
    if type(left) is not type(right):
        return False
    try:
        return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)
    except (RecursionError, ValueError):
        return False


def _compare(operator: str, left, right) -> bool:
    if operator == "==":
        return _equal(left, right)
    if operator == "!=":
        return not _equal(left, right)
    if not ((_is_number(left) and _is_number(right)) or (isinstance(left, str) and isinstance(right, str))):
        return False
    if operator == "<":
        return bool(left < right)
    if operator == "<=":
        return bool(left <= right)
    if operator == ">":
        return bool(left > right)
    return bool(left >= right)


def _subjects(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if _is_number(value):
        return [json.dumps(value)]
    if isinstance(value, list):
        return [
            item if isinstance(item, str) else json.dumps(item)
            for item in value
            if isinstance(item, str) or _is_number(item)
        ]
    return []


def _matches(condition: Matches, value, steps: _Steps) -> bool:
    guarded = condition.pattern
    for subject in _subjects(value):
        estimate = guarded.estimate(len(subject), search=False)
        if estimate.depth > REGEX_STACK_DEPTH:
            raise JsonPathEvaluationError(
                f"the pattern {condition.source} would hold more than {REGEX_STACK_DEPTH:,} entries of the regular "
                f"expression engine's stack on a value of {len(subject):,} characters"
            )
        steps.pattern_steps += estimate.steps
        if steps.pattern_steps > REGEX_STEPS_PER_EVALUATION:
            raise JsonPathEvaluationError(
                f"the pattern {condition.source} could take more than {REGEX_STEPS_PER_EVALUATION:,} steps on the "
                f"values of this document (a value of {len(subject):,} characters): avoid nested or adjacent "
                "quantifiers"
            )
        if guarded.compiled.fullmatch(subject) is not None:
            return True
    return False


# -- writing results ----------------------------------------------------------------


class ResultTooLong(ValueError):
    """A result whose JSON text would be longer than the limit asked for."""


def json_text(value, limit: int | None = None) -> str:
    """`value` as compact JSON text (as Jackson writes it for Jayway: no spaces, members
    in document order, non-ASCII characters as they are). With `limit`, raises
    `ResultTooLong` for a text over `limit` characters, found before the text is built
    (within the few times escapes can add) so a huge result is never held whole."""
    if limit is not None and _text_length_over(value, limit):
        raise ResultTooLong(f"its JSON text is over {limit:,} characters")
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if limit is not None and len(text) > limit:
        raise ResultTooLong(f"its JSON text is over {limit:,} characters")
    return text


def _text_length_over(value, limit: int) -> bool:
    """At least how long the JSON text of `value` is (strings counted without their
    escapes) exceeds `limit`; walks no further than needed to say so."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            total += 1 + 2 * len(item) + sum(len(key) + 2 for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            total += 1 + len(item)
            stack.extend(item)
        elif isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, float):
            total += len(repr(item))
        elif isinstance(item, int) and not isinstance(item, bool):
            total += item.bit_length() * 3 // 10 + 1
        else:
            total += 4
        if total > limit:
            return True
    return False
