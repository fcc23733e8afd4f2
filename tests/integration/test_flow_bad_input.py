"""Bad input: malformed flows, unknown processors, wrong types, a busy data directory,
and a full disk - each a clear error naming the thing, and nothing lost."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cluster.drills.checker import check_node_repositories
from cluster.node.standalone import NodeError, StandaloneNode
from flow.loading import parse_flow

ROOT = Path(__file__).resolve().parents[2]


def custody_run(flow_text: str, tmp_path) -> subprocess.CompletedProcess:
    flow = tmp_path / "flow.yaml"
    flow.write_text(textwrap.dedent(flow_text))
    return subprocess.run(
        [sys.executable, "-m", "cluster.cli", "run", "--flow", str(flow), "--data-dir", str(tmp_path / "data")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "text, expected",
    [
        ("processors:\n  - id: a\n    type: [oops\n", "malformed YAML at line "),
        (
            "processors:\n  - {id: gen, type: MakeFlowFiles}\n",
            "processor 'gen': unknown processor type 'MakeFlowFiles'",
        ),
        (
            "processors:\n  - {id: gen, type: GenerateFlowFile, properties: {batch_size: many}}\n",
            "processor 'gen': property 'batch_size': wrong value for an integer property: "
            "expected an integer, got 'many'",
        ),
        (
            "processors:\n  - {id: gen, type: GenerateFlowFile, scheduling: {run_schedule: often}}\n",
            "processor 'gen': property 'scheduling.run_schedule'",
        ),
        (
            "processors:\n  - {id: fetch, type: FetchFile, properties: {completion_strategy: delete}}\n",
            "processor 'fetch': property 'allowed_root': completion_strategy delete deletes whatever file "
            "the FlowFile's attributes name",
        ),
    ],
)
def test_custody_run_refuses_a_bad_flow_with_a_clear_error(tmp_path, text, expected):
    result = custody_run(text, tmp_path)
    assert result.returncode == 2
    assert expected in result.stderr and "invalid flow" in result.stderr
    assert not (tmp_path / "data").exists(), "nothing was created for an invalid flow"


def small_flow(directory):
    return parse_flow(
        {
            "processors": [
                {
                    "id": "gen",
                    "type": "GenerateFlowFile",
                    "properties": {
                        "batch_size": 10,
                        "file_size": "64 KB",
                        "unique_flowfiles": True,
                        "sequence_attribute": "seq",
                    },
                    "scheduling": {"yield_duration": "100 ms"},
                }
            ],
            "ports": [{"id": "sink", "type": "output"}],
            # Back-pressure stops the generator at 6 MB queued: room enough on the 16 MB disk
            # once the ballast is gone, too much while it is there.
            "connections": [
                {
                    "id": "backlog",
                    "source": "gen",
                    "destination": "sink",
                    "back_pressure": {"object_count": 1_000_000, "data_size": "6 MB"},
                }
            ],
        }
    )


def test_one_node_per_data_directory(tmp_path):
    first = StandaloneNode(small_flow(tmp_path), str(tmp_path / "data"))
    first.start(paused=True)
    try:
        with pytest.raises(NodeError, match="another custody node is running on"):
            StandaloneNode(small_flow(tmp_path), str(tmp_path / "data")).start()
    finally:
        first.stop()


@pytest.fixture
def small_filesystem(small_tmpfs):
    return small_tmpfs("16m")


@pytest.mark.slow
def test_a_full_disk_is_a_clear_error_nothing_is_lost_and_the_flow_resumes(small_filesystem, caplog):
    data = small_filesystem / "data"
    ballast = small_filesystem / "ballast"
    node = StandaloneNode(small_flow(small_filesystem), str(data))
    node.start(paused=True)
    free = os.statvfs(small_filesystem).f_bavail * os.statvfs(small_filesystem).f_frsize
    ballast.write_bytes(b"\0" * (free - (2 << 20)))  # leaves 2 MB; removed later to free space
    node.resume()
    backlog = node.graph.queues["backlog"]
    try:
        assert node.wait_until(lambda: node.engine.status()["processors"]["gen"]["failures"] > 0, 60), (
            "the disk never filled up"
        )
        error = node.engine.status()["processors"]["gen"]["last_error"]
        assert "full" in error.lower() or "no space" in error.lower(), error
        print("full-disk error:", error)
        full_count = backlog.count
        # Free space: the flow resumes by itself.
        ballast.unlink()
        assert node.wait_until(lambda: backlog.is_full(), 60), node.status()
        assert backlog.count > full_count and node.engine.status()["processors"]["gen"]["last_error"] is None
    finally:
        node.stop()
    assert full_count > 0
    # Everything committed before and during the full disk is intact after a restart.
    report = check_node_repositories(str(data))
    assert report.missing_content == [] and report.orphaned_resources == [], report.summary()
    again = StandaloneNode(small_flow(small_filesystem), str(data))
    again.start(paused=True)
    try:
        assert again.graph.queues["backlog"].count == report.live_flowfiles + report.swapped_flowfiles
        assert again.graph.queues["backlog"].count >= full_count
        state = again.shard.get_state("gen")
        assert int(state["next"]) == again.graph.queues["backlog"].count, "every generated FlowFile is queued"
    finally:
        again.stop()
