"""The liveness port of a member, and the watch every member keeps on the others'
(`cluster.core.liveness` says what an ended connection means, and why).

    listener = LivenessListener("127.0.0.1", "127.0.0.1", "n1-17")
    listener.address                     # "127.0.0.1:40123", advertised in the heartbeat
    watch = PeerWatch("n2-18", on_gone=lambda incarnation, why: ...)
    watch.follow({"n1-17": "127.0.0.1:40123"})   # the members now, from their heartbeats
    ...
    watch.stop(); listener.close()

The listener greets each connection and keeps it open; it reads only to notice a
watcher that left. It is closed last when its incarnation stops, and by the kernel
when its process dies, which is the point. The watch runs one thread per peer: it
connects, checks the greeting, and waits for the connection to end; then it probes
once (`PROBE_TIMEOUT` to connect and to be greeted) and acts on the verdict: GONE
calls `on_gone`, ALIVE watches the new connection, UNKNOWN leaves the peer to its
session and watches it again once its port greets as it. A peer that cannot be
reached before the watch ever connected is tried again every `RETRY` seconds while
it is a member: nothing is proven about it.
"""

from __future__ import annotations

import logging
import selectors
import socket
import threading
from collections.abc import Callable

from ..core.liveness import (
    MAX_GREETING,
    ProbeOutcome,
    Verdict,
    greeting,
    parse_greeting,
    probe_outcome,
    split_address,
    verdict,
)

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 0.5  # to connect to a peer's port, and to be greeted there
RETRY = 0.5  # between attempts at a first connection
MAX_WATCHERS = 512  # connections a listener holds at most (each other member keeps one)


class LivenessListener:
    """A member's liveness port: bound at once (port 0: the kernel picks one), served
    on a thread of its own from `start`."""

    def __init__(self, bind: str, advertise: str, incarnation: str, port: int = 0):
        self._greeting = greeting(incarnation)
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((bind, port))
        self._socket.listen(64)
        self._socket.setblocking(False)
        host = f"[{advertise}]" if ":" in advertise else advertise
        self.address = f"{host}:{self._socket.getsockname()[1]}"
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._socket, selectors.EVENT_READ)
        self._closed = threading.Event()
        self._closing = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=f"liveness {incarnation}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        try:
            while not self._closed.is_set():
                try:
                    ready = self._selector.select(timeout=0.2)
                except (OSError, ValueError):  # a socket closed under it by `close`
                    return
                for key, _ in ready:
                    if self._closed.is_set():
                        return
                    if key.fileobj is self._socket:
                        self._accept()
                    else:
                        self._read(key.fileobj)  # type: ignore[arg-type]
        finally:
            with self._closing:
                self._close_connections()
                self._selector.close()

    def _accept(self) -> None:
        try:
            connection, _ = self._socket.accept()
        except (BlockingIOError, OSError):
            return
        if len(self._selector.get_map()) > MAX_WATCHERS:  # far more than any cluster has members
            connection.close()
            return
        try:
            connection.setblocking(True)
            connection.settimeout(PROBE_TIMEOUT)
            connection.sendall(self._greeting)
            connection.setblocking(False)
            with self._closing:
                if self._closed.is_set():
                    raise OSError("closed")
                self._selector.register(connection, selectors.EVENT_READ)
        except OSError:
            connection.close()

    def _read(self, connection: socket.socket) -> None:
        try:
            data = connection.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the watcher left
            with self._closing:
                self._selector.unregister(connection)
            connection.close()

    def close(self) -> None:
        """Close the port and every connection: the watchers learn it at once. It does
        not wait for the serving thread (a dying incarnation has a deadline), which ends
        at its next look and closes the selector. Closing again does nothing."""
        self._closed.set()
        with self._closing:
            self._close_connections()
            if self._thread.ident is None:
                self._selector.close()  # never served

    def _close_connections(self) -> None:
        """Close the port and every connection held, unless the selector is closed (the
        serving thread, or an earlier `close`, closed them): under `_closing`."""
        held = self._selector.get_map()
        if held is None:
            return
        for key in list(held.values()):
            try:
                key.fileobj.close()  # type: ignore[union-attr]
            except OSError:
                pass


def _connect(address: str) -> tuple[socket.socket | None, ProbeOutcome | None, str | None]:
    """Connect to a liveness port and read its greeting: (the socket, None, the
    incarnation greeted), or (None, why not, None)."""
    try:
        connection = socket.create_connection(split_address(address), timeout=PROBE_TIMEOUT)
    except ConnectionRefusedError:
        return None, ProbeOutcome.REFUSED, None
    except OSError:  # no route, unreachable, timed out
        return None, ProbeOutcome.UNREACHABLE, None
    line = b""
    try:
        while not line.endswith(b"\n") and len(line) <= MAX_GREETING:
            chunk = connection.recv(MAX_GREETING + 1 - len(line))
            if not chunk:
                break
            line += chunk
    except TimeoutError:
        connection.close()
        return None, ProbeOutcome.SILENT, None
    except OSError:
        connection.close()
        return None, ProbeOutcome.REFUSED, None
    answered = parse_greeting(line)
    if answered is None:
        connection.close()
        return None, ProbeOutcome.OTHER, None
    connection.settimeout(None)
    return connection, None, answered


class PeerWatch:
    """Connections to the other members' liveness ports. `follow(members)` is told the
    members now (incarnation -> liveness address; an empty address is not watched);
    `on_gone(incarnation, reason)` is called once for each peer proven gone."""

    def __init__(self, me: str, on_gone: Callable[[str, str], None]):
        self.me = me
        self._on_gone = on_gone
        self._lock = threading.Lock()
        self._peers: dict[str, _Peer] = {}
        self._stopped = threading.Event()

    def follow(self, members: dict[str, str]) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            for incarnation in set(self._peers) - set(members):
                self._peers.pop(incarnation).stop()
            for incarnation, address in members.items():
                if incarnation == self.me or not address or incarnation in self._peers:
                    continue
                peer = _Peer(incarnation, address, self._gone, self._stopped)
                self._peers[incarnation] = peer
                peer.start()

    def _gone(self, incarnation: str, reason: str) -> None:
        if not self._stopped.is_set():
            self._on_gone(incarnation, reason)

    def watched(self) -> list[str]:
        """The peers watched over a live connection now (for tests and the status)."""
        with self._lock:
            return sorted(name for name, peer in self._peers.items() if peer.connected)

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()
            peers, self._peers = list(self._peers.values()), {}
        for peer in peers:
            peer.stop()


class _Peer:
    def __init__(self, incarnation: str, address: str, gone: Callable[[str, str], None], stopped: threading.Event):
        self.incarnation, self.address = incarnation, address
        self._gone, self._watch_stopped = gone, stopped
        self._stopped = threading.Event()
        self._connection: socket.socket | None = None
        self.connected = False
        self._thread = threading.Thread(target=self._run, name=f"liveness watch {incarnation}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _ended(self) -> bool:
        return self._stopped.is_set() or self._watch_stopped.is_set()

    def _run(self) -> None:
        connection = self._first_connection()
        while connection is not None:
            outcome = self._watch(connection)
            if outcome is None or self._ended():
                return
            found = verdict(outcome)
            if found is Verdict.GONE:
                self._gone(
                    self.incarnation,
                    f"its liveness connection ({self.address}) ended and the port then {_SAID[outcome]}",
                )
                return
            log.info(
                "liveness connection to %s ended, but its port (%s) %s: left to its session",
                self.incarnation,
                self.address,
                _SAID[outcome],
            )
            # Nothing proven either way: watched again once the port greets as it.
            connection = self._first_connection()

    def _watch(self, connection: socket.socket) -> ProbeOutcome | None:
        """Wait on `connection` until it ends, then probe the port; while the same
        incarnation answers, wait on the new connection. The probe that found something
        else, or None once stopped."""
        while True:
            self._connection, self.connected = connection, True
            if not self._ended():  # a `stop` before `_connection` was set did not shut it
                try:
                    while connection.recv(4096):  # the listener sends nothing after its greeting
                        pass
                except OSError:
                    pass  # reset by the peer's kernel, or shut by `stop`
            self.connected = False
            connection.close()
            if self._ended():
                return None
            probe, outcome, answered = _connect(self.address)
            if probe is None:
                return outcome
            outcome = probe_outcome(self.incarnation, answered)
            if outcome is not ProbeOutcome.SAME:
                probe.close()
                return outcome
            log.info("liveness connection to %s ended and was made again: it is alive", self.incarnation)
            connection = probe

    def _first_connection(self) -> socket.socket | None:
        while not self._ended():
            connection, outcome, answered = _connect(self.address)
            if connection is not None and answered == self.incarnation:
                return connection
            if connection is not None:
                connection.close()
                log.warning(
                    "the liveness port %s of %s greets as %s: not watched (left to its session)",
                    self.address,
                    self.incarnation,
                    answered,
                )
                return None
            self._stopped.wait(RETRY)
        return None

    def stop(self) -> None:
        self._stopped.set()
        connection = self._connection
        if connection is not None:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


_SAID = {
    ProbeOutcome.REFUSED: "refused a connection",
    ProbeOutcome.UNREACHABLE: "could not be reached",
    ProbeOutcome.OTHER: "greeted as another incarnation",
    ProbeOutcome.SILENT: "accepted a connection but sent no greeting",
    ProbeOutcome.SAME: "answered",
}
