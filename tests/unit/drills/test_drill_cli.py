"""`custody drill` refuses what it cannot do before it starts anything: exit 2, one
line on stderr that names the problem, within seconds, and no work directory made."""

import os
import subprocess
import sys
import time

import pytest

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.mark.parametrize(
    "arguments, says",
    [
        (
            ["--faults", "kill,sigterm"],
            "unknown fault 'sigterm'; valid faults: kill, stop, expire, leader, adopter, "
            "zk-follower, datanode, slow-hdfs, slow-hdfs-kill, broker, rack, load, partition",
        ),
        (["--faults", "kill,partition"], "fault 'partition' cannot be injected on the local target"),
        (["--faults", "broker"], "fault 'broker' cannot be injected on the local target (the broker fault goes with"),
        (["--workload", "mqtt"], "unknown workload 'mqtt'; workloads: files, kafka"),
        (["--rounds", "0"], "--rounds must be at least 1"),
        (["--faults", "load", "--load-seconds", "5"], "--load-seconds must be at least 12, not 5"),
        (["--faults", "load", "--load-seconds", "nan"], "--load-seconds must be at least 12, not nan"),
        (["--nodes", "1"], "a drill needs at least 2 nodes"),
        (["--nodes", "2", "--faults", "adopter"], "need at least 3 nodes"),
        (["--target", "kubernetes"], "unknown target 'kubernetes'; targets: local, compose"),
        # Either way refused: whether this machine's Docker engine runs is not this test's business.
        (
            ["--target", "compose", "--project", "custody-no-such-project"],
            (
                "compose project 'custody-no-such-project' has no running container: start it with",
                "cannot reach the Docker engine",
            ),
        ),
        (
            ["--target", "compose", "--workload", "kafka", "--project", "custody-no-such-project"],
            (
                "compose project 'custody-no-such-project' has no running container: start it with",
                "cannot reach the Docker engine",
            ),
        ),
    ],
)
def test_bad_input_is_refused_before_anything_starts(tmp_path, arguments, says):
    workdir = tmp_path / "work"
    began = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "drill",
            "--target",
            "local",
            "--workdir",
            str(workdir),
            "--report",
            str(tmp_path / "r.json"),
            "--plot",
            str(tmp_path / "p.png"),
            *arguments,
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    alternatives = says if isinstance(says, tuple) else (says,)
    assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
    assert any(said in done.stderr for said in alternatives), done.stderr
    assert done.stdout == ""
    assert time.monotonic() - began < 20
    assert not workdir.exists() and not (tmp_path / "r.json").exists() and not (tmp_path / "p.png").exists()
