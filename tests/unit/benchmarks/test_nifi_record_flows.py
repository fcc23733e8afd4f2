"""The pure parts of `custody bench records --against-nifi`: NiFi's REST documents of
the record services and processors, the per-CPU figures and their medians, the count
of Avro records, and Custody's JSON-to-Avro run on a real node. No test starts NiFi."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks import records
from benchmarks.nifi_anchor import assembly, record_flows


def test_the_assembly_fetches_the_record_services_nar_as_maven_central_serves_it():
    assert "nifi-record-serialization-services-nar" in assembly.SERVED_NARS
    assert "nifi-record-serialization-services-nar" in assembly.plan()["served"]


def test_the_services_are_nifis_json_reader_and_avro_writer_at_their_schema_defaults():
    documents = record_flows.service_documents()
    assert documents["reader"]["type"] == "org.apache.nifi.json.JsonTreeReader"
    assert documents["reader"]["properties"] == {"schema-access-strategy": "infer-schema"}
    writer = documents["writer"]
    assert writer["type"] == "org.apache.nifi.avro.AvroRecordSetWriter"
    # NiFi 2.3.0's property names (not display names) and values, as its REST API takes them.
    assert writer["properties"] == {
        "schema-access-strategy": "inherit-record-schema",
        "Schema Write Strategy": "avro-embedded",
        "compression-format": "NONE",
    }


def test_convert_record_names_the_services_by_id_and_runs_the_given_tasks():
    documents = record_flows.processor_documents("/in", "/out", "reader-id", "writer-id", tasks=2)
    assert set(documents) == {"get", "convert", "put"}
    convert = documents["convert"]
    assert convert["type"] == "org.apache.nifi.processors.standard.ConvertRecord"
    assert convert["config"]["properties"] == {"Record Reader": "reader-id", "Record Writer": "writer-id"}
    assert convert["config"]["concurrentlySchedulableTaskCount"] == 2
    assert documents["get"]["config"]["concurrentlySchedulableTaskCount"] == 1
    assert documents["put"]["config"]["concurrentlySchedulableTaskCount"] == 1


def test_getfile_takes_the_input_away_and_putfile_writes_where_it_is_counted():
    documents = record_flows.processor_documents("/in", "/out", "r", "w", tasks=1)
    get = documents["get"]["config"]["properties"]
    assert get["Input Directory"] == "/in"
    assert get["Keep Source File"] == "false"  # else GetFile would take the same files again and again
    put = documents["put"]
    assert put["config"]["properties"]["Directory"] == "/out"
    assert put["config"]["autoTerminatedRelationships"] == ["success"]


def test_every_relationship_goes_somewhere_and_only_convert_failure_ends_unwritten():
    documents = record_flows.processor_documents("/in", "/out", "r", "w", tasks=1)
    connected = {
        (source, relationship)
        for source, _, relationships in record_flows.CONNECTIONS
        for relationship in relationships
    }
    assert connected == {("get", "success"), ("convert", "success"), ("put", "failure")}
    assert documents["convert"]["config"]["autoTerminatedRelationships"] == ["failure"]
    for source, destination, _ in record_flows.CONNECTIONS:
        assert source in documents and destination in documents


def test_a_service_state_document_carries_the_revision_and_refuses_other_states():
    assert record_flows.service_state_document(3, "ENABLED") == {"revision": {"version": 3}, "state": "ENABLED"}
    assert record_flows.service_state_document(0, "DISABLED")["state"] == "DISABLED"
    with pytest.raises(ValueError, match="ENABLED or DISABLED"):
        record_flows.service_state_document(1, "RUNNING")


def test_records_per_cpu_second_are_the_records_over_the_cpu_time():
    run = record_flows.WholeInputRun(records=600_000, seconds=4.0, cpu_seconds=7.5)
    figures = run.figures()
    assert figures["records_per_sec"] == 150_000.0
    assert figures["records_per_cpu_sec"] == 80_000.0


def test_a_run_that_took_no_time_is_refused_rather_than_infinite():
    with pytest.raises(ValueError, match="nothing was measured"):
        record_flows.WholeInputRun(records=10, seconds=1.0, cpu_seconds=0.0).figures()


def _entry(nifi: tuple[float, float], avro: tuple[float, float], parquet: tuple[float, float]) -> dict:
    def side(figures: tuple[float, float]) -> dict:
        return {"records_per_sec": figures[0], "records_per_cpu_sec": figures[1]}

    return {"nifi": side(nifi), "custody_avro": side(avro), "custody_parquet": side(parquet)}


def test_the_summary_takes_the_medians_and_divides_custody_avro_by_nifi():
    rounds = [
        _entry((100.0, 50.0), (150.0, 120.0), (900.0, 800.0)),
        _entry((200.0, 60.0), (120.0, 100.0), (700.0, 600.0)),
        _entry((110.0, 40.0), (300.0, 90.0), (800.0, 700.0)),
    ]
    summary = record_flows.summarize(rounds)
    assert summary["nifi_records_per_sec"] == 110.0
    assert summary["nifi_records_per_cpu_sec"] == 50.0
    assert summary["records_per_sec_json_to_avro"] == 150.0
    assert summary["records_per_cpu_sec_json_to_avro"] == 100.0
    assert summary["records_per_cpu_sec_json_to_parquet"] == 700.0
    assert summary["ratio_records_vs_nifi"] == pytest.approx(150 / 110, abs=1e-3)
    assert summary["ratio_records_per_core_vs_nifi"] == 2.0


def test_a_summary_of_no_rounds_is_refused():
    with pytest.raises(ValueError, match="no rounds"):
        record_flows.summarize([])


def test_files_in_counts_what_putfile_renamed_into_place_not_its_dot_files(tmp_path: Path):
    (tmp_path / "000001.json").write_bytes(b"x")
    (tmp_path / ".000002.json").write_bytes(b"partial")
    assert record_flows.files_in(tmp_path) == 1
    assert record_flows.files_in(tmp_path / "missing") == 0


def test_custody_converts_json_to_avro_and_every_record_is_counted(tmp_path: Path):
    inputs = tmp_path / "inputs"
    generated = records.write_inputs(str(inputs), 0.3, 0.1)
    names = sorted(os.listdir(inputs))
    assert len(names) == 3
    run = record_flows.run_custody(tmp_path, inputs, names, generated, 2, True, records._run_custody)
    assert run.records == generated
    assert run.seconds > 0 and run.cpu_seconds > 0
    assert not (tmp_path / "custody").exists() and not (tmp_path / "custody-in").exists()


def test_a_run_that_converts_fewer_records_than_given_fails(tmp_path: Path):
    inputs = tmp_path / "inputs"
    generated = records.write_inputs(str(inputs), 0.1, 0.1)
    names = sorted(os.listdir(inputs))
    with pytest.raises(RuntimeError, match=f"wrote {generated} records of {generated + 1}"):
        record_flows.run_custody(tmp_path, inputs, names, generated + 1, 1, True, records._run_custody)


def test_avro_records_counts_the_blocks_of_every_container(tmp_path: Path):
    import fastavro

    schema = fastavro.parse_schema({"type": "record", "name": "nifiRecord", "fields": [{"name": "id", "type": "long"}]})
    for name, count in (("a.avro", 5), ("b.avro", 1200)):
        with open(tmp_path / name, "wb") as handle:
            fastavro.writer(handle, schema, ({"id": index} for index in range(count)), sync_interval=100)
    (tmp_path / ".c.avro").write_bytes(b"a dot-file is not counted")
    assert record_flows.avro_records(str(tmp_path)) == 1205
