"""NiFi 2 Python processors on a standalone node, as a user runs them:
`custody run --python-extensions DIR` with tests/data/python-processors.yaml, each fixture
of tests/data/python_processors (and one whose dependency pip installs from a local
directory) doing its part; and a dependency that cannot be installed refusing the flow
before anything starts, with the pip command to run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from cluster.services.process import wait_until
from tests.python_processors import MISSING_DEPENDENCY, PROCESSORS, WITH_DEPENDENCY, write_shout_wheel

from .custody_run import ROOT, start_custody_run, stop, wait_running

FLOW = ROOT / "tests" / "data" / "python-processors.yaml"


def files(directory) -> dict[str, bytes]:
    if not os.path.isdir(directory):
        return {}
    return {
        name: open(os.path.join(directory, name), "rb").read()
        for name in os.listdir(directory)
        if not name.startswith(".")
    }


def test_every_kind_of_nifi_python_processor_runs_on_a_standalone_node(tmp_path):
    inbox, out, wheels = tmp_path / "inbox", tmp_path / "out", tmp_path / "wheels"
    (inbox / "text").mkdir(parents=True)
    (inbox / "records").mkdir()
    write_shout_wheel(wheels)
    for name, text in [("a.txt", "7"), ("b.txt", "12"), ("c.txt", "twelve")]:
        (inbox / "text" / name).write_text(text)
    records = [
        {"key": "k1", "city": "Oslo", "amount": 3},
        {"key": "k2", "city": "Bern", "amount": 4},
        {"key": "k3", "city": "Oslo", "amount": -2},
    ]
    (inbox / "records" / "orders.json").write_text(json.dumps(records))
    process = start_custody_run(
        FLOW,
        tmp_path / "data",
        tmp_path / "run.log",
        *("--python-extensions", PROCESSORS, "--python-extensions", WITH_DEPENDENCY),
        *("--python-find-links", str(wheels), "--python-no-index"),
        *("--param", f"inbox={inbox}", "--param", f"out={out}"),
    )
    try:
        assert wait_running(process, time.monotonic() + 60), (tmp_path / "run.log").read_text()[-3000:]
        wait_until(lambda: len(files(out / "text")) == 2, 30, "the two numbers shouted")
        wait_until(lambda: len(files(out / "failed")) == 1, 30, "the word sent to failure")
        wait_until(lambda: len(files(out / "counted")) == 3, 30, "three counted FlowFiles")
        wait_until(lambda: files(out / "invalid"), 30, "the invalid record written")
        wait_until(lambda: files(out / "cities" / "Oslo") and files(out / "cities" / "Bern"), 30, "both cities")
    finally:
        stop(process, signal.SIGTERM)
    assert sorted(files(out / "text").values()) == [b"1212!", b"77!"]
    assert list(files(out / "failed").values()) == [b"twelve"]
    assert sorted(files(out / "counted").values()) == [b"n-1", b"n-2", b"n-3"]
    [oslo] = files(out / "cities" / "Oslo").values()
    assert [(r["key"], r["source"]) for r in json.loads(oslo)] == [("k1", "orders.json")]
    [invalid] = files(out / "invalid").values()
    assert [r["key"] for r in json.loads(invalid)] == ["k3"]
    log = (tmp_path / "run.log").read_text()
    assert "goes to failure: ValueError: invalid literal for int() with base 10: 'twelve'" in log
    environments = os.listdir(tmp_path / "data" / "python-extensions")
    assert [name.split("-")[0] for name in environments] == ["ShoutGreeting"]


def test_a_dependency_that_cannot_be_installed_refuses_the_flow_with_the_pip_command(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "run", "--flow", str(FLOW), "--data-dir", str(tmp_path / "data")]
        + ["--python-extensions", PROCESSORS, "--python-extensions", MISSING_DEPENDENCY]
        + ["--python-find-links", str(tmp_path), "--python-no-index"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.startswith(f"custody run: invalid flow: python extension {MISSING_DEPENDENCY}/needs_absent.py:")
    command = f"{sys.executable} -m pip install --disable-pip-version-check --no-input --target {tmp_path}/data/"
    assert command in done.stderr
    assert f"--find-links {tmp_path} --no-index custody-package-that-is-nowhere==9.9" in done.stderr
    assert not os.path.exists(tmp_path / "data" / "flowfile")  # no node was started
