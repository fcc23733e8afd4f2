"""Fuzzing the expression language: any text, and expressions built from the real
function names, evaluated against any attributes, either give a string or raise an
ExpressionError, within 2 s, without building a string past the limit.

A few hundred examples per test here; CUSTODY_LONG=1 runs twenty times as many.
Hypothesis is steered (`target`) toward slow evaluations and large allocations. The
string and stack limits are lowered for the run, so that an allocation past them
shows against the memory a small evaluation needs.
"""

from __future__ import annotations

import inspect
import os
import time
import tracemalloc
from contextlib import contextmanager
from unittest import mock

from hypothesis import HealthCheck, event, given, settings, target
from hypothesis import strategies as st

from flow import expression
from flow.errors import ExpressionError
from flow.expression import FUNCTIONS, SUBJECTS, Expression, compile_expression
from flow.flowfile import FlowFile

EXAMPLES = 300 * (20 if os.environ.get("CUSTODY_LONG") == "1" else 1)
SECONDS = 2.0
LIMIT = 10_000  # characters, for the run
STACK_DEPTH = 10_000  # entries of the regular expression engine's stack, for the run
# What an evaluation may allocate, all told, when no string passes LIMIT: a few such
# strings (4 bytes a character at most) alive at once, the engine's stack (under
# 200 bytes an entry) and compiled patterns.
PEAK_BYTES = 6 << 20

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ATTRIBUTE_NAMES = ["a", "n", "p", "big", "empty", "missing", "uuid", "fileSize", "x.y-z"]
HAZARDS = [
    "(a+)+b",
    "(a|aa)*c",
    "\\d*\\d*\\d*x",
    "(x+x+)+y",
    "(.*)\\1",
    "(?=(a*))",
    "[",
    "(",
    "\\",
    "a{99999}",
    "((?:){999}){999}",
    "(?i)ß*",
    "$",
    ".*",
    "",
    "\\g<0>",
    "\\1",
    "1e999",
    "-9223372036854775808",
    "9223372036854775807",
    "99999999999999999999",
    "nan",
    "inf",
    "-0.0",
    "true",
    "${a}",
    "$${a}",
]
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
ATTRIBUTE_VALUES = st.one_of(
    TEXT,
    st.sampled_from(HAZARDS),
    st.integers(-(1 << 70), 1 << 70).map(str),
    st.builds(
        lambda unit, count: unit * count, st.sampled_from(["a", "1", "x", "ab", "ß", " "]), st.integers(0, 3 * LIMIT)
    ),
)
ATTRIBUTES = st.dictionaries(st.sampled_from(ATTRIBUTE_NAMES), ATTRIBUTE_VALUES, max_size=6)


def _quoted(text: str) -> str:
    quote = "'" if "'" not in text or '"' in text else '"'
    return quote + text.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


CONSTANTS = st.one_of(
    st.one_of(TEXT, st.sampled_from(HAZARDS)).map(_quoted),
    st.integers(-(1 << 70), 1 << 70).map(str),
    st.sampled_from(["0", "1", "-1", "3.5", "0.0", str(LIMIT), str(LIMIT + 1), "999999999999", "true", "false"]),
)
SUBJECT_CALLS = (
    st.sampled_from(["now()", "UUID()", "nextInt()", "hostname()", "math('random')"])
    | CONSTANTS.map(lambda constant: f"literal({constant})")
    # the subjects that select several values
    | st.builds(
        lambda kind, names: f"{kind}({', '.join(names)})",
        st.sampled_from(["anyAttribute", "allAttributes", "anyMatchingAttribute", "allMatchingAttributes"]),
        st.lists(st.one_of(st.sampled_from(ATTRIBUTE_NAMES).map(_quoted), CONSTANTS), min_size=1, max_size=3),
    )
    | st.builds(
        lambda kind, value, delimiter: f"{kind}({value}, {delimiter})",
        st.sampled_from(["anyDelineatedValue", "allDelineatedValues"]),
        CONSTANTS,
        CONSTANTS,
    )
)
SUBJECT = st.one_of(st.sampled_from(ATTRIBUTE_NAMES), SUBJECT_CALLS, st.sampled_from(ATTRIBUTE_NAMES).map(_quoted))


def _arity(name: str, function) -> tuple[int, int]:
    """How many arguments the function takes (the pattern functions take the meter first)."""
    skip = 2 if name in {"matches", "find", "replaceAll", "replaceFirst", "evaluateELString"} else 1
    parameters = list(inspect.signature(function).parameters.values())[skip:]
    return sum(p.default is p.empty for p in parameters), len(parameters)


ARITY = {name: _arity(name, function) for name, function in FUNCTIONS.items()}


def _expressions():
    leaf = SUBJECT.map(lambda subject: "${" + subject + "}")

    def extend(inner):
        argument = st.one_of(CONSTANTS, inner)

        def arguments_of(name):
            low, high = ARITY[name]
            # As many arguments as the function takes, but one time in ten.
            count = st.integers(0, 9).flatmap(lambda draw: st.integers(low, high) if draw else st.integers(0, 4))
            return count.flatmap(lambda n: st.lists(argument, min_size=n, max_size=n)).map(
                lambda arguments: f":{name}({', '.join(arguments)})"
            )

        call = st.sampled_from(sorted(FUNCTIONS)).flatmap(arguments_of)
        aggregate = st.sampled_from(["", "", ":count()"]) | CONSTANTS.map(lambda delimiter: f":join({delimiter})")
        return st.builds(
            lambda subject, calls, last: "${" + subject + "".join(calls) + last + "}",
            SUBJECT,
            st.lists(call, min_size=1, max_size=5),
            aggregate,
        )

    return st.recursive(leaf, extend, max_leaves=16)


EXPRESSIONS = _expressions()
TEMPLATES = st.lists(st.one_of(EXPRESSIONS, TEXT), min_size=1, max_size=4).map("".join)
# Arbitrary text, biased toward the language's own characters, and soups of its tokens.
CHARACTERS = st.text(
    st.sampled_from(list("${}:()'\",\\ .-_09aZ")) | st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80
)
SYNTAX = st.sampled_from(["${", "}", ":", "(", ")", "'", '"', ",", "\\", "$$", " ", "1", "-2.5", "true"])
NAMES = st.sampled_from(ATTRIBUTE_NAMES + sorted(FUNCTIONS) + sorted(SUBJECTS))
SOUPS = st.builds(
    lambda start, tokens: start + "".join(tokens), st.sampled_from(["${", ""]), st.lists(SYNTAX | NAMES, max_size=30)
)
NOISE = CHARACTERS | SOUPS


@contextmanager
def _small_limits():
    with (
        mock.patch.object(expression, "MAX_STRING_LENGTH", LIMIT),
        mock.patch.object(expression, "MAX_BUILT_PER_EVALUATION", 32 * LIMIT),
        mock.patch.object(expression, "REGEX_STACK_DEPTH", STACK_DEPTH),
    ):
        yield


def _check(text: str, attributes: dict) -> None:
    started = time.monotonic()
    try:
        compiled = compile_expression(text)
    except ExpressionError:
        event("refused when compiled")
        assert time.monotonic() - started < SECONDS
        return
    assert isinstance(compiled, Expression)
    flowfile = FlowFile.new(1_000, attributes)
    tracemalloc.start()
    try:
        started = time.thread_time()  # the work done: a loaded machine's waits do not count
        try:
            result = compiled.evaluate(flowfile)
        except ExpressionError:
            event("failed when evaluated")
            result = None
        elapsed = time.thread_time() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    target(elapsed, label="seconds")
    target(float(peak), label="peak bytes")
    assert elapsed < SECONDS, f"{elapsed:.2f} s"
    assert peak < PEAK_BYTES, f"{peak:,} bytes allocated"
    if result is not None:
        event("evaluated")
        assert isinstance(result, str)
        literal_text = sum(len(part) for part in compiled._parts if isinstance(part, str))
        assert len(result) <= literal_text + LIMIT


@FUZZ
@given(text=NOISE, attributes=ATTRIBUTES)
def test_any_text(text, attributes):
    with _small_limits():
        _check(text, attributes)


@FUZZ
@given(text=TEMPLATES, attributes=ATTRIBUTES)
def test_expressions_of_the_real_functions(text, attributes):
    with _small_limits():
        _check(text, attributes)


@FUZZ
@given(
    pattern=st.text(st.sampled_from(list("ab()|*+?{}[]^$.\\1,:=!<>P-")), max_size=24) | st.sampled_from(HAZARDS),
    subject=st.builds(
        lambda unit, count: unit * count, st.sampled_from(["a", "ab", "aab", "x", "1"]), st.integers(0, 3000)
    ),
    function=st.sampled_from(["matches", "find", "replaceAll"]),
)
def test_patterns_from_attributes(pattern, subject, function):
    arguments = "${p}, 'r\\\\1'" if function == "replaceAll" else "${p}"
    with _small_limits():
        _check(f"${{s:{function}({arguments})}}", {"s": subject, "p": pattern})
