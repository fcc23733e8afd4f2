"""Provenance on Spark, end to end: two nodes' repositories on local disk roll over,
export their event files to real HDFS as Parquet, and the Spark analysis finds the
lineage that crosses both nodes, as the repositories' own lineage, combined, does."""

from __future__ import annotations

import json

import pytest

from cluster.cli import main
from flow.spark import provenance_analysis as analysis
from replication.provenance_export import ProvenanceExporter
from repositories.provenance import ProvenanceConfig, ProvenanceEvent, ProvenanceRepository
from repositories.provenance.lineage import lineage_across

pytestmark = [pytest.mark.hdfs, pytest.mark.spark]

T0 = 1_700_000_000_000


def ev(kind, uuid, at_s, component="c", **fields) -> ProvenanceEvent:
    extra = {"relationship": "success"} if kind == "ROUTE" else {}
    return ProvenanceEvent(
        kind, uuid, component, component_type="Test", event_time_ms=T0 + at_s * 1000, **extra, **fields
    )


@pytest.fixture
def nodes(tmp_path):
    """Node A creates x and q, then dies; node B adopts them: forks x into y and z,
    clones y into w, joins z and q into j. u never meets the others."""
    opened = {}
    for name in ("a", "b"):
        opened[name] = ProvenanceRepository(
            ProvenanceConfig(
                containers=(str(tmp_path / name / "provenance"),),
                rollover_check_interval_s=None,
                age_off_interval_s=None,
                max_age_s=None,
                max_bytes=None,
                index_threads=1,
                compression_threads=1,
            )
        )
    a, b = opened["a"], opened["b"]
    a.register_events(
        [
            ev("CREATE", "x", 0, "gen"),
            ev("CREATE", "q", 1, "gen"),
            ev("ATTRIBUTES_MODIFIED", "x", 2, "update"),
            ev("CREATE", "u", 3, "gen"),
        ]
    )
    a.sync(timeout=60)
    a.register_events([ev("ROUTE", "u", 70, "route")])  # a second event file, the next minute
    a.sync(timeout=60)
    b.register_events(
        [
            ev("FORK", "x", 10, "split", child_uuids=("y", "z")),
            ev("CLONE", "y", 11, "dup", child_uuids=("w",)),
            ev("JOIN", "j", 12, "merge", parent_uuids=("z", "q")),
            ev("ROUTE", "w", 13, "route"),
            ev("DROP", "j", 14, "sink"),
        ]
    )
    b.sync(timeout=60)
    yield opened
    for repository in opened.values():
        repository.close(timeout=60)


def export(nodes, hdfs_store, tmp_path) -> str:
    root = f"{hdfs_store.root}/provenance"
    for name, repository in nodes.items():
        done = ProvenanceExporter(hdfs_store.storage, root, name, str(tmp_path / name / "markers")).export_pending(
            repository
        )
        assert done.error is None
    return hdfs_store.storage.uri(root)


@pytest.mark.parametrize("uuid", ["x", "j", "w", "u"])
def test_spark_lineage_across_two_nodes_equals_the_repositories_lineage_combined(
    nodes, hdfs_store, spark_local, tmp_path, uuid
):
    source = export(nodes, hdfs_store, tmp_path)
    found = analysis.lineage(analysis.load_events(spark_local, source), uuid, source=source)
    expected, expected_events = lineage_across(nodes, uuid)
    assert set(found["ancestors"]) == expected.ancestors
    assert set(found["descendants"]) == expected.descendants
    assert {(e["node"], e["event_id"]) for e in found["events"]} == expected_events
    # Each repository alone sees a part only; Spark sees at least what they see together.
    for repository in nodes.values():
        alone = repository.lineage(uuid)
        assert alone.ancestors <= set(found["ancestors"]) and alone.descendants <= set(found["descendants"])
    if uuid == "j":
        assert found["ancestors"] == ["q", "x", "z"] and found["nodes"] == ["a", "b"]


def test_exporting_twice_writes_nothing_new_and_the_analysis_counts_each_event_once(
    nodes, hdfs_store, spark_local, tmp_path
):
    source = export(nodes, hdfs_store, tmp_path)
    for name, repository in nodes.items():  # markers lost: every part is found, none written
        again = ProvenanceExporter(
            hdfs_store.storage, f"{hdfs_store.root}/provenance", name, str(tmp_path / name / "fresh-markers")
        ).export_pending(repository)
        assert again.written == 0 and again.found == len(repository.event_files())
    rows = analysis.per_minute(analysis.load_events(spark_local, source))
    # Latency: from the FlowFile's first event (or the FORK/CLONE that made it): w was
    # cloned at 11 s and routed at 13 s; u was created at 3 s and routed at 70 s.
    assert [(r["minute"], r["component_id"], r["by_type"], r["latency_p50_ms"], r["latency_max_ms"]) for r in rows] == [
        ("2023-11-14T22:13Z", "dup", {"CLONE": 1}, 1000.0, 1000),
        ("2023-11-14T22:13Z", "gen", {"CREATE": 3}, 0.0, 0),
        ("2023-11-14T22:13Z", "merge", {"JOIN": 1}, 0.0, 0),
        ("2023-11-14T22:13Z", "route", {"ROUTE": 1}, 2000.0, 2000),
        ("2023-11-14T22:13Z", "sink", {"DROP": 1}, 2000.0, 2000),
        ("2023-11-14T22:13Z", "split", {"FORK": 1}, 10000.0, 10000),
        ("2023-11-14T22:13Z", "update", {"ATTRIBUTES_MODIFIED": 1}, 2000.0, 2000),
        ("2023-11-14T22:14Z", "route", {"ROUTE": 1}, 67000.0, 67000),
    ]
    assert sum(r["events"] for r in rows) == 10


def test_the_command_prints_lineage_json_and_names_bad_input(nodes, hdfs_store, spark_local, tmp_path, capsys):
    source = export(nodes, hdfs_store, tmp_path)
    assert main(["provenance", "analyze", "--spark-master", "local[*]", "--source", source, "--uuid", "x"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["descendants"] == ["j", "w", "y", "z"]

    assert (
        main(["provenance", "analyze", "--spark-master", "local[*]", "--source", source, "--uuid", "no-such-flowfile"])
        == 1
    )
    assert capsys.readouterr().err.strip() == (
        f"custody provenance analyze: no provenance event names FlowFile no-such-flowfile in {source}"
    )

    missing = f"{source}-missing"
    assert main(["provenance", "analyze", "--spark-master", "local[*]", "--source", missing, "--per-minute"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"custody provenance analyze: cannot read provenance events from {missing}: ")
    assert "\n" not in err
