"""The liveness verdicts (`cluster.core.liveness`), decided without I/O, and the port
and its watch (`cluster.failover.liveness`) on real loopback sockets: a listener in a
process SIGKILLed, closed, SIGSTOPped, or whose connection alone is reset."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from cluster.core.liveness import (
    ProbeOutcome,
    Verdict,
    greeting,
    parse_greeting,
    probe_outcome,
    split_address,
    verdict,
)
from cluster.failover.liveness import LivenessListener, PeerWatch
from cluster.services.process import wait_until


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        (ProbeOutcome.REFUSED, Verdict.GONE),
        (ProbeOutcome.UNREACHABLE, Verdict.GONE),
        (ProbeOutcome.OTHER, Verdict.GONE),
        (ProbeOutcome.SAME, Verdict.ALIVE),
        (ProbeOutcome.SILENT, Verdict.UNKNOWN),
    ],
)
def test_each_probe_after_an_ended_connection_has_its_verdict(outcome, expected):
    assert verdict(outcome) is expected


def test_a_greeting_names_its_incarnation_byte_for_byte():
    line = greeting("n1-17")
    assert line == b"CUSTODY-LIVENESS 1 n1-17\n"
    assert parse_greeting(line) == "n1-17"
    assert probe_outcome("n1-17", parse_greeting(line)) is ProbeOutcome.SAME
    assert probe_outcome("n1-16", parse_greeting(line)) is ProbeOutcome.OTHER


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"CUSTODY-LIVENESS 1 n1-17",  # cut short
        b"CUSTODY-LIVENESS 2 n1-17\n",  # a newer format
        b"CUSTODY-LIVENESS 1 \n",
        b"CUSTODY-LIVENESS 1 n1 17\n",
        b"SSH-2.0-OpenSSH_9.2\r\n",  # another program on the port
        b"CUSTODY-LIVENESS 1 " + b"x" * 300 + b"\n",
        b"CUSTODY-LIVENESS 1 \xff\xfe\n",
    ],
)
def test_what_is_not_a_greeting_names_nobody(line):
    assert parse_greeting(line) is None
    assert probe_outcome("n1-17", parse_greeting(line)) is ProbeOutcome.OTHER


@pytest.mark.parametrize("bad", ["", "a b", "x" * 201, "a\nb"])
def test_an_incarnation_that_cannot_be_greeted_is_refused(bad):
    with pytest.raises(ValueError, match="liveness greeting"):
        greeting(bad)


def test_addresses_split_into_host_and_port():
    assert split_address("127.0.0.1:40123") == ("127.0.0.1", 40123)
    assert split_address("custody1:8080") == ("custody1", 8080)
    assert split_address("[::1]:9") == ("::1", 9)
    for bad in ("custody1", ":80", "h:0", "h:70000", "h:x"):
        with pytest.raises(ValueError, match="host:port"):
            split_address(bad)


class _Gone:
    def __init__(self):
        self.calls: list[tuple[str, str]] = []
        self.event = threading.Event()

    def __call__(self, incarnation: str, reason: str) -> None:
        self.calls.append((incarnation, reason))
        self.event.set()


LISTENER_PROCESS = """
import signal, sys
from cluster.failover.liveness import LivenessListener
listener = LivenessListener("127.0.0.1", "127.0.0.1", sys.argv[1])
listener.start()
print(listener.address, flush=True)
signal.pause()  # holds the port until the test signals it (SIGKILL, SIGSTOP) or kills it
"""


@contextlib.contextmanager
def _listener_process(incarnation: str):
    """A process with a liveness port for `incarnation`: (the process, its address)."""
    process = subprocess.Popen([sys.executable, "-c", LISTENER_PROCESS, incarnation], stdout=subprocess.PIPE, text=True)
    try:
        yield process, process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait()


def _held(listener: LivenessListener) -> list:
    """The selector keys the listener holds (its port and its connections), read under
    the lock its serving thread registers and unregisters them under."""
    with listener._closing:
        held = listener._selector.get_map()
        return [] if held is None else list(held.values())


@contextlib.contextmanager
def _listener(incarnation: str):
    listener = LivenessListener("127.0.0.1", "127.0.0.1", incarnation)
    listener.start()
    try:
        yield listener
    finally:
        listener.close()


@contextlib.contextmanager
def _watching(members: dict[str, str], connected: bool = True):
    """n2-4's watch on `members`, connected to them (unless `connected` is False): (the watch, its verdicts)."""
    gone = _Gone()
    watch = PeerWatch("n2-4", gone)
    try:
        watch.follow(members)
        if connected:
            expected = sorted(name for name in members if name != "n2-4")
            wait_until(lambda: watch.watched() == expected, 10, "the watch to connect")
        yield watch, gone
    finally:
        watch.stop()


def test_a_sigkilled_peer_is_proven_gone_at_once():
    with _listener_process("n1-3") as (process, address):
        # Itself is never watched.
        with _watching({"n1-3": address, "n2-4": "127.0.0.1:1"}) as (_, gone):
            killed = time.monotonic()
            process.send_signal(signal.SIGKILL)
            assert gone.event.wait(5), "no verdict"
            assert time.monotonic() - killed < 2.0
            [(incarnation, reason)] = gone.calls
            assert incarnation == "n1-3" and "refused a connection" in reason, reason


def test_a_sigstopped_peer_is_left_to_its_session():
    with _listener_process("n1-3") as (process, address), _watching({"n1-3": address}) as (watch, gone):
        process.send_signal(signal.SIGSTOP)
        # A hung process ends no connection: nothing is proven, however long it stands still.
        assert not gone.event.wait(2.0), gone.calls
        assert watch.watched() == ["n1-3"]
        process.send_signal(signal.SIGCONT)


def test_a_listener_closed_by_its_incarnation_is_proven_gone():
    with _listener("n1-3") as listener, _watching({"n1-3": listener.address}) as (_, gone):
        listener.close()
        assert gone.event.wait(5), "no verdict"
        assert gone.calls[0][0] == "n1-3"


def test_a_reset_connection_of_a_live_peer_is_made_again_and_proves_nothing():
    """The listener's side of the watch's connection alone is closed (as a middlebox's
    reset would): the probe finds the same incarnation, and the watch goes on."""
    with _listener("n1-3") as listener, _watching({"n1-3": listener.address}) as (watch, gone):

        def accepted() -> list:
            return [key.fileobj for key in _held(listener) if key.fileobj is not listener._socket]

        # The listener greets a connection before it registers it: the watch may have read
        # the greeting (and count as connected) a moment before the listener holds it.
        wait_until(lambda: len(accepted()) == 1, 10, "the listener to hold the watch's connection")
        first = accepted()[0]
        first.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
        wait_until(
            lambda: any(key.fileobj not in (listener._socket, first) for key in _held(listener)),
            10,
            "the watch to connect again",
        )
        wait_until(lambda: watch.watched() == ["n1-3"], 10, "the watch to follow the new connection")
        assert not gone.calls
        # And it still proves the death that follows.
        listener.close()
        assert gone.event.wait(5), "no verdict"


def test_a_port_greeting_as_another_incarnation_is_not_watched_and_proves_nothing():
    # An address that is not n1-3's.
    with _listener("n9-1") as listener, _watching({"n1-3": listener.address}, connected=False) as (watch, gone):
        # Its thread connects, reads the greeting and gives up.
        wait_until(lambda: not watch._peers["n1-3"]._thread.is_alive(), 10, "the watch to give up")
        assert watch.watched() == [] and not gone.calls


def test_a_member_that_left_is_no_longer_watched_and_its_death_proves_nothing():
    with _listener_process("n1-3") as (process, address), _watching({"n1-3": address}) as (watch, gone):
        watch.follow({})
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert not gone.event.wait(1.0), gone.calls


def test_a_listener_keeps_no_connection_of_a_watcher_that_left():
    with _listener("n1-3") as listener:
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", int(listener.address.rsplit(":", 1)[1])), timeout=5) as c:
                assert c.recv(100) == b"CUSTODY-LIVENESS 1 n1-3\n"
        wait_until(lambda: len(_held(listener)) == 1, 10, "the listener to let the connections go")


def test_a_port_that_accepts_but_does_not_greet_proves_nothing_and_is_watched_again_once_it_greets():
    """What a probe of a hung process's port finds (its kernel completes the handshake,
    nobody greets): UNKNOWN, and the watch goes back to waiting for a greeting."""
    server = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"
    greet = threading.Event()
    greet.set()
    held: list[socket.socket] = []

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            held.append(connection)
            if greet.is_set():
                connection.sendall(b"CUSTODY-LIVENESS 1 n1-3\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        with _watching({"n1-3": address}) as (watch, gone):
            greet.clear()
            held[0].close()  # the first connection ends; the probe is not greeted
            # A third connection: the probe (the second) was not greeted, and the watch
            # went back to waiting for a greeting.
            wait_until(lambda: len(held) >= 3, 10, "the probe and a new first connection")
            assert watch.watched() == []
            greet.set()
            wait_until(lambda: watch.watched() == ["n1-3"], 10, "the watch to be greeted again")
            assert not gone.calls
    finally:
        server.close()
        for connection in held:
            connection.close()


def test_a_listener_closed_after_its_serving_thread_ended_closes_quietly():
    """`close` may find the selector closed: its serving thread saw the close flag, shut
    every connection and closed the selector before `close` itself got to them (a race
    that once failed an offloading node's stop). Closing again is the same path."""
    listener = LivenessListener("127.0.0.1", "127.0.0.1", "n1-3")
    listener.start()
    listener.close()
    wait_until(lambda: not listener._thread.is_alive(), 10, "the serving thread to end")
    listener.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(listener.address.rsplit(":", 1)[1])), timeout=5)

    never_served = LivenessListener("127.0.0.1", "127.0.0.1", "n1-4")
    never_served.close()
    never_served.close()
