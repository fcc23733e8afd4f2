"""The load fault's busy processes: one a core by default, each burning CPU while the
load lasts, every one of them gone when it ends, even when the round fails."""

from __future__ import annotations

import os

import pytest

from cluster.drills.faults import CpuLoad
from cluster.services.process import wait_until


def cpu_seconds(pid: int) -> float:
    """User and system time of a process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_load_keeps_its_processes_busy_and_ends_every_one():
    with CpuLoad(2) as load:
        assert load.count == 2 and len(load.processes) == 2
        pids = [process.pid for process in load.processes]
        # Each one burns CPU, not sleeps: 0.2 s of it within 20 s, on any load.
        wait_until(lambda: min(cpu_seconds(pid) for pid in pids) >= 0.2, 20, "each busy process to use 0.2 s of CPU")
    assert load.processes == []
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)  # killed and reaped


def test_a_failed_round_still_ends_the_load():
    with pytest.raises(RuntimeError, match="round failed"):
        with CpuLoad(1) as load:
            pid = load.processes[0].pid
            raise RuntimeError("round failed")
    assert not os.path.exists(f"/proc/{pid}")


def test_one_process_a_core_by_default():
    assert CpuLoad().count == (os.cpu_count() or 1)
