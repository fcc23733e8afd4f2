"""`custody run` with the sample flow: data within seconds, SIGTERM stops it cleanly,
and the next run recovers and carries on (no sequence number twice)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start(data_dir):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "run",
            "--flow",
            str(ROOT / "examples" / "hello.yaml"),
            "--data-dir",
            str(data_dir),
            "--status-interval",
            "0",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def read_line_containing(process, text, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = process.stdout.readline()
        if not line:
            break
        if text in line:
            return line
    raise AssertionError(f"no line with {text!r} within {timeout} s")


def wait_for_files(directory, count, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if directory.is_dir() and len([n for n in os.listdir(directory) if not n.startswith(".")]) >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} files in {directory} after {timeout} s")


def sequences(directory):
    return [int(p.read_text().split()[2]) for p in directory.iterdir() if not p.name.startswith(".")]


def test_sample_flow_runs_stops_cleanly_and_resumes(tmp_path):
    data = tmp_path / "data"
    process = start(data)
    try:
        read_line_containing(process, "node running", 60)
        wait_for_files(data / "out", 10, 60)  # "data flowing within a minute"
    finally:
        process.send_signal(signal.SIGTERM)
        remaining = process.communicate(timeout=60)[0]
    assert process.returncode == 0 and "stopped cleanly" in remaining
    before = sequences(data / "out")

    process = start(data)
    try:
        line = read_line_containing(process, "node running", 60)
        recovered = json.loads(line[line.index("{") : line.rindex("}") + 1])
        assert recovered["orphaned_content_resources"] == 0
        wait_for_files(data / "out", len(before) + 10, 60)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
    assert process.returncode == 0
    after = sequences(data / "out")
    assert len(after) == len(set(after)), "no sequence number twice"
    assert sorted(after)[: len(before)] == sorted(before) and max(after) > max(before)
