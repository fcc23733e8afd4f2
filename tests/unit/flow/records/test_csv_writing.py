"""Writing CSV as NiFi's CSVRecordSetWriter (Commons CSV's printer) does: which values
are quoted, how a quote inside is escaped, nulls, trimming; the column rule held to the
one-value rule, and what is written read back."""

from __future__ import annotations

import csv
import io

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flow.records.csv_writing import QUOTE_MODES, CsvSetWriter, CsvStyle, quote_column, quote_text

NIFI = CsvStyle(escape="\\", trim=True)  # NiFi's defaults
RFC = CsvStyle()  # Custody's


@pytest.mark.parametrize(
    ("text", "first", "written"),
    [
        ("alpha", False, "alpha"),
        ("beta, b", False, '"beta, b"'),
        ('say "hi"', False, '"say \\"hi\\""'),
        ("back\\slash", False, '"back\\\\slash"'),
        ("two\nlines", False, '"two\nlines"'),
        ("", False, ""),
        ("", True, '""'),  # a line of one empty value is not an empty line
        ("#hash", False, '"#hash"'),  # at most '#' first: quoted
        ("!bang", True, '"!bang"'),
        ("$dollar", False, "$dollar"),  # just above '#'
        ("x\t", False, "x"),  # trimmed first
        ("7", False, "7"),
    ],
)
def test_minimal_quoting_as_nifis_writer_at_its_defaults(text, first, written):
    assert quote_text(text, first, NIFI) == written


def test_without_an_escape_character_a_quote_is_doubled_and_trailing_spaces_quote():
    assert quote_text('say "hi"', False, RFC) == '"say ""hi"""'
    assert quote_text("x ", False, RFC) == '"x "'  # not trimmed: ends at or below a space
    assert quote_text(" x", False, RFC) == '" x"'


def test_all_and_non_numeric_modes():
    assert quote_text("alpha", False, CsvStyle(quote_mode="all")) == '"alpha"'
    assert quote_text("7", False, CsvStyle(quote_mode="non_numeric"), numeric=True) == "7"
    assert quote_text("7", False, CsvStyle(quote_mode="non_numeric")) == '"7"'


styles = st.builds(
    CsvStyle,
    separator=st.sampled_from([",", ";", "\t", "|"]),
    quote=st.sampled_from(['"', "'"]),
    escape=st.sampled_from(["", "\\"]),
    quote_mode=st.sampled_from(QUOTE_MODES),
    trim=st.booleans(),
)
texts = st.text(alphabet=st.sampled_from(list(" \t\n\r\"'\\,;|#!$aZé\x00\x1f😀")), max_size=8)


@settings(max_examples=300, deadline=None)
@given(style=styles, values=st.lists(st.one_of(st.none(), texts), min_size=1, max_size=6), first=st.booleans())
def test_the_column_rule_is_the_one_value_rule(style, values, first):
    column = quote_column(pa.array(values, pa.string()), first, style).to_pylist()
    assert column == [None if value is None else quote_text(value, first, style) for value in values]


def written(batch: pa.RecordBatch, style: CsvStyle, header: bool = True) -> bytes:
    sink = io.BytesIO()
    writer = CsvSetWriter(sink, batch.schema, style, header)
    writer.write(batch)
    writer.close()
    return sink.getvalue()


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.one_of(st.none(), texts), st.integers(-5, 5)), min_size=1, max_size=5),
    escape=st.sampled_from(["", "\\"]),
)
def test_what_is_written_reads_back_as_it_was(rows, escape):
    """Values without the characters a trim or the reader's line handling would change."""
    style = CsvStyle(escape=escape, null_string="")
    batch = pa.record_batch({"text": pa.array([r[0] for r in rows], pa.string()), "n": [r[1] for r in rows]})
    data = written(batch, style).decode()
    dialect = {"escapechar": "\\", "doublequote": False} if escape else {}
    read = list(csv.reader(io.StringIO(data, newline=""), lineterminator="\n", **dialect))
    assert read[0] == ["text", "n"]
    assert read[1:] == [["" if text is None else text, str(n)] for text, n in rows]


def test_nulls_are_the_null_string_unquoted_and_the_header_follows_the_rules():
    batch = pa.record_batch({"a b": pa.array([None, "x"], pa.string()), "c,d": pa.array([1, None])})
    assert written(batch, CsvStyle(null_string="NULL", quote_mode="all")) == b'"a b","c,d"\nNULL,"1"\n"x",NULL\n'
    assert written(batch, RFC) == b'a b,"c,d"\n,1\nx,\n'
    assert written(batch, RFC, header=False) == b",1\nx,\n"


def test_an_empty_record_set_is_its_header_line():
    batch = pa.record_batch({"a": pa.array([], pa.int64())})
    assert written(batch, RFC) == b"a\n"
    assert written(batch, RFC, header=False) == b""
