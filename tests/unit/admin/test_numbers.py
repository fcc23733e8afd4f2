"""Numbers a client sends the admin API, however many digits they have: read as what
they mean (past the content, past the index's times), never converted whole and never
an unexpected error."""

import re

import pytest
from fastapi.exceptions import RequestValidationError

from cluster.admin.ranges import ByteRange, RangeNotSatisfiable, parse_range
from cluster.admin.routes_provenance import _TIME_SCHEMA, time_bound

HUGE = "9" * 5000  # past Python's 4300 digits of int(), and past 64 bits


@pytest.mark.parametrize(
    "header, expected",
    [
        (f"bytes=0-{HUGE}", ByteRange(0, 99)),  # a last byte past the content: its end
        (f"bytes=-{HUGE}", ByteRange(0, 99)),  # a suffix longer than the content: all of it
        (f"bytes=10-{2**70}", ByteRange(10, 99)),
        (f"bytes={'0' * 5000}5-6", ByteRange(5, 6)),  # leading zeros are no digits of the number
    ],
)
def test_a_range_of_absurd_numbers_is_served_as_far_as_the_content_goes(header, expected):
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize("header", [f"bytes={HUGE}-", f"bytes={2**70}-", f"bytes={HUGE}-{HUGE}"])
def test_a_range_starting_past_64_bits_is_not_satisfiable(header):
    with pytest.raises(RangeNotSatisfiable):
        parse_range(header, 100)


def test_a_range_ending_before_its_huge_start_is_ignored():
    assert parse_range(f"bytes={HUGE}-5", 100) is None


@pytest.mark.parametrize(
    "text, words",
    [
        (str(2**70), "past the latest time"),
        (HUGE, "past the latest time"),
        ("9" * 19, "at most 18 digits"),
        ("99999999999999999999d", "before the earliest time"),
        (f"{'9' * 400}d", "at most 11 digits before the unit"),
        (f"{'9' * 400}.5s", "before the earliest time"),
        ("yesterday", "cannot read time"),
        ("", "cannot read time"),
    ],
)
def test_a_time_bound_past_signed_64_bit_milliseconds_is_a_422_naming_it(text, words):
    with pytest.raises(RequestValidationError) as refused:
        time_bound("start", text, now=1_700_000_000.0)
    (error,) = refused.value.errors()
    assert error["loc"] == ("query", "start") and words in error["msg"], error


@pytest.mark.parametrize(
    "text, milliseconds",
    [
        ("1700000000000", 1_700_000_000_000),
        (f"{'0' * 5000}17", 17),
        ("9" * 18, 10**18 - 1),
        ("15m", 1_699_999_100_000),
        ("99999999999d", 1_700_000_000_000 - 99_999_999_999 * 86_400_000),
        (f"{'0' * 5000}1.5s", 1_699_999_998_500),
        ("9999-12-31T23:59:59Z", 253_402_300_799_000),
    ],
)
def test_every_time_bound_the_spec_admits_is_read_within_signed_64_bits(text, milliseconds):
    assert time_bound("end", text, now=1_700_000_000.0) == milliseconds
    assert -(1 << 63) <= milliseconds < 1 << 63


def test_the_spec_admits_exactly_the_time_bounds_that_are_read():
    patterns = [re.compile(form["pattern"]) for form in _TIME_SCHEMA["anyOf"] if "pattern" in form]
    for text in ("9" * 18, "0" * 30 + "1", "99999999999d", "1.5h"):
        assert any(p.match(text) for p in patterns), text
    for text in ("9" * 19, "999999999999d", str(2**70)):
        assert not any(p.match(text) for p in patterns), text
