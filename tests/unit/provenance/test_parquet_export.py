"""The Parquet form of provenance events: rows, hour partitions, deterministic names,
and the repository's event-file listener that the export wakes on."""

import pyarrow as pa
import pytest

from repositories.provenance import EventBatch, ProvenanceRepository
from repositories.provenance.parquet_export import (
    EXPORT_SCHEMA,
    export_table,
    file_name,
    hour_of,
    partial_name,
    partition_directory,
    split_by_hour,
)

from .conftest import event, make_config

HOUR_MS = 3_600_000
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def stored(events, first_id=1) -> pa.Table:
    return pa.Table.from_batches([EventBatch.from_events(events, now_ms=T0).with_ids(first_id)])


def test_an_event_becomes_one_row_of_the_documented_schema():
    fork = event(
        "FORK",
        "parent",
        child_uuids=("c1", "c2"),
        component_id="split",
        component_type="SplitText",
        event_time_ms=T0,
        attributes_after={"filename": "a.txt"},
        size=42,
    )
    route = event("ROUTE", "c1", relationship="matched", event_time_ms=T0 + 5)
    table = export_table(stored([fork, route], first_id=7), "node-a")
    assert table.schema.equals(EXPORT_SCHEMA, check_metadata=True)
    first, second = table.to_pylist()
    assert first == {
        "event_id": 7,
        "event_type": "FORK",
        "flowfile_uuid": "parent",
        "component_id": "split",
        "component_type": "SplitText",
        "event_time_ms": T0,
        "parent_uuids": [],
        "child_uuids": ["c1", "c2"],
        "attributes_after": [("filename", "a.txt")],
        "relationship": None,
        "transit_uri": None,
        "details": None,
        "size": 42,
        "node": "node-a",
    }
    assert (second["event_id"], second["relationship"], second["node"]) == (8, "matched", "node-a")


def test_hour_partitions_are_utc_and_names_follow_the_ids():
    assert hour_of(T0) == "2023-11-14T22"
    assert hour_of(0) == "1970-01-01T00"
    assert (
        partition_directory("/custody/c1/provenance/", "n1", "2023-11-14T22")
        == "/custody/c1/provenance/node=n1/hour=2023-11-14T22"
    )
    assert file_name(5, 9) == "events-5-9.parquet"
    # Readers (Spark, pyarrow datasets) skip names starting with '_': a half-written file stays unseen.
    assert partial_name(5, 9).startswith("_") and partial_name(5, 9).endswith(".parquet.partial")


@pytest.mark.parametrize("bad", ["", "a/b", "x=y", ".hidden", "_tmp"])
def test_a_node_name_that_cannot_name_a_partition_is_refused(bad):
    with pytest.raises(ValueError, match="node name"):
        partition_directory("/root", bad, "2023-11-14T22")


def test_an_event_file_across_an_hour_boundary_goes_to_two_parts_named_by_their_own_ids():
    hour_end = (T0 // HOUR_MS + 1) * HOUR_MS
    events = [
        event("CREATE", event_time_ms=hour_end - 2),
        event("CREATE", event_time_ms=hour_end + 1),
        event("CREATE", event_time_ms=hour_end - 1),
        event("CREATE", event_time_ms=hour_end + 2),
    ]
    parts = split_by_hour(export_table(stored(events, first_id=100), "n1"))
    assert [(p.hour, p.first_id, p.last_id, p.rows.column("event_id").to_pylist()) for p in parts] == [
        (hour_of(hour_end - 1), 100, 102, [100, 102]),
        (hour_of(hour_end), 101, 103, [101, 103]),
    ]
    assert parts[0].path("/r", "n1") == f"/r/node=n1/hour={hour_of(hour_end - 1)}/events-100-102.parquet"
    # The same events always get the same parts and names: a repeated export finds them.
    again = split_by_hour(export_table(stored(events, first_id=100), "n1"))
    assert [p.path("/r", "n1") for p in again] == [p.path("/r", "n1") for p in parts]
    assert split_by_hour(export_table(stored([], first_id=1), "n1")) == []


def test_the_repository_tells_its_listener_of_each_committed_event_file(tmp_path, clock):
    told = []
    repository = ProvenanceRepository(make_config(tmp_path), clock=clock, on_event_file=told.append)
    try:
        repository.register_events([event("CREATE") for _ in range(3)])
        repository.sync(timeout=30)
        assert [(e.first_id, e.last_id) for e in told] == [(1, 3)]
        assert repository.event_file_rows(1).column("id").to_pylist() == [1, 2, 3]
        assert repository.event_file_rows(99) is None
    finally:
        repository.close(timeout=30)


def test_a_failing_listener_is_logged_and_never_breaks_the_repository(tmp_path, clock, caplog):
    def broken(entry):
        raise RuntimeError("HDFS is down")

    repository = ProvenanceRepository(make_config(tmp_path), clock=clock, on_event_file=broken)
    try:
        repository.register_events([event("CREATE")])
        repository.sync(timeout=30)
        repository.register_events([event("CREATE")])
        repository.sync(timeout=30)
        assert [e.event_id for e in repository.events(1, 10)] == [1, 2]
        assert "HDFS is down" in caplog.text
    finally:
        repository.close(timeout=30)
