"""`custody drill` as a person types it: the local target starts its own ZooKeeper
ensemble and HDFS in a temporary directory, runs three nodes, drills one round of
each fault asked (a rack round, and a short load round among them: both cores busy and a node stalled,
where nothing may fail over), and writes the JSON report and the timeline plot."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cluster.drills.harness import PROJECT_ROOT

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow, pytest.mark.timeout(900)]


def test_custody_drill_on_the_local_target(zookeeper_ensemble, hdfs_cluster, tmp_path):
    # The session's services are not used: asking for them makes a machine without
    # ZooKeeper or HDFS skip this test (fail it, in CI) the way every other test does.
    report, plot = tmp_path / "drill.json", tmp_path / "drill.png"
    command = [
        sys.executable,
        "-m",
        "cluster.cli",
        "drill",
        "--target",
        "local",
        "--faults",
        "kill,stop,rack,load",
        "--rounds",
        "4",
        "--load-seconds",
        "12",
        "--report",
        str(report),
        "--plot",
        str(plot),
    ]
    # Its default work directory is a new one under TMPDIR: here, under this test's.
    done = subprocess.run(
        command,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=840,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    print(done.stdout[-6000:], done.stderr[-3000:], sep="\n")
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    progress = [line for line in done.stdout.splitlines() if line.startswith("round ")]
    assert [line.split()[1:3] for line in progress] == [
        ["1/4", "kill"],
        ["2/4", "stop"],
        ["3/4", "rack"],
        ["4/4", "load"],
    ]
    assert "nothing failed over" in progress[3], progress[3]
    assert "result: exactly once held" in done.stdout

    found = json.loads(report.read_text())
    assert found["ok"] and found["error"] is None
    assert found["faults"] == {"kill": 1, "stop": 1, "rack": 1, "load": 1}
    assert found["summary"]["kill"]["rounds"] == 1 and found["summary"]["stop"]["rounds"] == 1
    rack = found["rounds"][2]  # a third of three nodes: one, through the rack's own path
    assert len(rack["victims"]) == 1 and len(rack["shards"]) == 1 and "resume" in rack["shards"][0]
    load = found["rounds"][3]
    assert load["delivered_meanwhile"] > 20 and load["phases"]["healed_at"] - load["phases"]["fault_at"] >= 12
    check = found["check"]
    assert (check["lost"], check["duplicated"], check["unexpected"]) == (0, 0, 0)
    assert found["created"] > 0 and check["delivered"] == found["created"]
    assert all("resume" in entry for entry in found["rounds"][:3])
    assert len(found["timeline"]) > 10

    with open(plot, "rb") as image:
        assert image.read(8) == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(plot) as image:
        image.load()
        assert image.width > 0 and image.height > 0
    workdirs = [path for path in tmp_path.iterdir() if path.name.startswith("custody-drill-")]
    assert len(workdirs) == 1 and (workdirs[0] / "nodes" / "n1.log").exists(), list(tmp_path.iterdir())
