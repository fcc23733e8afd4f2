"""`custody run --spark-master spark://...` as a user types it: the node's Spark
processors run on the harness's real standalone master and worker, the session's
start and stop are in the node's log with their times, and Ctrl-C (SIGTERM) stops it
cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request

import pytest

from cluster.services.process import wait_until
from cluster.services.spark import spark_environment
from tests.inbox import drop

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]  # its waits add up to 780 s

FLOW = """\
name: spark-standalone
processors:
  - id: get
    type: GetFile
    properties: {{input_directory: "{inbox}"}}
    scheduling: {{run_schedule: 200 ms}}
  - id: sql
    type: ExecuteSparkSQL
    properties:
      sql: "SELECT city, count(*) AS people, sum(age) AS years FROM flowfiles GROUP BY city"
      batch_size: 10
      {extra}
    auto_terminate: [original, failure]
  - id: put
    type: PutFile
    properties: {{directory: "{outbox}", sync: false}}
    auto_terminate: [success, failure]
connections:
  - {{source: get, destination: sql}}
  - {{source: sql, relationships: [success], destination: put}}
"""


def start_node(spark_standalone, tmp_path, flow_text: str):
    """`custody run` on the standalone master, as a user types it; (process, log path)."""
    flow = tmp_path / "flow.yaml"
    flow.write_text(flow_text)
    log_path = tmp_path / "node.log"
    env = {**os.environ, **spark_environment()}
    with open(log_path, "w") as log:
        node = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cluster.cli",
                "run",
                "--flow",
                str(flow),
                "--data-dir",
                str(tmp_path / "node"),
                "--name",
                "spark-solo",
                "--spark-master",
                spark_standalone.master_url,
                "--spark-conf",
                "spark.cores.max=1",
                "--spark-conf",
                "spark.executor.memory=512m",
                "--spark-conf",
                "spark.driver.host=127.0.0.1",
                "--spark-conf",
                "spark.driver.bindAddress=127.0.0.1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    return node, log_path


@pytest.fixture(autouse=True)
def _log_tail_on_failure(request, tmp_path):
    """Whatever failed (a deadline, the exit status, an assertion), the node's log says why."""
    yield
    report = getattr(request.node, "rep_call", None)
    log_path = tmp_path / "node.log"
    if (report is None or report.failed) and log_path.exists():
        print(f"---- node.log tail ----\n{log_path.read_text()[-6000:]}")


def delivered(outbox) -> list:
    return sorted(path for path in outbox.iterdir() if not path.name.startswith(".")) if outbox.is_dir() else []


def applications(spark_standalone) -> list[str]:
    url = f"http://127.0.0.1:{spark_standalone.ports['master_ui']}/json/"
    with urllib.request.urlopen(url, timeout=5) as response:
        state = json.load(response)
    return [app["name"] for app in state.get("activeapps", []) + state.get("completedapps", [])]


def test_custody_run_runs_its_spark_processors_on_a_standalone_master(spark_standalone, tmp_path):
    inbox, outbox = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    drop(inbox, "people.csv", "name,city,age\nana,lisbon,30\nbo,oslo,41\ncy,lisbon,22\n")
    node, log_path = start_node(spark_standalone, tmp_path, FLOW.format(inbox=inbox, outbox=outbox, extra=""))
    try:
        wait_until(lambda: delivered(outbox), 240, "the Spark step's output")
        assert "custody-spark-solo" in applications(spark_standalone)
    finally:
        node.send_signal(signal.SIGTERM)
        code = node.wait(120)
    text = log_path.read_text()
    assert code == 0, text[-3000:]
    [output] = delivered(outbox)
    rows = sorted((json.loads(line) for line in output.read_text().splitlines()), key=lambda row: row["city"])
    assert rows == [{"city": "lisbon", "people": 2, "years": 52}, {"city": "oslo", "people": 1, "years": 41}]
    assert "service 'spark': started in" in text and "service 'spark': stopped in" in text, text[-3000:]


def test_a_spark_cluster_that_goes_away_holds_the_batch_until_it_is_back(spark_standalone, tmp_path):
    inbox, outbox = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    node, log_path = start_node(
        spark_standalone,
        tmp_path,
        FLOW.format(inbox=inbox, outbox=outbox, extra="job_timeout: 8 sec\n      retry_backoff: 1 sec"),
    )
    try:
        drop(inbox, "first.csv", "name,city,age\nana,lisbon,30\n")
        wait_until(lambda: delivered(outbox), 240, "the first batch's output")
        spark_standalone.stop()  # the master and the worker (and its executor) go away
        stopped_at = log_path.stat().st_size  # (a first batch slower than its job_timeout was retried too)
        try:
            drop(inbox, "second.csv", "name,city,age\nbo,oslo,41\n")
            wait_until(
                lambda: b"retrying in" in log_path.read_bytes()[stopped_at:], 120, "the node to say why it waits"
            )
            assert len(delivered(outbox)) == 1 and not node.poll()
        finally:
            spark_standalone.start()
        wait_until(lambda: len(delivered(outbox)) == 2, 300, "the held batch's output once Spark is back")
    finally:
        node.send_signal(signal.SIGTERM)
        code = node.wait(120)
    assert code == 0, log_path.read_text()[-3000:]
    rows = [json.loads(line) for path in delivered(outbox) for line in path.read_text().splitlines()]
    assert sorted(row["city"] for row in rows) == ["lisbon", "oslo"]
    assert "goes to failure" not in log_path.read_text()
