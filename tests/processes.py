"""What tests ask of a process they did not start themselves (a worker of a supervisor,
a JVM of a benchmark): whether it still runs, from /proc."""

from __future__ import annotations


def alive(pid: int) -> bool:
    """False once `pid` has ended: it is gone, or it is a zombie that no one reaped yet
    (it has ended too)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
