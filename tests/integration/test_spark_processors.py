"""ExecuteSparkSQL and SparkTransform in a running node, on the real embedded Spark:
records in and out, attribute columns, lineage across the step, and every kind of
bad input routed to `failure` with nothing lost while the flow keeps running."""

from __future__ import annotations

import json

import pytest

from cluster.node.standalone import NodeSettings, StandaloneNode
from flow.loading import parse_flow
from flow.spark.batches import batch_id, output_id
from tests.inbox import drop_all

pytestmark = [pytest.mark.spark]

TIMEOUT = 180


def spark_flow(tmp_path, spark_processor: dict) -> tuple[dict, dict]:
    directories = {name: tmp_path / name for name in ("in", "out", "failed", "originals")}
    for directory in directories.values():
        directory.mkdir(parents=True)
    flow = {
        "processors": [
            {
                "id": "get",
                "type": "GetFile",
                "properties": {"input_directory": str(directories["in"]), "batch_size": 100},
                "scheduling": {"run_schedule": "100 ms"},
            },
            {"id": "spark", **spark_processor},
            {
                "id": "put",
                "type": "PutFile",
                "properties": {"directory": str(directories["out"]), "sync": False},
                "auto_terminate": ["success", "failure"],
            },
            {
                "id": "failed",
                "type": "PutFile",
                "properties": {"directory": str(directories["failed"]), "sync": False},
                "auto_terminate": ["success", "failure"],
            },
            {
                "id": "originals",
                "type": "PutFile",
                "properties": {"directory": str(directories["originals"]), "sync": False},
                "auto_terminate": ["success", "failure"],
            },
        ],
        "connections": [
            {"id": "taken", "source": "get", "destination": "spark"},
            {"id": "results", "source": "spark", "relationships": ["success"], "destination": "put"},
            {"id": "failures", "source": "spark", "relationships": ["failure"], "destination": "failed"},
            {"id": "inputs", "source": "spark", "relationships": ["original"], "destination": "originals"},
        ],
    }
    return flow, directories


def files_in(directory) -> list:
    return sorted(path for path in directory.iterdir() if not path.name.startswith("."))


def records_in(directory) -> list[dict]:
    return [json.loads(line) for path in files_in(directory) for line in path.read_text().splitlines() if line]


def provenance_events(node) -> list:
    node.provenance.rollover()
    node.provenance.wait_idle()
    return node.provenance.events(0, node.provenance.next_event_id)


def parents_by_child(events, component: str) -> dict[str, set[str]]:
    """Each FlowFile `component` made from others -> their ids (a FORK event belongs to
    the parent, a JOIN to the child)."""
    parents: dict[str, set[str]] = {}
    for event in events:
        if event.component_id != component:
            continue
        if event.event_type.name == "FORK":
            for child in event.child_uuids:
                parents.setdefault(child, set()).add(event.flowfile_uuid)
        elif event.event_type.name == "JOIN":
            parents.setdefault(event.flowfile_uuid, set()).update(event.parent_uuids)
    return parents


@pytest.fixture
def run_node(tmp_path, spark_local):
    nodes = []

    def start(flow: dict) -> StandaloneNode:
        node = StandaloneNode(
            parse_flow(flow), str(tmp_path / "node"), NodeSettings(threads=2), spark_session=spark_local
        )
        node.start()
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        node.stop()


def test_sql_joins_json_and_csv_records_with_their_attributes(tmp_path, run_node):
    flow, dirs = spark_flow(
        tmp_path,
        {
            "type": "ExecuteSparkSQL",
            "properties": {
                "sql": "SELECT id, amount * 2 AS doubled, _attr_filename AS source FROM flowfiles",
                "attribute_columns": "filename",
                "batch_size": 10,
            },
        },
    )
    drop_all(
        dirs["in"],
        {
            "a.json": '{"id": 1, "amount": 10}\n{"id": 2, "amount": 20}\n',
            "b.csv": "id,amount\n3,30\n4,40\n",
        },
    )
    node = run_node(flow)
    # The originals and the results reach their PutFiles in one commit, and each PutFile
    # runs on its own: wait for both.
    assert node.wait_until(
        lambda: len(files_in(dirs["originals"])) == 2 and len(records_in(dirs["out"])) == 4, TIMEOUT
    ), node.status()
    records = sorted(records_in(dirs["out"]), key=lambda record: record["id"])
    assert records == [
        {"id": 1, "doubled": 20, "source": "a.json"},
        {"id": 2, "doubled": 40, "source": "a.json"},
        {"id": 3, "doubled": 60, "source": "b.csv"},
        {"id": 4, "doubled": 80, "source": "b.csv"},
    ]
    assert files_in(dirs["failed"]) == []
    # Lineage crosses the step: each output's parents are the FlowFiles of its batch,
    # and its id is the one the batch's input ids give.
    parents = parents_by_child(provenance_events(node), "spark")
    assert set(parents) == {path.name for path in files_in(dirs["out"])}
    for child, inputs in parents.items():
        assert output_id(batch_id(inputs), 0) == child
    assert set().union(*parents.values()) == {path.name for path in files_in(dirs["originals"])}
    assert not any((tmp_path / "node" / "spark").rglob("in-*")), "the staging directories were not deleted"


def transform_module(tmp_path, monkeypatch):
    package = tmp_path / "transforms"
    package.mkdir()
    (package / "custody_test_transforms.py").write_text(
        "from pyspark.sql import functions as F\n"
        "def scale(df, params):\n"
        "    return df.select('id', (F.col('amount') * int(params['factor'])).alias('scaled'))\n"
        "def explode(df, params):\n"
        "    raise RuntimeError('the transform refused this batch')\n"
    )
    monkeypatch.syspath_prepend(str(package))


def test_a_python_transform_gets_its_params_and_a_raising_one_fails_the_batch(tmp_path, run_node, monkeypatch):
    transform_module(tmp_path, monkeypatch)
    flow, dirs = spark_flow(
        tmp_path, {"type": "SparkTransform", "properties": {"function": "custody_test_transforms:scale", "factor": "3"}}
    )
    drop_all(dirs["in"], {"a.json": '{"id": 1, "amount": 5}\n{"id": 2, "amount": 7}\n'})
    node = run_node(flow)
    assert node.wait_until(
        lambda: len(files_in(dirs["originals"])) == 1 and len(records_in(dirs["out"])) == 2, TIMEOUT
    ), node.status()
    assert sorted(records_in(dirs["out"]), key=lambda r: r["id"]) == [{"id": 1, "scaled": 15}, {"id": 2, "scaled": 21}]
    node.stop()

    flow, dirs = spark_flow(
        tmp_path / "again", {"type": "SparkTransform", "properties": {"function": "custody_test_transforms:explode"}}
    )
    drop_all(dirs["in"], {"a.json": '{"id": 1}\n'})
    node = run_node(flow)
    assert node.wait_until(lambda: len(files_in(dirs["failed"])) == 1, TIMEOUT), node.status()
    assert files_in(dirs["out"]) == []


@pytest.mark.parametrize(
    "case, properties, files, reason",
    [
        (
            "a record that does not parse",
            {"sql": "SELECT * FROM flowfiles"},
            {"bad.json": '{"id": 1}\n{"id": \n'},
            "MALFORMED_RECORD",
        ),
        (
            "SQL that does not compile",
            {"sql": "SELEC id FROM flowfiles"},
            {"good.json": '{"id": 1}\n'},
            "PARSE_SYNTAX_ERROR",
        ),
        (
            "SQL naming a column the records lack",
            {"sql": "SELECT nope FROM flowfiles"},
            {"good.json": '{"id": 1}\n'},
            "UNRESOLVED_COLUMN",
        ),
        (
            "content of no record format",
            {"sql": "SELECT * FROM flowfiles"},
            {"notes.txt": "just text\n"},
            "cannot tell the record format",
        ),
    ],
)
def test_bad_input_goes_to_failure_with_the_reason_and_the_flow_keeps_running(
    tmp_path, run_node, case, properties, files, reason
):
    flow, dirs = spark_flow(tmp_path, {"type": "ExecuteSparkSQL", "properties": properties})
    drop_all(dirs["in"], files)
    node = run_node(flow)
    assert node.wait_until(lambda: len(files_in(dirs["failed"])) == len(files), TIMEOUT), (case, node.status())
    [failed] = files_in(dirs["failed"])
    assert failed.read_text() == next(iter(files.values())), "the failed FlowFile's content changed"

    # PutFile writes the file before its session commits the event: wait for the event.
    def reasons() -> set:
        return {
            event.attributes_after.get("spark.error")
            for event in provenance_events(node)
            if event.component_id == "failed"
        }

    assert node.wait_until(reasons, TIMEOUT, poll=0.5), node.status()
    [error] = reasons()
    assert reason in error, error
    assert files_in(dirs["out"]) == [] and files_in(dirs["originals"]) == []
    # The flow keeps running: a good batch after the bad one goes through.
    if "sql" in properties and "nope" not in properties["sql"] and "SELEC " not in properties["sql"]:
        drop_all(dirs["in"], {"later.json": '{"id": 9}\n'})
        assert node.wait_until(lambda: len(files_in(dirs["out"])) == 1, TIMEOUT), node.status()
        assert records_in(dirs["out"]) == [{"id": 9}]
