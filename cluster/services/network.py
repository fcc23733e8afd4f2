"""Loopback ports for the harness. Every service binds to 127.0.0.1 only."""

from __future__ import annotations

import random
import socket

HOST = "127.0.0.1"


# Where the harness's ports come from when the kernel's ephemeral range is known: below
# it, so that no outgoing connection (a client's local port) can take a port between its
# choice and the service's bind.
LOWEST_PORT = 10_000
_EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that were free on 127.0.0.1 a moment ago.

    A service started on a chosen port binds it later, in another process: a port the
    kernel gave to an outgoing connection in between makes it fail ("Address already in
    use"; a DataNode did so in CI, its port taken by some client's connection). So the
    ports are chosen at random below the kernel's ephemeral range (`ip_local_port_range`),
    which the kernel never hands to a connection's local end, and each is bound once to
    see that nothing listens there. The sockets are held open together while choosing, so
    no port is given twice in one call. Where the range is unknown, or leaves too little
    below it, the kernel chooses (port 0).
    """
    chosen = _below_ephemeral(count)
    if chosen is not None:
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


def _below_ephemeral(count: int) -> list[int] | None:
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
