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

pytestmark = [pytest.mark.spark, pytest.mark.slow]

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
    auto_terminate: [original, failure]
  - id: put
    type: PutFile
    properties: {{directory: "{outbox}", sync: false}}
    auto_terminate: [success, failure]
connections:
  - {{source: get, destination: sql}}
  - {{source: sql, relationships: [success], destination: put}}
"""


def applications(spark_standalone) -> list[str]:
    url = f"http://127.0.0.1:{spark_standalone.ports['master_ui']}/json/"
    with urllib.request.urlopen(url, timeout=5) as response:
        state = json.load(response)
    return [app["name"] for app in state.get("activeapps", []) + state.get("completedapps", [])]


def test_custody_run_runs_its_spark_processors_on_a_standalone_master(spark_standalone, tmp_path):
    inbox, outbox = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW.format(inbox=inbox, outbox=outbox))
    (inbox / ".people.csv").write_text("name,city,age\nana,lisbon,30\nbo,oslo,41\ncy,lisbon,22\n")
    os.rename(inbox / ".people.csv", inbox / "people.csv")
    log_path = tmp_path / "node.log"
    env = {**os.environ, **spark_environment()}
    with open(log_path, "w") as log:
        node = subprocess.Popen(
            [sys.executable, "-m", "cluster.cli", "run", "--flow", str(flow), "--data-dir", str(tmp_path / "node"),
             "--name", "spark-solo", "--spark-master", spark_standalone.master_url,
             "--spark-conf", "spark.cores.max=1", "--spark-conf", "spark.executor.memory=512m",
             "--spark-conf", "spark.driver.host=127.0.0.1", "--spark-conf", "spark.driver.bindAddress=127.0.0.1"],
            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        try:
            wait_until(lambda: outbox.is_dir() and any(not p.name.startswith(".") for p in outbox.iterdir()), 240,
                       "the Spark step's output")
        except Exception:
            print(log_path.read_text()[-5000:])
            raise
        assert "custody-spark-solo" in applications(spark_standalone)
    finally:
        node.send_signal(signal.SIGTERM)
        code = node.wait(120)
    text = log_path.read_text()
    assert code == 0, text[-3000:]
    [output] = [path for path in outbox.iterdir() if not path.name.startswith(".")]
    rows = sorted((json.loads(line) for line in output.read_text().splitlines()), key=lambda row: row["city"])
    assert rows == [{"city": "lisbon", "people": 2, "years": 52}, {"city": "oslo", "people": 1, "years": 41}]
    assert "service 'spark': started in" in text and "service 'spark': stopped in" in text, text[-3000:]
