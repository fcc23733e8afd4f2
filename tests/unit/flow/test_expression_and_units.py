"""The attribute expression language and the duration/size parsers."""

import pytest

from flow.errors import ExpressionError
from flow.expression import compile_expression
from flow.flowfile import FlowFile
from flow.units import parse_duration, parse_size

FF = FlowFile.new(1_000, {"name": "Report.csv", "n": "7", "empty": "", "pri": "high"})


@pytest.mark.parametrize(
    "text, expected",
    [
        ("plain", "plain"),
        ("${name}", "Report.csv"),
        ("x-${name:toUpper()}-y", "x-REPORT.CSV-y"),
        ("${n:plus(3):multiply(2)}", "20"),
        ("${n:mod(2):equals(1)}", "true"),
        ("${n:gt(10)}", "false"),
        ("${missing}", ""),
        ("${missing:isNull()}", "true"),
        ("${empty:isEmpty()}", "true"),
        ("${name:substringBefore('.')}", "Report"),
        ("${name:replaceAll('[aeiou]', '_')}", "R_p_rt.csv"),
        ("${name:startsWith('Rep'):and(${n:lt(8)})}", "true"),
        ("${pri:equals('high'):ifElse('1', '9')}", "1"),
        ("${n:padLeft(4, '0')}", "0007"),
        ("${literal('a b')}", "a b"),
        ("$${name}", "${name}"),
        ("${'name'}", "Report.csv"),
        ("${fileSize}", "0"),
    ],
)
def test_evaluation(text, expected):
    assert compile_expression(text).evaluate(FF) == expected


def test_uuid_is_the_flowfile_identity():
    assert compile_expression("${uuid}").evaluate(FF) == FF.id


@pytest.mark.parametrize(
    "text, message",
    [
        ("${name", "expected '}'"),
        ("${name:shout()}", "unknown function 'shout'"),
        ("${name:append('x'}", r"expected ',' or '\)'"),
        ("${'open}", "unterminated"),
    ],
)
def test_parse_errors_say_where(text, message):
    with pytest.raises(ExpressionError, match=message):
        compile_expression(text)


def test_evaluation_errors_name_the_function():
    with pytest.raises(ExpressionError, match="expected a number"):
        compile_expression("${name:plus(1)}").evaluate(FF)


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("500 ms", 0.5),
        ("2 sec", 2),
        ("1 min", 60),
        ("1.5h", 5400),
        (3, 3.0),
        # NiFi's own units (its FormatUtils) mean the same here
        ("5000 micros", 0.005),
        ("2 hrs", 7200),
        ("1 week", 604800),
        ("250 millisecond", 0.25),
    ],
)
def test_durations(value, seconds):
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value, size", [("10 KB", 10240), ("1 MB", 1 << 20), ("2GB", 2 << 30), (12, 12)])
def test_sizes(value, size):
    assert parse_size(value) == size


@pytest.mark.parametrize("bad", ["soon", "-1", True, "5 parsecs"])
def test_bad_durations_say_what_is_accepted(bad):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)
