"""QueryRecord: SQL over a FlowFile's records, a relationship per query, the queries
checked at load, and what a failing query or unreadable records do."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.records.errors import RecordError
from flow.records.sql import QueryResult, query_problem

from .support import run_records

ROWS = [{"id": index, "score": index * 10, "city": "Oslo" if index % 2 else "Lisboa"} for index in range(20)]
DATA = b"".join(json.dumps(row).encode() + b"\n" for row in ROWS)
SERVICES = [("in", "JsonTreeReader", {}), ("out", "JsonRecordSetWriter", {})]


def query(queries, inputs, services=SERVICES, **properties):
    return run_records(
        "QueryRecord",
        {"record_reader": "in", "record_writer": "out", **properties, **queries},
        services,
        inputs,
        relationships=("original", "failure", *queries),
    )


def test_each_query_sends_its_result_to_its_relationship_and_the_original_goes_on():
    out = query(
        {
            "high": "SELECT id, score FROM FLOWFILE WHERE score >= 150 ORDER BY id",
            "per_city": "select city, count(*) as n from flowfile group by city order by city",
        },
        [({"filename": "in.json", "source": "a"}, DATA)],
    )
    [(high_attributes, high)] = out["high"]
    assert json.loads(high) == [{"id": i, "score": i * 10} for i in range(15, 20)]
    assert high_attributes["record.count"] == "5" and high_attributes["QueryRecord.Route"] == "high"
    assert high_attributes["source"] == "a" and high_attributes["mime.type"] == "application/json"
    [(_, per_city)] = out["per_city"]
    assert json.loads(per_city) == [{"city": "Lisboa", "n": 10}, {"city": "Oslo", "n": 10}]
    assert [data for _, data in out["original"]] == [DATA] and out["failure"] == []


def test_a_query_may_use_the_flowfiles_attributes():
    out = query({"mine": "SELECT id FROM FLOWFILE WHERE city = '${wanted}' AND id < 6"}, [({"wanted": "Oslo"}, DATA)])
    assert json.loads(out["mine"][0][1]) == [{"id": 1}, {"id": 3}, {"id": 5}]


def test_unreadable_records_send_the_original_to_failure_and_no_result_anywhere():
    bad = DATA + b'{"id": 99, "score": \n'
    out = query({"all": "SELECT * FROM FLOWFILE", "some": "SELECT id FROM FLOWFILE"}, [({}, bad), ({}, DATA)])
    [(attributes, data)] = out["failure"]
    assert data == bad and attributes["record.error.index"] == "20" and attributes["record.error.line"] == "21"
    assert attributes["record.error.message"].startswith("query 'all': ")
    assert len(out["all"]) == len(out["some"]) == len(out["original"]) == 1


def test_a_query_that_fails_as_it_runs_sends_the_original_to_failure():
    out = query({"cast": "SELECT CAST(city AS INTEGER) AS n FROM FLOWFILE"}, [({}, DATA)])
    [(attributes, data)] = out["failure"]
    assert data == DATA and "query 'cast': the query failed: Conversion Error" in attributes["record.error.message"]
    assert out["cast"] == [] and out["original"] == []


def test_records_that_widen_late_are_queried_with_the_wider_schema(monkeypatch):
    from flow.records import json_format

    monkeypatch.setattr(json_format, "BLOCK_SIZE", 128)
    monkeypatch.setattr(json_format, "_READ_SIZE", 32)
    data = DATA + json.dumps({"id": 20, "score": 0.5, "city": "Oslo", "late": True}).encode() + b"\n"
    out = query({"late": "SELECT id, score FROM FLOWFILE WHERE late"}, [({}, data)])
    assert json.loads(out["late"][0][1]) == [{"id": 20, "score": 0.5}]


def test_zero_record_results_are_kept_or_dropped_as_configured():
    queries = {"none": "SELECT * FROM FLOWFILE WHERE id < 0", "all": "SELECT id FROM FLOWFILE"}
    kept = query(queries, [({}, DATA)])
    assert [(a["record.count"], d) for a, d in kept["none"]] == [("0", b"[]")]
    dropped = query(queries, [({}, DATA)], include_zero_record_flowfiles=False)
    assert dropped["none"] == [] and len(dropped["all"]) == 1


def test_empty_content_gives_empty_results():
    out = query({"all": "SELECT id FROM FLOWFILE"}, [({}, b"")])
    assert [(a["record.count"], d) for a, d in out["all"]] == [("0", b"[]")]


def test_parquet_out_of_a_query():
    services = [("in", "CSVReader", {}), ("out", "ParquetRecordSetWriter", {})]
    out = query({"big": "SELECT a * 2 AS doubled FROM FLOWFILE WHERE a > 1"}, [({}, b"a\n1\n2\n3\n")], services)
    assert pq.read_table(io.BytesIO(out["big"][0][1])).to_pylist() == [{"doubled": 4}, {"doubled": 6}]


# -- checked at load --------------------------------------------------------------------------------


def _flow(queries, reader=None):
    return {
        "services": [reader or {"id": "in", "type": "JsonTreeReader"}, {"id": "out", "type": "JsonRecordSetWriter"}],
        "processors": [
            {
                "id": "query",
                "type": "QueryRecord",
                "properties": {"record_reader": "in", "record_writer": "out", **queries},
                "auto_terminate": ["original", "failure", *queries],
            }
        ],
        "connections": [],
    }


SCHEMA = json.dumps({"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}]})
GIVEN = {
    "id": "in",
    "type": "JsonTreeReader",
    "properties": {"schema_access_strategy": "schema-text-property", "schema_text": SCHEMA},
}


@pytest.mark.parametrize(
    "queries, reader, message",
    [
        ({"q": "SELEC id FROM FLOWFILE"}, None, "property 'q': Parser Error: syntax error at or near \"SELEC\""),
        ({"q": "SELECT 1; SELECT 2"}, None, "expected one SQL statement, got 2"),
        ({"q": "DELETE FROM FLOWFILE"}, None, "expected a SELECT statement, got DELETE"),
        ({"q": "SELECT name FROM FLOWFILE"}, GIVEN, 'Referenced column "name" not found'),
        ({"original": "SELECT 1"}, None, "a query cannot be named 'original'"),
        ({}, None, "QueryRecord needs at least one query"),
    ],
)
def test_a_query_that_cannot_run_is_refused_at_load_naming_the_processor_and_property(queries, reader, message):
    with pytest.raises(FlowDefinitionError) as raised:
        parse_flow(_flow(queries, reader))
    assert message in str(raised.value) and "processor 'query'" in str(raised.value)


def test_queries_over_a_known_schema_load_when_their_columns_exist():
    definition = parse_flow(_flow({"q": "SELECT id FROM FLOWFILE WHERE id > 3"}, GIVEN))
    assert definition.processors["query"].relationships == ("original", "failure", "q")


def test_a_literal_schema_that_cannot_be_read_is_refused_at_load():
    broken = {**GIVEN, "properties": {**GIVEN["properties"], "schema_text": "{nope"}}
    with pytest.raises(FlowDefinitionError, match="schema_text: the schema is not valid JSON"):
        parse_flow(_flow({"q": "SELECT 1"}, broken))


# -- the engine -------------------------------------------------------------------------------------


def test_a_query_reads_nothing_but_flowfile():
    for sql in ("SELECT * FROM read_csv('/etc/passwd')", "SELECT * FROM '/etc/hostname'"):
        schema = pa.schema([("a", pa.int64())])
        batches = [pa.record_batch([pa.array([1])], schema=schema)]
        with pytest.raises(RecordError, match="Permission Error|Table with name /etc/hostname does not exist"):
            with QueryResult(sql, schema, batches) as result:
                list(result)
    assert query_problem("SELECT 1", None) is None


def test_an_error_of_the_records_comes_out_as_it_was_raised():
    schema = pa.schema([("a", pa.int64())])

    def batches():
        yield pa.record_batch([pa.array([1])], schema=schema)
        raise RecordError("broken on purpose", record=7, line=8)

    with pytest.raises(RecordError) as raised:
        with QueryResult("SELECT a FROM flowfile", schema, batches()) as result:
            list(result)
    assert (raised.value.message, raised.value.record, raised.value.line) == ("broken on purpose", 7, 8)


def test_a_field_whose_values_differ_in_type_is_queried_as_text():
    """NiFi infers a CHOICE; the query sees each value's text (a string as itself)."""
    rows = [{"id": 1, "code": 7}, {"id": 2, "code": "seven"}, {"id": 3, "code": {"n": 7}}, {"id": 4, "code": None}]
    data = b"".join(json.dumps(row).encode() + b"\n" for row in rows)
    out = query({"q": "SELECT id, code FROM FLOWFILE WHERE code IS NOT NULL ORDER BY id"}, [({}, data)])
    [(attributes, result)] = out["q"]
    assert json.loads(result) == [{"id": 1, "code": "7"}, {"id": 2, "code": "seven"}, {"id": 3, "code": '{"n":7}'}]
    assert out["failure"] == [] and attributes["record.count"] == "3"
