"""`custody run` as a user starts it, for tests that kill it: the process, and a wait
for its "node running" line. (To wait for what the node writes:
`cluster.services.process.wait_until`.)"""

from __future__ import annotations

import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start_custody_run(flow: Path, data_dir: Path, log: Path, *options: str) -> subprocess.Popen:
    """`custody run --flow FLOW --data-dir DATA_DIR --status-interval 0 OPTIONS`, its
    stdout a pipe (for `wait_running`), its stderr appended to `log`."""
    with open(log, "ab") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "cluster.cli", "run", "--flow", str(flow), "--data-dir", str(data_dir)]
            + ["--status-interval", "0", *options],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def wait_running(process: subprocess.Popen, deadline: float) -> bool:
    """True once `process` printed that its node is running; False if it exited or the
    monotonic `deadline` passed first."""
    assert process.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return False
        line = process.stdout.readline()
        if not line:
            return False
        if "node running" in line:
            return True
    return False


def stop(process: subprocess.Popen, signal_number: int) -> None:
    """Send `signal_number` and wait for the process to end."""
    process.send_signal(signal_number)
    process.wait(60)
    if process.stdout is not None:
        process.stdout.close()
