"""Which reader a FlowFile needs, which attributes become columns, and whose fault a
failed batch is."""

import pytest

from flow.spark.failures import BatchInputError, describe, is_input_error
from flow.spark.records import RecordFormatError, attribute_columns, format_of


@pytest.mark.parametrize(
    "attributes, expected",
    [
        ({"mime.type": "application/json"}, "json"),
        ({"mime.type": "application/x-ndjson; charset=utf-8"}, "json"),
        ({"mime.type": "TEXT/CSV"}, "csv"),
        ({"mime.type": "application/vnd.apache.parquet", "filename": "x.csv"}, "parquet"),
        ({"filename": "events.JSONL"}, "json"),
        ({"filename": "table.parquet", "mime.type": "application/octet-stream"}, "parquet"),
    ],
)
def test_the_format_comes_from_the_mime_type_then_the_extension(attributes, expected):
    assert format_of(attributes) == expected


def test_a_configured_format_wins_and_an_unknown_one_is_explained():
    assert format_of({"mime.type": "text/csv"}, "json") == "json"
    with pytest.raises(RecordFormatError, match="record_format"):
        format_of({"filename": "notes.txt", "mime.type": "text/plain"})


def test_attribute_columns_none_some_or_all():
    batch = [{"filename": "a", "kind": "x"}, {"filename": "b", "other": "y"}]
    assert attribute_columns("", batch) == []
    assert attribute_columns(" kind , filename ", batch) == ["kind", "filename"]
    assert attribute_columns("*", batch) == ["filename", "kind", "other"]


def test_the_input_is_at_fault_for_bad_records_bad_sql_and_raising_functions():
    assert is_input_error(BatchInputError("the function raised"))
    malformed = Exception(
        "An error occurred while calling o56.json.\n: org.apache.spark.SparkException: "
        "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected\n\tat x"
    )
    assert is_input_error(malformed)
    assert describe(malformed) == "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected"
    assert not is_input_error(ConnectionRefusedError("[Errno 111] Connection refused"))
    assert not is_input_error(Exception("Cannot call methods on a stopped SparkContext."))


def test_an_error_is_described_in_one_bounded_line():
    assert describe(Exception("")) == "Exception"
    assert len(describe(Exception("x" * 5000))) == 1000
    assert (
        describe(Exception("\n\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'.\n== SQL =="))
        == "[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'."
    )
