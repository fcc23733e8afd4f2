"""Careless numbers on the command line or in a flow are refused before anything starts,
run as a user types them: exit status 2 and one line on stderr that names the argument,
or the processor or connection and its property. Each of these ran before (a busy loop
of status lines, a traceback, a node that could not stop) or failed later."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HELLO = str(ROOT / "examples" / "hello.yaml")

FLOW = """
name: careless
processors:
  - id: make
    type: GenerateFlowFile
    scheduling: {scheduling}
  - id: put
    type: PutFile
    properties: {{directory: "#{{data_dir}}/out", batch_size: {batch}}}
    auto_terminate: [success, failure]
connections:
  - {{source: make, destination: put, expiration: {expiration}}}
"""


def refusal(tmp_path, *argv) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cluster.cli", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    (line,) = done.stderr.splitlines()
    return line


@pytest.mark.parametrize(
    "argument, value, says",
    [
        ("--threads", "0", "--threads must be from 1 to 1024 (the node's task threads), not 0"),
        ("--threads", "100000", "--threads must be from 1 to 1024"),
        (
            "--status-interval",
            "nan",
            "--status-interval must be 0 (no status lines) or from 1 to 86400 seconds, not nan",
        ),
        ("--status-interval", "-1", "not -1"),
    ],
)
def test_custody_run_refuses_careless_arguments(tmp_path, argument, value, says):
    line = refusal(tmp_path, "run", "--flow", HELLO, "--data-dir", str(tmp_path / "data"), argument, value)
    assert line.startswith("custody run: ") and says in line, line
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    "scheduling, batch, expiration, says",
    [
        (
            "{concurrent_tasks: 100000}",
            10,
            "0 sec",
            "processor 'make': property 'scheduling.concurrent_tasks': expected at most 1024 concurrent tasks",
        ),
        (
            "{run_schedule: 100000000}",
            10,
            "0 sec",
            "processor 'make': property 'scheduling.run_schedule': the duration '100000000' is longer than a year",
        ),
        (
            "{}",
            0,
            "0 sec",
            "processor 'put': property 'batch_size': wrong value for an integer property: must be at least 1, got 0",
        ),
        ("{}", 10, "0.1 ms", "connections[0].expiration: '0.1 ms' is less than 1 ms, which would mean never"),
    ],
)
def test_custody_run_refuses_a_careless_flow_naming_the_place(tmp_path, scheduling, batch, expiration, says):
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.format(scheduling=scheduling, batch=batch, expiration=expiration))
    line = refusal(tmp_path, "run", "--flow", str(flow), "--data-dir", str(tmp_path / "data"), "--status-interval", "0")
    assert line.startswith("custody run: invalid flow: ") and says in line, line


def test_custody_node_offload_refuses_a_wait_that_is_not_a_number_of_seconds(tmp_path):
    line = refusal(tmp_path, "node", "offload", "--url", "http://127.0.0.1:9", "--wait", "nan")
    assert line == "custody node offload: --wait must be from 0 to 86400 seconds, not nan"
