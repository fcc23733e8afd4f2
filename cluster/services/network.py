"""Loopback ports for the harness. Every service binds to 127.0.0.1 only."""

from __future__ import annotations

import fcntl
import json
import os
import random
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOST = "127.0.0.1"


# Where the harness's ports come from when the kernel's ephemeral range is known: below
# it, so that no outgoing connection (a client's local port) can take a port between its
# choice and the service's bind.
LOWEST_PORT = 10_000
_EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"
# How long a port handed out stays promised to its caller: longer than any service
# takes from its ports' choice to its bind (a JVM on a loaded machine: seconds).
RESERVED_S = 600.0


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that were free on 127.0.0.1 a moment ago.

    A service started on a chosen port binds it later, in another process: a port the
    kernel gave to an outgoing connection in between makes it fail ("Address already in
    use"; a DataNode did so in CI, its port taken by some client's connection). So the
    ports are chosen at random below the kernel's ephemeral range (`ip_local_port_range`),
    which the kernel never hands to a connection's local end, and each is bound once to
    see that nothing listens there. The sockets are held open together while choosing, so
    no port is given twice in one call. Nor across calls: a port handed out is promised
    for `RESERVED_S` to its caller, in a ledger every process of this user shares
    (`reserved`), so that two services started side by side (a drill's ZooKeeper and
    HDFS, or two test workers' HDFS) never choose the same port before either binds it;
    a DataNode lost its start so. Where the range is unknown, or leaves too little
    below it, the kernel chooses (port 0).
    """
    with reserved() as promised:
        chosen = _below_ephemeral(count, frozenset(promised))
        if chosen is not None:
            promised.update(dict.fromkeys(chosen, time.time() + RESERVED_S))
            return chosen
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def ledger_path() -> Path:
    """Where `reserved` keeps its promises: one ledger per user."""
    return Path(tempfile.gettempdir()) / f"custody-ports-{os.getuid()}.json"


@contextmanager
def reserved(ledger: Path | None = None) -> Iterator[dict[int, float]]:
    """The ports promised to callers of `free_ports` (port: until when, wall clock),
    the expired ones left out, held under an exclusive lock (`flock`) that every
    process of this user takes; what the caller adds is written back.

    The ledger is a JSON object of port to expiry in the temporary directory; one
    that does not parse is started afresh (it only promises), and where none can be
    written nothing is promised beyond the call."""
    path = ledger or ledger_path()
    try:
        handle = open(path, "a+", encoding="utf-8")
    except OSError:  # no temporary directory to write: promises within this call alone
        yield {}
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        try:
            entries = {int(port): float(until) for port, until in json.loads(handle.read() or "{}").items()}
        except (ValueError, AttributeError, TypeError):
            entries = {}
        now = time.time()
        promised = {port: until for port, until in entries.items() if until > now}
        yield promised
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({str(port): round(until, 3) for port, until in sorted(promised.items())}))
        handle.flush()


def _below_ephemeral(count: int, promised: frozenset[int] = frozenset()) -> list[int] | None:
    try:
        with open(_EPHEMERAL_RANGE) as handle:
            lowest_ephemeral = int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    candidates = range(LOWEST_PORT, lowest_ephemeral)
    if len(candidates) < 1_000 + count:
        return None
    rng = random.SystemRandom()
    sockets: list[socket.socket] = []
    try:
        for _ in range(50 * count):
            if len(sockets) == count:
                break
            port = rng.choice(candidates)
            if port in promised:  # another caller's, not bound yet
                continue
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((HOST, port))
            except OSError:  # in use (or held by another of ours this call)
                sock.close()
                continue
            sockets.append(sock)
        if len(sockets) < count:
            return None
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_open(port: int, host: str = HOST, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def four_letter_word(port: int, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command and return the reply."""
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.sendall(word.encode())
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")
