"""Loopback ports for the harness. Every service binds to 127.0.0.1 only."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """`count` distinct ports that were free on 127.0.0.1 a moment ago.

    The sockets are held open together while choosing, so the kernel never hands the
    same port out twice in one call.
    """
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
