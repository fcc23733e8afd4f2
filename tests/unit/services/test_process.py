"""The harness's process handling, on real child processes (no services needed)."""

import json
import os
import signal
import socket
import sys
import time

import pytest

from cluster.services.network import LOWEST_PORT, free_ports, port_open
from cluster.services.process import ManagedProcess, ServiceError, wait_until

SLEEPER = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, lambda *a: exit(0)); print('up', flush=True); time.sleep(600)",
]


def test_start_logs_and_stop_with_sigterm(tmp_path):
    process = ManagedProcess("sleeper", SLEEPER, str(tmp_path / "log" / "sleeper.log"))
    process.start()
    try:
        assert process.alive()
        wait_until(lambda: "up" in process.log_tail(), 10, "the sleeper to log")
        assert os.getpgid(process.pid) != os.getpgid(0), "a daemon must not share the runner's process group"
    finally:
        process.stop(timeout=10)
    assert not process.alive()


def test_kill_pause_resume_and_attach_by_pid(tmp_path):
    process = ManagedProcess("sleeper", SLEEPER, str(tmp_path / "s.log"))
    process.start()
    attached = ManagedProcess.attach("sleeper", SLEEPER, str(tmp_path / "s.log"), process.pid)
    try:
        process.pause()
        wait_until(lambda: _state(process.pid) == "T", 10, "the process to stop")
        process.resume()
        wait_until(lambda: _state(process.pid) in ("S", "R"), 10, "the process to continue")
        assert attached.alive()
    finally:
        process.kill()
    assert not process.alive()
    assert not attached.alive()


def test_stop_of_a_paused_process_still_ends_it(tmp_path):
    process = ManagedProcess("sleeper", SLEEPER, str(tmp_path / "s.log"))
    process.start()
    process.pause()
    process.stop(timeout=10)
    assert not process.alive()


def test_wait_until_names_what_it_waited_for():
    with pytest.raises(ServiceError) as caught:
        wait_until(lambda: False, 0.2, "the moon to rise", interval=0.05)
    assert "the moon to rise" in str(caught.value)


def test_free_ports_are_distinct_and_closed():
    ports = free_ports(20)
    assert len(set(ports)) == 20
    assert not any(port_open(port) for port in ports[:3])


def test_free_ports_are_below_the_kernels_ephemeral_range():
    """No outgoing connection's local port can take a chosen port before its service binds it."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as handle:
        lowest_ephemeral = int(handle.read().split()[0])
    ports = free_ports(30)
    assert all(LOWEST_PORT <= port < lowest_ephemeral for port in ports), ports


def test_a_port_in_use_is_never_chosen(monkeypatch):
    import cluster.services.network as network

    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind((network.HOST, 0))
    held.listen()
    try:
        taken = held.getsockname()[1]
        monkeypatch.setattr(network, "LOWEST_PORT", 10_000)
        # Only the port held and one other remain to choose from: the other is chosen.
        monkeypatch.setattr(network.random, "SystemRandom", lambda: _Cycle([taken, taken, 10_001]))
        assert network._below_ephemeral(1) == [10_001] or port_open(10_001)
    finally:
        held.close()


class _Cycle:
    def __init__(self, ports):
        self.ports = iter(ports)

    def choice(self, _candidates):
        return next(self.ports)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().split(") ", 1)[1][0]


def test_signal_to_dead_process_is_harmless(tmp_path):
    process = ManagedProcess("short", [sys.executable, "-c", "pass"], str(tmp_path / "x.log"))
    process.start()
    wait_until(lambda: not process.alive(), 10, "the short process to exit")
    process.signal(signal.SIGKILL)
    process.stop()


def test_a_log_tail_reaches_back_to_the_last_exception_above_its_stack(tmp_path):
    """A JVM that exits prints its exception above a long stack: a tail of the last few
    lines showed only frames (a broker that exited at LogCleaner.startup)."""
    log = tmp_path / "broker.log"
    stack = [f"\tat org.example.Frame{n}.run(Frame.java:{n})" for n in range(30)]
    log.write_text(
        "\n".join(["INFO starting", "ERROR the broker failed", "java.lang.OutOfMemoryError: Java heap space", *stack])
        + "\n"
    )
    process = ManagedProcess("broker", ["true"], str(log))
    assert process.log_tail(5).splitlines() == stack[-5:]
    shown = process.log_tail(5, from_last=r"\bERROR\b|Exception|Error\b").splitlines()
    assert shown[0] == "java.lang.OutOfMemoryError: Java heap space" and shown[1:] == stack
    assert process.log_tail(40, from_last="Error").splitlines()[0] == "INFO starting"  # the tail reaches further
    assert process.log_tail(5, from_last="nothing matches").splitlines() == stack[-5:]


def test_a_port_handed_out_is_not_handed_out_again_before_its_promise_expires(monkeypatch, tmp_path):
    """Two services started side by side (a drill's ZooKeeper and HDFS) chose the same
    port, each free when chosen, and the later one lost its bind."""
    import cluster.services.network as network

    ledger = tmp_path / "ports.json"
    monkeypatch.setattr(network, "ledger_path", lambda: ledger)
    first = network.free_ports(3)
    # Only the ports promised and one other remain to choose from: the other is chosen.
    monkeypatch.setattr(network.random, "SystemRandom", lambda: _Cycle([*first, *first, 10_001]))
    assert network.free_ports(1) == [10_001] or port_open(10_001)
    promised = json.loads(ledger.read_text())
    assert set(first) <= {int(port) for port in promised}


def test_an_expired_or_unreadable_promise_is_forgotten(tmp_path):
    import cluster.services.network as network

    ledger = tmp_path / "ports.json"
    ledger.write_text(json.dumps({"10001": time.time() - 1, "10002": time.time() + 60}))
    with network.reserved(ledger) as promised:
        assert set(promised) == {10002}
    assert set(json.loads(ledger.read_text())) == {"10002"}
    ledger.write_text("not json")
    with network.reserved(ledger) as promised:
        assert promised == {}
        promised[10003] = time.time() + 60
    assert set(json.loads(ledger.read_text())) == {"10003"}
