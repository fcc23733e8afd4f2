"""The worker supervisor (`cluster.node.workers`) over real, small worker processes:
one that is killed is started again, one that dies at once waits, a stop ends them
all, and the data directory is held by one supervisor at a time."""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest

from cluster.node.standalone import NodeError
from cluster.node.workers import WorkerSupervisor
from cluster.services.process import wait_until
from tests.processes import alive

# A worker stand-in: writes its pid to workers/I/pid, then waits for a signal.
WAITS = "import os, signal, sys; open(sys.argv[1], 'w').write(str(os.getpid())); signal.pause()"


class Running:
    def __init__(self, supervisor: WorkerSupervisor):
        self.supervisor = supervisor
        self.stop = threading.Event()
        self.thread = threading.Thread(target=supervisor.run, args=(self.stop,))

    def __enter__(self):
        self.supervisor.prepare()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)
        self.supervisor.release()


def test_a_killed_worker_is_started_again_and_a_stop_ends_every_worker(tmp_path):
    lines: list[str] = []
    pid_file = lambda index: str(tmp_path / "workers" / str(index) / "pid")  # noqa: E731
    supervisor = WorkerSupervisor(
        str(tmp_path), 2, lambda index: [sys.executable, "-c", WAITS, pid_file(index)], out=lines.append
    )
    with Running(supervisor) as running:
        first = wait_until(lambda: None not in supervisor.pids() and supervisor.pids(), 10, "two workers")
        wait_until(lambda: all(os.path.exists(pid_file(i)) for i in (0, 1)), 10, "the workers' pid files")
        os.kill(first[1], signal.SIGKILL)
        again = wait_until(
            lambda: supervisor.pids()[1] not in (None, first[1]) and supervisor.pids(), 10, "worker 1 again"
        )
        assert again[0] == first[0]
        assert any("worker 1 killed by signal 9" in line for line in lines), lines
        assert (tmp_path / "workers.json").read_text() == '{"workers": 2}\n'
    assert not running.thread.is_alive()
    assert not alive(again[0]) and not alive(again[1])


def test_a_worker_that_dies_at_once_is_started_again_after_a_delay_and_says_why(tmp_path):
    lines: list[str] = []
    supervisor = WorkerSupervisor(
        str(tmp_path), 1, lambda index: [sys.executable, "-c", "import sys; sys.exit(3)"], out=lines.append
    )
    with Running(supervisor):
        wait_until(lambda: sum("exited with code 3" in line for line in lines) >= 2, 15, "two ends")
    ends = [line for line in lines if "exited with code 3" in line]
    assert "starting it again in 1 s" in ends[0] and "starting it again in 2 s" in ends[1], ends
    assert sum("started (pid" in line for line in lines) == 2  # not a loop: once, then after 1 s


def test_a_second_supervisor_on_the_directory_is_refused(tmp_path):
    first = WorkerSupervisor(str(tmp_path), 2, lambda index: [])
    first.prepare()
    try:
        with pytest.raises(NodeError, match="another custody node is running"):
            WorkerSupervisor(str(tmp_path), 2, lambda index: []).prepare()
    finally:
        first.release()
    with pytest.raises(NodeError, match="--workers 2, not 3"):
        WorkerSupervisor(str(tmp_path), 3, lambda index: []).prepare()
