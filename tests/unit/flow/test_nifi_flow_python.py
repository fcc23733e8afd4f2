"""NiFi 2 Python processors in NiFi flow definitions: NiFi names such a processor by its
class alone (`TagAndUpper`, bundle `python-extensions`); with the class's directory
loaded, the import makes the same class's Custody processor of it, its properties by
their NiFi names, and the export writes it back as NiFi does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flow.nifi_flow import NiFiFlowError, export_nifi_flow, import_nifi_flow
from flow.python_extensions import PythonExtensions, extension_registry

from .nifi_flows import essence

PROCESSORS = str(Path(__file__).resolve().parents[2] / "data" / "python_processors")

FLOW = {
    "name": "python",
    "services": [{"id": "json", "type": "JsonTreeReader"}, {"id": "json-out", "type": "JsonRecordSetWriter"}],
    "processors": [
        {"id": "get", "type": "GetFile", "properties": {"input_directory": "/tmp/in"}},
        {
            "id": "tag",
            "type": "TagAndUpper",
            "properties": {"Greeting": "for ${filename:toUpper()}", "Repeat": "2"},
            "auto_terminate": ["original", "failure"],
        },
        {
            "id": "partition",
            "type": "PartitionByCity",
            "properties": {"Record Reader": "json", "Record Writer": "json-out", "Partition Field": "city"},
            "auto_terminate": ["original", "failure", "invalid"],
        },
        {
            "id": "put",
            "type": "PutFile",
            "properties": {"directory": "/tmp/out", "file_name": "${filename}"},
            "auto_terminate": ["success"],
        },
    ],
    "connections": [
        {"source": "get", "destination": "tag"},
        {"source": "tag", "relationships": ["success"], "destination": "partition"},
        {"source": "partition", "relationships": ["success"], "destination": "put"},
        {"source": "put", "relationships": ["failure"], "destination": "put"},
    ],
}


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    return extension_registry(PythonExtensions((PROCESSORS,), cache_directory=str(tmp_path_factory.mktemp("cache"))))


def test_the_export_names_a_python_processor_as_nifi_does_and_the_import_gives_it_back(registry):
    document = json.loads(json.dumps(export_nifi_flow(FLOW, registry=registry)))
    by_name = {p["name"]: p for p in document["flowContents"]["processors"]}
    tag = by_name["tag"]
    assert tag["type"] == "TagAndUpper"
    assert tag["bundle"] == {
        "group": "org.apache.nifi",
        "artifact": "python-extensions",
        "version": registry["TagAndUpper"].source.version,
    }
    assert tag["properties"]["Greeting"] == "for ${filename:toUpper()}"
    services = {s["name"]: s["identifier"] for s in document["flowContents"]["controllerServices"]}
    assert by_name["partition"]["properties"]["Record Reader"] == services["json"]
    assert sorted(by_name["partition"]["autoTerminatedRelationships"]) == ["failure", "invalid", "original"]

    again = import_nifi_flow(json.dumps(document), registry=registry).flow
    assert essence(again, registry=registry) == essence(FLOW, registry=registry)


def test_without_its_directory_a_python_processor_is_one_problem_saying_how_to_load_it(registry):
    document = json.dumps(export_nifi_flow(FLOW, registry=registry))
    with pytest.raises(NiFiFlowError) as refused:
        import_nifi_flow(document)
    problems = [line for line in str(refused.value).splitlines() if ".type:" in line]
    assert len(problems) == 2, str(refused.value)
    assert all("--python-extensions DIR" in line for line in problems)
    assert any("'TagAndUpper'" in line for line in problems) and any("'PartitionByCity'" in line for line in problems)


def test_a_python_processors_property_value_is_checked_as_custody_loads_it(registry):
    document = json.loads(json.dumps(export_nifi_flow(FLOW, registry=registry)))
    tag = next(p for p in document["flowContents"]["processors"] if p["name"] == "tag")
    tag["properties"]["Repeat"] = "many"
    with pytest.raises(NiFiFlowError) as refused:
        import_nifi_flow(json.dumps(document), registry=registry)
    assert "Repeat" in str(refused.value)
