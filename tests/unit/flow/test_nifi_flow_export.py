"""Custody flows exported to NiFi's flow definition format: the document has what NiFi
requires of each component, importing it gives back an equal Custody flow, and what
only Custody has is refused with every problem listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flow.definition import read_flow_document
from flow.nifi_flow import NiFiFlowError, export_nifi_flow, import_nifi_flow

from .nifi_flows import NIFI_FLOWS, essence, nifi_document

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_the_export_has_what_nifi_requires_of_each_component():
    flow = import_nifi_flow(nifi_document("every_processor.json")).flow
    document = json.loads(json.dumps(export_nifi_flow(flow)))  # plain JSON
    assert document["flowEncodingVersion"] == "1.0"
    contents = document["flowContents"]
    assert contents["componentType"] == "PROCESS_GROUP" and contents["parameterContextName"] == "Every processor"
    for processor in contents["processors"]:
        assert processor["componentType"] == "PROCESSOR" and processor["type"].startswith("org.apache.nifi.")
        assert (
            set(processor["bundle"]) == {"group", "artifact", "version"}
            and processor["bundle"]["group"] == "org.apache.nifi"
        )
        assert set(processor["position"]) == {"x", "y"} and processor["identifier"]
        assert processor["groupIdentifier"] == contents["identifier"]
    for service in contents["controllerServices"]:
        assert service["controllerServiceApis"][0]["type"].startswith("org.apache.nifi.serialization.")
    ids = {p["identifier"] for p in contents["processors"]}
    for connection in contents["connections"]:
        assert connection["source"]["id"] in ids and connection["destination"]["id"] in ids
    parameters = document["parameterContexts"]["Every processor"]["parameters"]
    assert {p["name"]: p["value"] for p in parameters} == {"region": "eu", "kafka_password": None}
    assert export_nifi_flow(flow) == export_nifi_flow(flow), "the same flow exports to the same document"


@pytest.mark.parametrize("name", ["every_processor.json", "files_pipeline.json"])
def test_importing_the_export_gives_back_an_equal_flow(name):
    imported = import_nifi_flow(nifi_document(name))
    placeholders = dict.fromkeys(imported.unset_parameters, "0")
    again = import_nifi_flow(json.dumps(export_nifi_flow(imported.flow)))
    assert essence(again.flow, placeholders) == essence(imported.flow, placeholders)


def test_a_flow_written_by_hand_round_trips():
    flow = read_flow_document(str(NIFI_FLOWS / "files_pipeline.yaml"))
    again = import_nifi_flow(json.dumps(export_nifi_flow(flow))).flow
    assert essence(again) == essence(flow)


def test_what_only_custody_has_is_refused_every_part_at_once():
    flow = read_flow_document(str(EXAMPLES / "hello.yaml"))
    flow["processors"].append(
        {
            "id": "spark",
            "type": "ExecuteSparkSQL",
            "properties": {"sql": "SELECT 1"},
            "auto_terminate": ["success", "original", "failure"],
        }
    )
    flow["processors"][-2]["properties"]["sync"] = False  # PutFile 'write'
    flow["processors"][-2]["scheduling"] = {"max_rollbacks": 2}
    flow["connections"][0]["swap_threshold"] = 5
    with pytest.raises(NiFiFlowError) as raised:
        export_nifi_flow(flow, source="hello.yaml", registry=None)
    places = [problem.path for problem in raised.value.problems]
    assert places == [
        "processor 'generate': property 'sequence_attribute'",
        "processor 'write': property 'file_name'",  # NiFi names files after the filename attribute only
        "processor 'write': property 'sync'",
        "processor 'write': scheduling.max_rollbacks",
        "processor 'spark'",
        "connection 'generate/success/tag'",
    ]


def test_a_flows_ports_become_the_groups_own_ports_and_back():
    flow = {
        "name": "stateless",
        "processors": [{"id": "tag", "type": "UpdateAttribute", "properties": {"seen": "yes"}}],
        "ports": [{"id": "in", "type": "input"}, {"id": "out", "type": "output"}, {"id": "bad", "type": "failure"}],
        "connections": [
            {"source": "in", "destination": "tag"},
            {"source": "tag", "relationships": ["success"], "destination": "out"},
        ],
    }
    document = export_nifi_flow(flow)
    contents = document["flowContents"]
    assert [p["name"] for p in contents["inputPorts"]] == ["in"]
    assert [(p["name"], p["portFunction"]) for p in contents["outputPorts"]] == [
        ("out", "STANDARD"),
        ("bad", "FAILURE"),
    ]
    assert import_nifi_flow(json.dumps(document)).flow["ports"] == flow["ports"]
    assert essence(import_nifi_flow(json.dumps(document)).flow) == essence(flow)
