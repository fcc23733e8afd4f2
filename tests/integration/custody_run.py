"""`custody run` as a child process, as a user types it: started by the standalone
drills and the CLI test, which read its output for the line that says it runs."""

from __future__ import annotations

import select
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def start_run(flow: Path, data_dir: Path, *arguments: str, stderr=subprocess.DEVNULL) -> subprocess.Popen:
    """`custody run --flow FLOW --data-dir DATA_DIR ARGUMENTS...`, its output readable as text."""
    return subprocess.Popen([sys.executable, "-m", "cluster.cli", "run", "--flow", str(flow), "--data-dir",
                             str(data_dir), *arguments], cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True)


def line_containing(process: subprocess.Popen, text: str, timeout: float) -> str | None:
    """The first line of the process's output that contains `text`, read within
    `timeout` seconds; None when the output ends or the time runs out first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = process.stdout.readline()
        if not line:
            return None  # exited
        if text in line:
            return line
    return None


def kill(process: subprocess.Popen) -> None:
    """SIGKILL, as a crash: nothing of the process runs after it."""
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    process.stdout.close()
