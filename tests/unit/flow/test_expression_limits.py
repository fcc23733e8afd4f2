"""The expression language's limits: whatever the attributes hold, an evaluation returns
a string or raises an ExpressionError naming the expression, soon, without building a
string past the limit; patterns run only when their worst case is known to be small."""

from __future__ import annotations

import re
import time

import pytest

from flow import expression
from flow.bounded_regex import MAX_PATTERN_LENGTH, PatternRefused, bounded
from flow.errors import ExpressionError
from flow.expression import MAX_STRING_LENGTH, ExpressionEvaluationError, compile_expression
from flow.flowfile import FlowFile


def evaluate(text: str, **attributes) -> str:
    return compile_expression(text).evaluate(FlowFile.new(1_000, attributes))


def failure(text: str, **attributes) -> ExpressionEvaluationError:
    # "Soon" is the work the evaluation did, in this thread's CPU time: the wall clock
    # would also count the time a loaded machine kept the thread waiting for a core.
    started = time.thread_time()
    with pytest.raises(ExpressionError) as caught:
        evaluate(text, **attributes)
    assert time.thread_time() - started < 1.0
    assert isinstance(caught.value, ExpressionEvaluationError) and caught.value.expression == text
    assert str(caught.value).startswith("expression ") and caught.value.reason in str(caught.value)
    return caught.value


# -- strings are bounded ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, attributes",
    [
        ("${x:padLeft(${n})}", {"x": "a", "n": str(1 << 31)}),
        ("${x:padRight(${n}, '-')}", {"x": "a", "n": str(MAX_STRING_LENGTH + 1)}),
        ("${x:replace('', ${x})}", {"x": "y" * 2000}),
        ("${x:replaceAll('', ${x})}", {"x": "y" * 2000}),
        ("${x:replaceAll('yyyyyyyy', '" + "\\g<0>" * 20 + "')}", {"x": "y" * 65536}),
        ("${x:append(${x})}", {"x": "y" * (MAX_STRING_LENGTH // 2 + 1)}),
        ("${x:prepend(${x})}", {"x": "y" * (MAX_STRING_LENGTH // 2 + 1)}),
    ],
)
def test_no_function_builds_a_string_past_the_limit(text, attributes):
    assert f"limit is {MAX_STRING_LENGTH:,}" in failure(text, **attributes).reason


def test_the_expressions_of_a_text_together_stay_under_the_limit():
    half = "y" * (MAX_STRING_LENGTH // 2 + 1)
    assert evaluate("${x}", x=half) == half
    assert "limit is" in failure("${x}${x}", x=half).reason


def test_strings_up_to_the_limit_are_built():
    assert len(evaluate("${x:padLeft(${n}, '0')}", x="7", n=str(MAX_STRING_LENGTH))) == MAX_STRING_LENGTH
    assert evaluate("${x:padRight(4, '.')}", x="ab") == "ab.."


def test_one_evaluation_builds_a_bounded_total(monkeypatch):
    monkeypatch.setattr(expression, "MAX_BUILT_PER_EVALUATION", 10_000)
    chain = "${x" + ":append('y')" * 20 + "}"
    assert failure(chain, x="y" * 1_000).reason.endswith("characters in all")


# -- patterns are bounded -----------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, subject",
    [
        ("(a+)+b", "a" * 29),
        ("(a|aa)*c", "a" * 40),
        ("(x+x+)+y", "x" * 30),
        ("\\d*\\d*\\d*\\d*x", "1" * 300),
        ("^(([a-z])+.)+[A-Z]([a-z])+$", "a" * 40),
    ],
)
def test_a_pattern_from_an_attribute_that_would_backtrack_for_long_is_refused_at_once(pattern, subject):
    for text in ("${s:matches(${p})}", "${s:find(${p})}", "${s:replaceAll(${p}, 'z')}"):
        assert "past the budget" in failure(text, s=subject, p=pattern).reason


def test_the_pattern_budget_is_for_the_whole_evaluation():
    pattern = "\\d*\\d*x"  # about n**2 steps on n digits
    digits = "1" * 1500
    assert evaluate("${s:matches(${p})}", s=digits, p=pattern) == "false"
    assert "past the budget" in failure("${s:matches(${p}):or(${s:matches(${p})})}", s=digits, p=pattern).reason


@pytest.mark.parametrize(
    "text, expected",
    [
        ("${s:matches('[a-z]+@[a-z]+\\.com')}", "true"),  # NiFi keeps a backslash before . in quotes
        ("${s:find('@ex')}", "true"),
        ("${s:replaceAll('([a-z]+)@([a-z]+)', '\\2 at \\1')}", "example at user.com"),
        ("${s:replaceAll('(?P<u>\\w+)@', '<\\g<u>>')}", "<user>example.com"),
        ("${s:replaceAll('([a-z]+)@([a-z]+)', '$2 at $1')}", "example at user.com"),
        ("${s:matches('(?i)USER.*')}", "true"),
        ("${s:find('(?<=@)example')}", "true"),
        ("${s:find('(\\w)\\1')}", "false"),
    ],
)
def test_usual_patterns_work_as_python_regular_expressions(text, expected):
    assert evaluate(text, s="user@example.com") == expected


def test_a_simple_pattern_runs_on_a_long_value():
    assert evaluate("${s:matches('a*')}", s="a" * MAX_STRING_LENGTH) == "true"
    assert evaluate("${s:replaceAll('a', 'b'):length()}", s="a" * 100_000) == "100000"


@pytest.mark.parametrize(
    "text, message",
    [
        ("${s:matches('(')}", "not a valid regular expression"),
        (f"${{s:find('{'a' * (MAX_PATTERN_LENGTH + 1)}')}}", "too long"),
    ],
)
def test_a_constant_pattern_is_checked_when_the_expression_is_compiled(text, message):
    with pytest.raises(ExpressionError, match=message):
        compile_expression(text)


def test_a_pattern_from_an_attribute_that_does_not_compile_fails_the_evaluation():
    assert "not a valid regular expression" in failure("${s:matches(${p})}", s="x", p="[").reason


def test_estimates_bound_the_shapes_that_blow_up():
    linear, quadratic, exponential = bounded("a*b"), bounded("a*a*b"), bounded("(a|a)*b")
    assert linear.estimate(1000, search=False).steps < 10_000
    assert 1000**2 <= quadratic.estimate(1000, search=False).steps < 10 * 1000**2
    assert quadratic.estimate(1000, search=True).steps >= 1000**3
    assert exponential.estimate(40, search=False).steps >= 2**40
    assert bounded("(?>(a|a)*)b").estimate(40, search=False).steps >= 2**40  # what the atomic group tries
    with pytest.raises(PatternRefused):
        bounded("x" * (MAX_PATTERN_LENGTH + 1))


# -- every failure is an ExpressionError --------------------------------------------------


@pytest.mark.parametrize(
    "text, attributes, reason",
    [
        ("${n:multiply(${n})}", {"n": "9" * 4000}, "at most 64 characters"),  # was a ValueError past 4300 digits
        ("${n:multiply(${n})}", {"n": "9" * 18}, "64-bit"),
        ("${n:plus(1)}", {"n": "9223372036854775807"}, "64-bit"),
        ("${x:substring(0, ${n})}", {"x": "abc", "n": "1e999"}, "finite"),  # was an OverflowError
        ("${n:divide(0)}", {"n": "1"}, "ZeroDivisionError"),
        ("${n:mod(0.0)}", {"n": "1"}, "ZeroDivisionError"),
        ("${n:plus(1)}", {"n": "abc"}, "expected a number, got 'abc'"),
    ],
)
def test_numbers_fail_as_expression_errors_naming_the_function(text, attributes, reason):
    error = failure(text, **attributes)
    assert reason in error.reason and "() failed on" in error.reason


def test_deep_nesting_is_refused_when_compiled_not_a_recursion_error():
    deep = "${x:append(" * 400 + "'y'" + ")}" * 400
    with pytest.raises(ExpressionError, match="nest at most"):
        compile_expression(deep)
    within = "${x:append(" * 30 + "'y'" + ")}" * 30
    assert evaluate(within, x="") == "y"


@pytest.mark.parametrize(
    "text, message",
    [
        ("${literal()}", "literal\\(\\) takes 1 argument"),
        ("${x:padLeft()}", "padLeft\\(\\) takes 1 to 2 argument"),
        ("${x:toUpper(1)}", "toUpper\\(\\) takes 0 argument"),
        ("${x:plus(" + "9" * 100 + ")}", "at most 64 characters"),
    ],
)
def test_wrong_arguments_are_refused_when_compiled(text, message):
    with pytest.raises(ExpressionError, match=message):
        compile_expression(text)


def test_an_error_message_shortens_long_values():
    error = failure("${x:plus(1)}", x="z" * 50)
    long_value = failure("${x:toNumber()}", x="z" * 10_000)
    assert len(str(error)) < 300 and len(str(long_value)) < 300


@pytest.mark.parametrize("pattern", [r"id=(\d+)", r"key: (.*)", r"x(?:y(\d+))", r"(?:ab)+", r"[A-Z]{2}-\d{3,}"])
def test_a_search_for_a_pattern_ending_in_a_simple_repeat_is_bounded_linearly(pattern):
    # nothing after the repeat can fail: a megabyte is searched in a few million steps
    n = 1 << 20
    steps = bounded(pattern).estimate(n, search=True).steps
    assert steps < 20 * n
    # and the bound holds: the real search of a subject made to backtrack is as quick
    for subject in ("9" * n, "id=" * (n // 3), "key: " * (n // 5), "xy" * (n // 2)):
        started = time.perf_counter()
        sum(1 for _ in re.finditer(pattern, subject))
        assert time.perf_counter() - started < 5


@pytest.mark.parametrize("pattern", [r"\d+x", r"(a+)+b", r"(a|a)*", r"(\w+)@(\w+)\.com"])
def test_a_repeat_that_something_after_it_can_fail_keeps_its_bound(pattern):
    n = 1 << 20
    assert bounded(pattern).estimate(n, search=True).steps >= n * n


def test_a_full_match_of_a_pattern_ending_in_a_repeat_keeps_the_general_bound():
    # fullmatch implies an end after the repeat, which can then fail and backtrack
    assert bounded(r"\d+").estimate(1000, search=False).steps >= 1000
    assert bounded(r"(\d+)(\d+)").estimate(1000, search=False).steps >= 1000**2


@pytest.mark.parametrize(
    ("java", "python"),
    [
        (r"(?<year>\d{4})-(?<month>\d\d)", r"(?P<year>\d{4})-(?P<month>\d\d)"),
        (r"(?<w>\w)\k<w>", r"(?P<w>\w)(?P=w)"),
        (r"(?<=a)b(?<!c)", r"(?<=a)b(?<!c)"),  # lookbehinds stay
        (r"\(?<a>", r"\(?<a>"),  # an escaped parenthesis
        (r"[(?<a>]", r"[(?<a>]"),  # in a character class
        (r"[]](?<x>y)", r"[]](?P<x>y)"),
        (r"a\\(?<n>b)", r"a\\(?P<n>b)"),  # an escaped backslash, then a group
    ],
)
def test_javas_named_groups_read_as_pythons(java, python):
    from flow.bounded_regex import python_syntax

    assert python_syntax(java) == python
    assert python_syntax(python) == python  # a pattern written for Python is left as it is


def test_an_expression_pattern_may_name_its_groups_as_java_does():
    flowfile = FlowFile.new(0, {"f": "on 2024-12-01"})
    text = "${f:replaceAll('.*(?<year>\\d{4})-(?<month>\\d\\d).*', '$${month}/$${year}')}"
    assert compile_expression(text).evaluate(flowfile) == "12/2024"
