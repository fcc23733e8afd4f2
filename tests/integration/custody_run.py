"""`custody run` as a user starts it, for tests that kill it: the process, and a wait
for its "node running" line. (To wait for what the node writes:
`cluster.services.process.wait_until`.)"""

from __future__ import annotations

import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from cluster.services.process import ServiceError, wait_until

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


def terminate(process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    """SIGTERM, and wait up to `timeout` for the process to end. One that does not
    prints its threads' stacks into `log` (SIGUSR1, `custody run`'s jstack), is killed,
    and fails the test with them, rather than running on beside the next tests."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
        return
    except subprocess.TimeoutExpired:
        pass
    process.send_signal(signal.SIGUSR1)
    try:
        wait_until(lambda: "most recent call first" in log.read_text(errors="replace"), 10, "its stacks in its log")
    except ServiceError:  # no stacks: it is killed and reported all the same
        pass
    process.kill()
    process.wait()
    tail = log.read_text(errors="replace")[-6000:]
    raise AssertionError(f"still running {timeout:g} s after SIGTERM; its log's end, with its stacks:\n{tail}")
