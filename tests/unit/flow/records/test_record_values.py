"""RecordPath values (`flow.records.record_values`): paths with list indexes, NiFi's
standard functions over a batch (nulls, unicode, numbers as text), and paths that
cannot be read refused with where and why."""

from __future__ import annotations

import base64
import hashlib

import pyarrow as pa
import pytest

from flow.records.errors import RecordError
from flow.records.record_path import RecordPathError
from flow.records.record_values import compile_value, evaluate

BATCH = pa.RecordBatch.from_pylist(
    [
        {"first": "Ada", "last": "Lovelace", "n": 7, "tags": ["a", "b", "c"], "at": {"city": "Zürich"}, "ok": True},
        {"first": None, "last": "Hopper", "n": None, "tags": [], "at": None, "ok": False},
        {"first": " émile ", "last": "a.b.c", "n": -3, "tags": None, "at": {"city": None}, "ok": None},
    ]
)


def values(text: str) -> list:
    return evaluate(compile_value(text), BATCH).to_pylist()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/first", ["Ada", None, " émile "]),
        ("/at/city", ["Zürich", None, None]),
        ("/nope/x", [None, None, None]),
        ("/tags[0]", ["a", None, None]),
        ("/tags[-1]", ["c", None, None]),
        ("/tags[5]", [None, None, None]),
        ("'text'", ["text"] * 3),
        ("42", [42] * 3),
        ("concat(/first, ' ', /last)", ["Ada Lovelace", " Hopper", " émile  a.b.c"]),
        ("concat(/n, /ok)", ["7true", "false", "-3"]),
        ("toUpperCase(/at/city)", ["ZÜRICH", None, None]),
        ("toLowerCase(/last)", ["lovelace", "hopper", "a.b.c"]),
        ("trim(/first)", ["Ada", None, "émile"]),
        ("substring(/last, 0, 4)", ["Love", "Hopp", "a.b."]),
        ("substring(/last, -3, 100)", ["ace", "per", "b.c"]),
        ("substringBefore(/last, '.')", ["Lovelace", "Hopper", "a"]),
        ("substringBeforeLast(/last, '.')", ["Lovelace", "Hopper", "a.b"]),
        ("substringAfter(/last, '.')", ["Lovelace", "Hopper", "b.c"]),
        ("substringAfterLast(/last, '.')", ["Lovelace", "Hopper", "c"]),
        ("replace(/last, '.', '/')", ["Lovelace", "Hopper", "a/b/c"]),
        ("replaceRegex(/last, '([a-z])\\\\.', '$1!')", ["Lovelace", "Hopper", "a!b!c"]),
        ("replaceNull(/first, 'nobody')", ["Ada", "nobody", " émile "]),
        ("coalesce(/first, /last)", ["Ada", "Hopper", " émile "]),
        ("coalesce(/n, /last)", ["7", "Hopper", "-3"]),
        ("padLeft(/n, 4)", ["___7", None, "__-3"]),
        ("padRight(/last, 8, '*')", ["Lovelace", "Hopper**", "a.b.c***"]),
        ("padLeft(/last, 9, 'xy')", ["xLovelace", "xyxHopper", "xyxya.b.c"]),
        ("toString(/n)", ["7", None, "-3"]),
        ("base64Encode(/last)", [base64.b64encode(t.encode()).decode() for t in ("Lovelace", "Hopper", "a.b.c")]),
        ("base64Decode(base64Encode(/first))", ["Ada", None, " émile "]),
        ("hash(/last, 'SHA-256')", [hashlib.sha256(t.encode()).hexdigest() for t in ("Lovelace", "Hopper", "a.b.c")]),
        ("  concat( /first ,'x' )  ", ["Adax", "x", " émile x"]),
        ('concat("it\\"s", /tags[1])', ['it"sb', 'it"s', 'it"s']),
    ],
)
def test_values(text, expected):
    assert values(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "a value is missing"),
        ("first", "a function is followed by '('"),
        ("upper(/a)", "unknown function 'upper'"),
        ("/a//b", "descendants and wildcards"),
        ("//a", "descendants and wildcards"),
        ("/a/*", "descendants and wildcards"),
        ("/a[./b = 'x']", "not a predicate"),
        ("/a[1", "']' expected"),
        ("concat(/a", "',' or ')' expected"),
        ("substring(/a, 1)", "substring takes 3 argument(s), not 2"),
        ("substring(/a, /b, 2)", "must be written in the path"),
        ("substring(/a, 'x', 2)", "must be a whole number"),
        ("replaceRegex(/a, '(', 'x')", "not a regular expression"),
        ("'open", "not closed"),
        ("/a extra", "unexpected text after the value"),
        ("@", "does not start a value"),
    ],
)
def test_values_that_cannot_be_read_are_refused_with_where_and_why(text, message):
    with pytest.raises(RecordPathError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compile_value(text)


def test_values_that_cannot_be_computed_are_record_errors():
    with pytest.raises(RecordError, match="not base64"):
        values("base64Decode(/last)")
    with pytest.raises(RecordError, match="unknown algorithm"):
        values("hash(/last, 'NOPE-1')")


def test_an_index_into_a_sliced_batch_takes_each_record_s_own_element():
    sliced = BATCH.slice(1, 2)
    assert evaluate(compile_value("/tags[0]"), sliced).to_pylist() == [None, None]
    wide = pa.RecordBatch.from_pylist([{"t": [str(i), "x"]} for i in range(10)]).slice(3, 4)
    assert evaluate(compile_value("/t[0]"), wide).to_pylist() == ["3", "4", "5", "6"]
