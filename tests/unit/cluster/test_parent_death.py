"""Children started through `cluster.node.parent_death`: they end when the process
that started them is killed, they never run when that process died first, and
starting one does not wait on a lock another thread holds (as a `preexec_fn` does)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading

import pytest

from cluster.node.parent_death import dies_with_this_process
from cluster.services.process import wait_until
from tests.processes import alive

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_a_child_ends_when_the_process_that_started_it_is_killed():
    starter = (
        "import subprocess, sys\n"
        "from cluster.node.parent_death import dies_with_this_process\n"
        # The child reads a pipe of its own that nobody writes to: only a signal ends it
        # (not its parent's death closing a pipe, which would prove nothing here).
        "code = 'import os; r, w = os.pipe(); os.read(r, 1)'\n"
        "child = subprocess.Popen(dies_with_this_process([sys.executable, '-c', code]))\n"
        "print(child.pid, flush=True)\n"
        "child.wait()\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    child = None
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.kill()
        parent.wait(10)
        wait_until(lambda: not alive(child), 10, "the orphaned child to end")
    finally:
        parent.kill()
        parent.wait(10)
        if child is not None and alive(child):
            os.kill(child, signal.SIGKILL)


def test_the_child_is_the_command_itself_and_keeps_its_arguments_and_exit_code():
    result = subprocess.run(
        dies_with_this_process(
            [sys.executable, "-c", "import os, sys; print(os.getpid(), sys.argv[1:]); sys.exit(7)", "a b", "-c"]
        ),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 7, result.stderr
    assert result.stdout.split(" ", 1)[1].strip() == "['a b', '-c']"


def test_a_child_whose_parent_died_before_it_asked_for_the_signal_never_runs_the_command(tmp_path):
    marker = tmp_path / "ran"
    command = dies_with_this_process([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    not_my_parent = os.getppid()  # the trampoline's parent is this process, not that one
    command[command.index(str(os.getpid()))] = str(not_my_parent)
    assert subprocess.run(command, timeout=30).returncode == 1
    assert not marker.exists()


def test_starting_a_child_does_not_wait_for_a_lock_another_thread_holds():
    # A `preexec_fn` makes Python run its fork hooks, and logging's takes its module
    # lock: with another thread holding it, the start waits until that thread lets go.
    held, release, started = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        with logging._lock:  # type: ignore[attr-defined]
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert held.wait(10)

        def start() -> None:
            subprocess.run(dies_with_this_process([sys.executable, "-c", "pass"]), timeout=30, check=True)
            started.set()

        threading.Thread(target=start, daemon=True).start()
        assert started.wait(30), "the child's start waited on a lock another thread held"
    finally:
        release.set()
        holder.join(10)


def test_a_command_that_cannot_be_run_ends_with_127_and_says_why(tmp_path):
    result = subprocess.run(
        dies_with_this_process([str(tmp_path / "no-such-program"), "x"]), capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 127
    assert result.stderr.strip() == f"custody: cannot run {tmp_path / 'no-such-program'}: No such file or directory"


def test_an_empty_command_is_refused():
    with pytest.raises(ValueError, match="empty command"):
        dies_with_this_process([])
