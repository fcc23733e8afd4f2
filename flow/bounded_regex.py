"""Regular expressions whose worst case is known before they run.

Python's `re` backtracks: `(a+)+b` takes seconds on thirty characters, and a match
cannot be stopped or timed out from the engine's threads once it runs. `google-re2`
would match in linear time, but it is not a dependency of this project. So a pattern
given to the expression language (constant or taken from an attribute) is first
parsed, and its backtracking tree bounded from its structure and the subject's
length: `estimate(n)` is an upper bound on the steps a match on n characters can take,
and the caller refuses to run it past its budget. The bound grows as the real worst
case does for the shapes that blow up (nested or adjacent quantifiers, ambiguous
alternations under a quantifier) and is generous for the others, so a pattern refused
on a long subject may well be accepted on a short one.

Each pattern node gives (ways, cost): in how many ways it can match at a position
(the branches of the backtracking tree it adds) and how many steps trying all of them
takes. A sequence A B costs cost(A) + ways(A) * cost(B) (B is tried after each way A
matched), alternatives add up, a quantifier over a body of one way matches in at most
k + 1 ways with k iterations, and over an ambiguous body in the sum of its ways to the
power of each iteration count. Lookarounds and atomic groups match in one way whatever
they tried. A backreference compares up to n characters.

Memory too: the engine keeps an entry on its stack for each live iteration of a
quantified group (not of a quantified character), so `depth` bounds the entries one
match can hold: a group repeated on a long value, or repeats of repeats, hold many.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # typeshed types re's parser under the names it had before 3.11, the same modules
    import sre_constants as sre
    import sre_parse
else:
    from re import _constants as sre  # the parser's node names; stable since Python 3.11
    from re import _parser as sre_parse

MAX_PATTERN_LENGTH = 512
# The budgets of one evaluation (an expression's, a JsonPath filter's) that runs patterns.
REGEX_STEPS_PER_EVALUATION = 5_000_000
REGEX_STACK_DEPTH = 100_000  # entries of about 100-170 bytes on the regular expression engine's stack
UNBOUNDED = _CAP = 1 << 80  # beyond any budget: estimates stop growing here

_ONE_STEP = {sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.AT}
_ONE_CHARACTER = {sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN}
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}


class PatternRefused(ValueError):
    """The pattern cannot be compiled, is too long, or uses a construct not bounded here."""


class Estimate(NamedTuple):
    """The worst case of a match: `steps` taken, `depth` stack entries held at once."""

    steps: int
    depth: int


class _Shape(NamedTuple):
    ways: int  # in how many ways the node can match at a position
    cost: int  # steps to try them all
    depth: int  # stack entries one way holds


@dataclass(frozen=True)
class BoundedPattern:
    pattern: str
    compiled: re.Pattern
    tree: object  # the parsed pattern (re._parser.SubPattern)
    looks_around: bool  # a group may capture text outside the match

    def estimate(self, subject_length: int, *, search: bool) -> Estimate:
        """Upper bounds for one match on `subject_length` characters; `search` for a
        match tried at every position (search, sub)."""
        return _estimate(self.tree, subject_length, search)


@functools.lru_cache(maxsize=512)
def bounded(pattern: str) -> BoundedPattern:
    """`pattern` compiled, with what `estimate` needs. Raises `PatternRefused`."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternRefused(
            f"a pattern of {len(pattern):,} characters is too long (the limit is {MAX_PATTERN_LENGTH})"
        )
    try:
        # A pattern that a later Python may read otherwise ("possible nested set") warns;
        # for patterns from attributes the log is no place for it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            python = python_syntax(pattern)
            compiled = re.compile(python)
            tree = sre_parse.parse(python, compiled.flags)
    except (re.error, OverflowError, RecursionError) as error:
        raise PatternRefused(f"pattern {pattern!r} is not a valid regular expression ({error})") from None
    try:
        _estimate(tree, 1, False)  # refuses unknown constructs now, not at the first match
    except PatternRefused as error:
        raise PatternRefused(f"pattern {pattern!r} {error}") from None
    except RecursionError:
        raise PatternRefused(f"pattern {pattern!r} nests too deeply") from None
    return BoundedPattern(pattern, compiled, tree, _looks_around(tree))


def python_syntax(pattern: str) -> str:
    """`pattern` with Java's spelling of named groups, which NiFi's patterns use, in
    Python's: `(?<name>...)` is `(?P<name>...)` and `\\k<name>` is `(?P=name)`. Both are
    errors in Python's syntax, so no pattern written for Python changes; an escaped
    parenthesis or one in a character class is left alone."""
    if "(?<" not in pattern and "\\k<" not in pattern:
        return pattern
    out: list[str] = []
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if not in_class and pattern.startswith("k<", index + 1) and ">" in pattern[index + 3 :]:
                end = pattern.index(">", index + 3)
                out.append(f"(?P={pattern[index + 3 : end]})")
                index = end + 1
                continue
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("]", index + 1) or pattern.startswith("^]", index + 1):
                skip = 2 if pattern[index + 1] == "]" else 3
                out.append(pattern[index : index + skip])
                index += skip
                continue
        elif pattern.startswith("(?<", index) and index + 3 < len(pattern) and pattern[index + 3] not in "=!":
            out.append("(?P<")
            index += 3
            continue
        out.append(char)
        index += 1
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def _estimate(tree, subject_length: int, search: bool) -> Estimate:
    shape = _sequence(tree, subject_length)
    starts = subject_length + 1 if search else 1
    steps = min(_CAP, starts * (shape.cost + 1))
    if search:
        steps = min(steps, _tail_search_steps(tree, subject_length))
    return Estimate(steps, shape.depth)


def _tail_search_steps(tree, n: int) -> int:
    """A tighter bound for a search (search, finditer, sub) of a pattern that ends in a
    repeat of a body with one way to match (`id=(\\d+)`, `key: (.*)`): nothing after that
    repeat can fail, so once it has its minimum of iterations the match succeeds, taking
    the first way it found; it fails only short of that minimum. An attempt at a start
    that fails therefore costs the prefix and, after each of the prefix's ways, the
    minimum's iterations at most; the iterations past the minimum happen only in matches
    that succeed, whose characters a search then moves past (matches do not overlap), so
    all of them together are bounded by the subject's length. A fullmatch is not a
    search: there, `$` is implied after the repeat, which then backtracks (`_estimate`
    keeps the general bound). UNBOUNDED when the pattern does not end so."""
    items = list(tree)
    while items and items[-1][0] is sre.SUBPATTERN:  # a group at the end: its last item is the end
        items = items[:-1] + list(items[-1][1][3])
    if not items or items[-1][0] not in _REPEATS:
        return _CAP
    low, _, body = items[-1][1]
    inner = _sequence(body, n)
    if inner.ways != 1:
        return _CAP
    prefix = _sequence(items[:-1], n)
    body_cost = max(1, inner.cost)
    failing = prefix.cost + prefix.ways * (min(low, n + 1) * body_cost + 1)
    starts = n + 1
    succeeding = (n + starts * (low + 1)) * body_cost  # past each minimum, a step per character, once
    return min(_CAP, starts * (failing + 1) + succeeding)


def _looks_around(items) -> bool:
    for op, argument in items:
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            return True
        if any(_looks_around(child) for child in _children(op, argument)):
            return True
    return False


def _children(op, argument) -> list:
    """The sub-patterns of a node."""
    if op is sre.SUBPATTERN:
        return [argument[3]]
    if op is sre.ATOMIC_GROUP:
        return [argument]
    if op is sre.BRANCH:
        return list(argument[1])
    if op is sre.GROUPREF_EXISTS:
        return [branch for branch in argument[1:] if branch is not None]
    if op in _REPEATS:
        return [argument[2]]
    return []


def _sequence(items, n: int) -> _Shape:
    ways, cost, depth = 1, 0, 0
    for op, argument in items:
        node = _node(op, argument, n)
        cost = min(_CAP, cost + ways * node.cost)
        ways = min(_CAP, ways * node.ways)
        depth = min(_CAP, depth + node.depth)
    return _Shape(ways, cost, depth)


def _node(op, argument, n: int) -> _Shape:
    if op in _ONE_STEP:
        return _Shape(1, 1, 0)
    if op is sre.IN:
        return _Shape(1, len(argument), 0)
    if op is sre.SUBPATTERN:
        return _sequence(argument[3], n)
    if op is sre.ATOMIC_GROUP:
        return _Shape(1, *_sequence(argument, n)[1:])
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return _Shape(1, *_sequence(argument[1], n)[1:])
    if op is sre.BRANCH:
        return _either([_sequence(alternative, n) for alternative in argument[1]])
    if op is sre.GROUPREF_EXISTS:
        _, yes, no = argument
        return _either([_sequence(yes, n), _sequence(no, n) if no is not None else _Shape(1, 1, 0)])
    if op is sre.GROUPREF:
        return _Shape(1, n + 1, 0)
    if op in _REPEATS:
        shape = _repeat(argument, n)
        return shape._replace(ways=1) if op is sre.POSSESSIVE_REPEAT else shape
    raise PatternRefused(f"uses {op}, which expression patterns do not support")


def _either(alternatives: list[_Shape]) -> _Shape:
    return _Shape(
        min(_CAP, sum(a.ways for a in alternatives)),
        min(_CAP, sum(a.cost for a in alternatives)),
        max(a.depth for a in alternatives) + 1,
    )


def _one_character(body) -> bool:
    """The engine repeats a single character without a stack entry per iteration."""
    if len(body) != 1:
        return False
    op, argument = body[0]
    if op is sre.SUBPATTERN:
        return argument[0] is None and _one_character(argument[3])
    return op in _ONE_CHARACTER


def _repeat(argument, n: int) -> _Shape:
    low, high, body = argument
    inner = _sequence(body, n)
    body_cost = max(1, inner.cost)  # an iteration that matches nothing is still a step
    # Past `low`, an iteration that matches nothing ends the loop: at most n consume.
    iterations = min(high, low + n)
    depth = 0 if _one_character(body) else min(_CAP, iterations * (inner.depth + 1))
    if inner.ways == 1:
        return _Shape(iterations - low + 1, min(_CAP, iterations * body_cost + 1), depth)
    ways, tree, level = 0, 0, 1  # level: inner.ways ** i, the ways of i iterations
    for count in range(iterations + 1):
        if count >= low:
            ways = min(_CAP, ways + level)
        if count < iterations:
            tree = min(_CAP, tree + level * body_cost)
        if ways >= _CAP or tree >= _CAP:
            return _Shape(_CAP, _CAP, depth)
        level = min(_CAP, level * inner.ways)
    return _Shape(ways, tree + 1, depth)
