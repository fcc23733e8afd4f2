"""Two versions of one NiFi Python processor class side by side, as NiFi keeps them
(a processor upgraded by dropping its new version beside the old one): the latest runs
under the class's name, each other version under `Name@version`; a NiFi flow's
processor gets the version its bundle names; the export writes each back with its own
version; one version defined twice is refused naming both files."""

from __future__ import annotations

import json

import pytest

from flow.nifi_flow import export_nifi_flow, import_nifi_flow
from flow.python_extensions import PythonExtensionError, PythonExtensions, extension_registry, version_key
from tests.unit.flow.test_python_processors import one_processor, run, write

VERSIONED = """from nifiapi.flowfiletransform import FlowFileTransform, FlowFileTransformResult

class Stamp(FlowFileTransform):
    class ProcessorDetails:
        version = '{version}'

    def __init__(self, **kwargs):
        pass

    def transform(self, context, flowfile):
        return FlowFileTransformResult('success', contents='{text}')
"""


def versions(tmp_path, *pairs):
    directory = tmp_path / "extensions"
    for file_name, version, text in pairs:
        write(directory, file_name, VERSIONED.format(version=version, text=text))
    return extension_registry(PythonExtensions((str(directory),), cache_directory=str(tmp_path)))


def stamped(registry, processor_type):
    out = run(
        registry, one_processor(processor_type, {}, ["success"], auto_terminate=["original", "failure"]), [({}, b"x")]
    )
    return [content for _, content in out["success"]]


def test_the_latest_version_has_the_class_name_and_each_other_its_version(tmp_path):
    registry = versions(
        tmp_path, ("stamp.py", "1.2.0", "one"), ("stamp_v2.py", "1.10.0", "two"), ("old.py", "1.2.0-SNAPSHOT", "zero")
    )
    assert registry["Stamp"].source.version == "1.10.0"
    assert stamped(registry, "Stamp") == [b"two"]
    assert stamped(registry, "Stamp@1.2.0") == [b"one"]
    assert stamped(registry, "Stamp@1.2.0-SNAPSHOT") == [b"zero"]


def test_a_nifi_flow_gets_the_version_its_bundle_names_and_exports_it_back(tmp_path):
    registry = versions(tmp_path, ("stamp.py", "0.0.1-SNAPSHOT", "one"), ("stamp_v2.py", "0.0.2-SNAPSHOT", "two"))
    flow = {
        "name": "stamps",
        "processors": [
            {"id": "old", "type": "Stamp@0.0.1-SNAPSHOT", "auto_terminate": ["success", "original", "failure"]},
            {"id": "new", "type": "Stamp", "auto_terminate": ["success", "original", "failure"]},
        ],
        "connections": [],
    }
    document = json.loads(json.dumps(export_nifi_flow(flow, registry=registry)))
    written = {p["name"]: (p["type"], p["bundle"]["version"]) for p in document["flowContents"]["processors"]}
    assert written == {"old": ("Stamp", "0.0.1-SNAPSHOT"), "new": ("Stamp", "0.0.2-SNAPSHOT")}
    imported = {
        p["id"]: p["type"] for p in import_nifi_flow(json.dumps(document), registry=registry).flow["processors"]
    }
    assert imported == {"old": "Stamp@0.0.1-SNAPSHOT", "new": "Stamp"}
    # a version that is not loaded: the latest, as NiFi takes the one it has
    for processor in document["flowContents"]["processors"]:
        processor["bundle"]["version"] = "9.9.9"
    imported = {
        p["id"]: p["type"] for p in import_nifi_flow(json.dumps(document), registry=registry).flow["processors"]
    }
    assert imported == {"old": "Stamp", "new": "Stamp"}


def test_one_version_defined_twice_is_refused_naming_both_files(tmp_path):
    with pytest.raises(PythonExtensionError, match=r"Stamp version '1' is also defined in .*a\.py"):
        versions(tmp_path, ("a.py", "1", "one"), ("b.py", "1", "two"))


def test_versions_order_numbers_as_numbers_and_a_release_after_its_snapshot():
    ordered = ["0.0.2-SNAPSHOT", "0.0.2", "0.0.10", "1.0.0-rc1", "1.0.0", "2"]
    assert sorted(reversed(ordered), key=version_key) == ordered
