"""Documents real Apache NiFi 2.3.0 wrote (tests/data/nifi-2.3.0), read as a NiFi user's
files would be: flow definitions downloaded through NiFi's REST API
(`GET /process-groups/{id}/download`) from flows built in it, and a bundle its
MergeContent wrote in FlowFile Stream v3.

- defaults.json: one of each processor and record service Custody maps, as NiFi
  creates them (every property at NiFi's default, every relationship auto-terminated);
- configured.json: the same processors given what each needs to run, services wired,
  ListFile feeding a FetchFile that deletes what it fetched;
- files.json: a flow with parameters, a nested group entered and left through ports, a
  funnel, dates and Java group references in expressions (run in
  tests/integration/test_nifi_flow_cli.py);
- merged.flowfile-v3: 27 FlowFiles MergeContent bundled ("FlowFile Stream, v3")."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from flow.flowfile_v3 import encode, read_stream
from flow.nifi_flow import NiFiFlowError, import_nifi_flow
from flow.nifi_flow.processor_tables import PROCESSOR_MAPPINGS

NIFI_2_3_0 = Path(__file__).resolve().parents[2] / "data" / "nifi-2.3.0"
# NiFi 2.3.0's download of a group built by hand has no Kafka, Parquet or stateless
# NARs in the assembly the benchmark builds; every other mapped processor is there.
ABSENT = {"ConsumeKafka", "PublishKafka", "ExecuteStateless"}


def document(name: str) -> dict:
    return json.loads((NIFI_2_3_0 / name).read_text())


def problems_of(content: dict) -> dict[str, str]:
    with pytest.raises(NiFiFlowError) as raised:
        import_nifi_flow(json.dumps(content).encode(), source="nifi")
    return {problem.path: problem.message for problem in raised.value.problems}


def test_every_property_nifi_writes_at_its_default_is_understood_and_what_it_lacks_is_said():
    content = document("defaults.json")
    types = {processor["type"].rpartition(".")[2] for processor in content["flowContents"]["processors"]}
    assert types == {mapping.custody_type for mapping in PROCESSOR_MAPPINGS} - ABSENT
    problems = problems_of(content)
    refused = {
        content["flowContents"]["processors"][int(path.split("[")[1].rstrip("]"))]["name"]: message
        for path, message in problems.items()
    }
    # all at once, each saying what it lacks: the same processors NiFi shows invalid
    assert set(refused) == {
        "InvokeHTTP", "ListenHTTP", "ConvertRecord", "ValidateRecord", "CompressContent", "EvaluateJsonPath",
        "RouteOnAttribute", "SplitText", "MergeRecord", "RemoveRecordField", "UpdateRecord", "PutFile",
        "QueryRecord", "GetFile", "PartitionRecord", "ListFile", "SplitRecord", "SplitJson",
    }  # fmt: skip
    assert all(message.startswith("Custody refuses it: ") for message in refused.values())
    assert "required property is missing" in refused["GetFile"]
    assert "at least one dynamic property" in refused["RouteOnAttribute"]


def test_every_processor_configured_in_nifi_imports_and_loads():
    imported = import_nifi_flow((NIFI_2_3_0 / "configured.json").read_bytes(), source="configured.json")
    processors = {processor["id"]: processor for processor in imported.flow["processors"]}
    assert {p["type"] for p in processors.values()} == {mapping.custody_type for mapping in PROCESSOR_MAPPINGS} - ABSENT
    assert processors["QueryRecord"]["properties"]["record_reader"] == "avro-reader"
    assert processors["LogAttribute"]["properties"] == {"log_level": "warning", "log_payload": True}
    assert processors["MergeRecord"]["properties"]["min_records"] == 100
    # the FetchFile that deletes is kept under the directory its ListFile lists
    assert processors["FetchFile"]["properties"] == {"completion_strategy": "delete", "allowed_root": "/tmp/nf/list"}
    assert any("allowed_root '/tmp/nf/list'" in line for line in imported.report)
    services = {service["id"]: service for service in imported.flow["services"]}
    assert services["csv-reader"]["properties"]["value_separator"] == ";"


def test_a_flowfile_v3_bundle_nifi_wrote_reads_whole_and_writes_back_byte_for_byte():
    written = (NIFI_2_3_0 / "merged.flowfile-v3").read_bytes()
    flowfiles = list(read_stream(io.BytesIO(written)))
    assert len(flowfiles) == 27
    for flowfile in flowfiles:
        assert set(flowfile.attributes) == {"path", "filename", "stage", "uuid", "RouteOnAttribute.Route"}
        assert flowfile.attributes["stage"] == "updated"
        assert flowfile.content == f"hello {flowfile.attributes['filename']}".encode()
    assert len({flowfile.attributes["uuid"] for flowfile in flowfiles}) == 27
    assert encode([(flowfile.attributes, flowfile.content) for flowfile in flowfiles]) == written
