"""`custody flow import` and `custody flow export` run as a user types them: a NiFi flow
definition with a nested group, a funnel and parameters imports, and the imported flow
runs on a standalone node writing the same files, byte for byte, as the Custody flow
written by hand; its export imports back to an equal flow; a document Custody cannot
run, or a malformed one, exits 2 with every problem on stderr and writes nothing."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from cluster.node.standalone import StandaloneNode
from flow.loading import load_flow
from tests.unit.flow.nifi_flows import essence

ROOT = Path(__file__).resolve().parents[2]
NIFI_FLOWS = ROOT / "tests" / "data" / "nifi_flows"
CUSTODY = str(Path(sys.executable).with_name("custody"))
INPUTS = {"a1.txt": b"alpha\n", "b2.txt": b"beta\n", "a3.txt": b"", "c4.csv": b"x,y\n1,2\n"}


def custody(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([CUSTODY, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)


def run_flow(flow: Path, work: Path, **parameters: str) -> list[bytes]:
    """The contents PutFile writes when `flow` takes INPUTS from its in_dir, sorted."""
    inbox, outbox = work / "in", work / "out"
    inbox.mkdir(parents=True)
    for name, content in INPUTS.items():
        (inbox / name).write_bytes(content)
    parameters.update(in_dir=str(inbox), out_dir=str(outbox))
    node = StandaloneNode(load_flow(str(flow), parameters), str(work / "node"))
    node.start()
    try:
        written = lambda: [p for p in outbox.glob("*") if not p.name.startswith(".")] if outbox.exists() else []  # noqa: E731
        assert node.wait_until(lambda: len(written()) == len(INPUTS), 30), (written(), node.status())
    finally:
        node.stop()
    assert not list(inbox.iterdir()), "GetFile took every file"
    return sorted(path.read_bytes() for path in written())


def test_an_imported_nifi_flow_runs_as_the_flow_written_by_hand(tmp_path):
    imported = tmp_path / "imported.yaml"
    done = custody("flow", "import", str(NIFI_FLOWS / "files_pipeline.json"), "-o", str(imported), "--report")
    assert done.returncode == 0, done.stderr
    assert "processor 'Intake/Get' <- flowContents.processGroups[0].processors[0]" in done.stdout
    assert "parameter #{api_token}: left unset (sensitive)" in done.stdout
    assert "# Parameter api_token is left unset (sensitive)" in imported.read_text()

    from_nifi = run_flow(imported, tmp_path / "nifi")
    by_hand = run_flow(NIFI_FLOWS / "files_pipeline.yaml", tmp_path / "hand")
    assert from_nifi == by_hand
    # the attributes UpdateAttribute set reached ReplaceText: the a-files carry them
    assert from_nifi == sorted([b"hello A1.TXT: alpha\n", b"beta\n", b"hello A3.TXT: ", b"x,y\n1,2\n"])

    exported, again = tmp_path / "exported.json", tmp_path / "again.yaml"
    assert custody("flow", "export", str(imported), "--nifi", "-o", str(exported)).returncode == 0
    assert custody("flow", "import", str(exported), "-o", str(again)).returncode == 0
    assert essence(yaml.safe_load(again.read_text())) == essence(yaml.safe_load(imported.read_text()))


def test_a_stateless_group_runs_as_an_execute_stateless_of_its_own_flow(tmp_path):
    imported = tmp_path / "stateless.yaml"
    done = custody("flow", "import", str(NIFI_FLOWS / "stateless_pipeline.json"), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    subflow = tmp_path / "stateless.Enrich.yaml"
    assert yaml.safe_load(imported.read_text())["processors"][2]["properties"] == {
        "flow": str(subflow),
        "input_port": "in",
    }
    from_nifi = run_flow(imported, tmp_path / "nifi")
    by_hand = run_flow(
        NIFI_FLOWS / "stateless_pipeline.yaml", tmp_path / "hand", enrich_flow=str(NIFI_FLOWS / "stateless_enrich.yaml")
    )
    assert from_nifi == by_hand == sorted(content + b" [enriched]" for content in INPUTS.values())


# What NiFi 2.3.0 itself wrote running the flow of tests/data/nifi-2.3.0/files.json on
# INPUTS: the files' contents, and their names (its PutFile's, after `filename`).
NIFI_2_3_0_WROTE = sorted([b"hello A1 4: alpha\n", b"beta\n", b"hello A3 4: ", b"x,y\n1,2\n"])


def test_a_flow_nifi_2_3_0_downloaded_imports_and_writes_what_nifi_wrote(tmp_path):
    imported = tmp_path / "files.yaml"
    done = custody("flow", "import", str(ROOT / "tests" / "data" / "nifi-2.3.0" / "files.json"), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    # its expressions are NiFi's: a date format and a Java group reference
    assert "${now():format('yyyy', 'UTC')}" in imported.read_text()
    assert "replaceAll('(.*)[.][a-z]+$', '$1')" in imported.read_text()
    assert run_flow(imported, tmp_path / "run") == NIFI_2_3_0_WROTE
    assert sorted(os.listdir(tmp_path / "run" / "out")) == sorted(INPUTS)


def run_as_nifi_did(tmp_path: Path, name: str, pattern: str) -> tuple[dict, dict]:
    """Custody's import of tests/data/nifi-2.3.0/NAME.json run on NAME-inputs/: the files
    matching `pattern` it wrote and those NiFi 2.3.0 wrote (NAME-outputs/), by path."""
    data = ROOT / "tests" / "data" / "nifi-2.3.0"
    imported = tmp_path / f"{name}.yaml"
    done = custody("flow", "import", str(data / f"{name}.json"), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    inbox, outbox = tmp_path / "in", tmp_path / "out"
    shutil.copytree(data / f"{name}-inputs", inbox)
    expected = {
        p.relative_to(data / f"{name}-outputs"): p.read_bytes() for p in (data / f"{name}-outputs").rglob(pattern)
    }
    node = StandaloneNode(load_flow(str(imported), {"in_dir": str(inbox), "out_dir": str(outbox)}), str(tmp_path / "n"))
    node.start()
    try:

        def written() -> dict:
            return {p.relative_to(outbox): p.read_bytes() for p in outbox.rglob(pattern)} if outbox.exists() else {}

        assert node.wait_until(lambda: len(written()) == len(expected), 30), (written(), node.status())
    finally:
        node.stop()
    return written(), expected


def test_nifi_2_3_0_json_and_content_processors_write_what_nifi_wrote_byte_for_byte(tmp_path):
    """SplitJson, UpdateAttribute, FlattenJson, ExtractText, RouteOnContent,
    CryptographicHashContent, AttributesToJSON, EncodeContent and PutFile, built and run
    in NiFi 2.3.0 on json-inputs/: Custody's import writes the same files (names and
    bytes) as NiFi did (json-outputs/)."""
    written, expected = run_as_nifi_did(tmp_path, "json", "*.json")
    assert written == expected


def test_nifi_2_3_0_validate_record_with_an_inferred_schema_routes_and_writes_as_nifi_did(tmp_path):
    """ValidateRecord with a JsonTreeReader that infers (NiFi's default) built and run in
    NiFi 2.3.0: every readable record valid, values of mixed types kept, dates kept as
    text, the unreadable file to failure whole, each under its own name. Two differences
    are known and named: NiFi leaves out a field a record lacks where Custody writes
    null, and writes a whole number among decimals as it was (1) where Custody writes
    the column's decimal (1.0, equal as JSON numbers)."""
    written, expected = run_as_nifi_did(tmp_path, "validate", "*.json")
    assert sorted(written) == sorted(expected)
    for path in (Path("valid/mixed.json"), Path("failure/broken.json")):
        assert written[path] == expected[path], path

    def present(data: bytes) -> list[dict]:
        return [{k: v for k, v in json.loads(line).items() if v is not None} for line in data.splitlines()]

    for path in (Path("valid/people.json"), Path("valid/array.json")):
        assert present(written[path]) == present(expected[path]), path


def test_nifi_2_3_0_convert_record_between_csv_and_json_writes_what_nifi_wrote(tmp_path):
    """ConvertRecord with NiFi's CSVReader, JsonTreeReader, JsonRecordSetWriter and
    CSVRecordSetWriter at their defaults, built and run in NiFi 2.3.0, both ways byte for
    byte. CSV to JSON: the header read although "Treat First Line as Header" is false
    (NiFi reads it whenever it infers the schema); decimals as Java writes them. JSON to
    CSV: a list as `[a, b]`, a record as its JSON, `7.0`; only what needs it quoted, a
    quote escaped with a backslash (NiFi's default escape character)."""
    written, expected = run_as_nifi_did(tmp_path, "convert", "[!.]*.*")
    assert sorted(written) == sorted(expected) == [Path("csv/people.json"), Path("json/orders.csv")]
    assert written[Path("json/orders.csv")] == expected[Path("json/orders.csv")]
    assert written[Path("csv/people.json")] == expected[Path("csv/people.json")]
    nifi = list(csv.reader(io.StringIO(expected[Path("csv/people.json")].decode()), escapechar="\\", doublequote=False))
    assert nifi[1] == ["1", "alpha", "[a, b]", '{"x":1}', "10.5", ""]


def test_nifi_2_3_0_expressions_evaluate_to_what_nifi_wrote_byte_for_byte(tmp_path):
    """Some sixty-five expressions in one UpdateAttribute (several attributes at once,
    math(), HTML and name-based UUIDs, evaluateELString(), dates as results, Java's
    decimals, division and remainders, JSON changed at a path, getUri(), quoted text
    holding expressions, escaped dollars), written
    out by AttributesToJSON, built and run in NiFi 2.3.0: Custody's import writes the
    same two files, byte for byte (so the members in NiFi's order too)."""
    written, expected = run_as_nifi_did(tmp_path, "expressions", "[!.]*")
    assert len(expected) == 2
    for path, content in expected.items():
        assert json.loads(written[path]) == json.loads(content), path  # the values, to read a failure by
    assert written == expected


def test_a_nifi_2_kafka_flow_imports_with_its_connection_services_settings_in_each_processor(tmp_path):
    imported = tmp_path / "kafka.yaml"
    done = custody("flow", "import", str(NIFI_FLOWS / "kafka_nifi2.json"), "-o", str(imported), "--report")
    assert done.returncode == 0, done.stderr
    assert (
        "service 'Kafka' <- flowContents.controllerServices[0] (org.apache.nifi.kafka.service.Kafka3ConnectionService):"
        " its settings go into each processor that references it"
    ) in done.stdout
    flow = yaml.safe_load(imported.read_text())
    assert [(p["id"], p["type"], p["properties"]["bootstrap_servers"]) for p in flow["processors"]] == [
        ("Consume", "ConsumeKafka", "127.0.0.1:9092"),
        ("Publish", "PublishKafka", "127.0.0.1:9092"),
    ]
    definition = load_flow(str(imported), {"kafka_password": "secret"})
    assert definition.processors["Consume"].properties["sasl_password"] == "secret"


def test_a_document_custody_cannot_run_exits_2_listing_every_problem_and_writes_nothing(tmp_path):
    output = tmp_path / "out.yaml"
    done = custody("flow", "import", str(NIFI_FLOWS / "unsupported.json"), "-o", str(output), "--report")
    assert done.returncode == 2, done.stderr
    assert not output.exists() and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == f"custody flow import: {NIFI_FLOWS / 'unsupported.json'}: 19 problem(s):"
    assert len(lines) == 20
    for path in (
        "flowContents.processors[0].type",
        "flowContents.connections[1].destination.id",
        "flowContents.processGroups[0].inputPorts[1]",
    ):
        assert any(line.startswith(f"  {path}: ") for line in lines), path

    done = custody("flow", "import", str(NIFI_FLOWS / "malformed.json"), "-o", str(output))
    assert done.returncode == 2 and not output.exists()
    assert "  flowContents.processors[0].properties: expected an object, got a list" in done.stderr.splitlines()

    done = custody("flow", "import", str(NIFI_FLOWS / "not_json.json"), "-o", str(output))
    assert done.returncode == 2 and not output.exists() and "not JSON" in done.stderr

    exported = tmp_path / "hello.json"
    done = custody("flow", "export", str(ROOT / "examples" / "hello.yaml"), "--nifi", "-o", str(exported))
    assert done.returncode == 2 and not exported.exists()
    assert "processor 'generate': property 'sequence_attribute'" in done.stderr


def test_a_flow_with_nifi_python_processors_exports_and_imports_with_their_directory(tmp_path):
    from tests.unit.flow.test_nifi_flow_python import FLOW, PROCESSORS

    written, exported, imported = tmp_path / "python.yaml", tmp_path / "python.json", tmp_path / "back.yaml"
    written.write_text(yaml.safe_dump(FLOW))
    extensions = ("--python-extensions", PROCESSORS)
    done = custody("flow", "export", str(written), "--nifi", *extensions, "-o", str(exported))
    assert done.returncode == 0, done.stderr

    refused = custody("flow", "import", str(exported), "-o", str(imported))
    assert refused.returncode == 2 and not imported.exists()
    assert refused.stderr.count("given with --python-extensions DIR") == 2, refused.stderr

    done = custody("flow", "import", str(exported), *extensions, "-o", str(imported), "--report")
    assert done.returncode == 0, done.stderr
    assert "processor 'tag' <- flowContents.processors[1] (TagAndUpper) as TagAndUpper" in done.stdout
    from flow.python_extensions import PythonExtensions, extension_registry

    registry = extension_registry(PythonExtensions((PROCESSORS,), cache_directory=str(tmp_path / "cache")))
    back = yaml.safe_load(imported.read_text())
    assert essence(back, registry=registry) == essence(FLOW, registry=registry)
