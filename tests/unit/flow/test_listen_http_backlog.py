"""ListenHTTP's listen backlog: a burst of clients connecting while its accepting
thread is held waits in the kernel's queue, every one of them, and is answered once
the thread goes on. With socketserver's default backlog (5) the queue overflowed: the
kernel dropped handshakes and sent SYN cookies, and on a loaded machine a client of
16 posting at once had its connection reset. Over loopback sockets; the queue's
length and bound are the listening socket's TCP_INFO (what `ss -lt` shows)."""

from __future__ import annotations

import socket
import struct

from tests.unit.flow.listen_http_support import Listener, connect, parse_answer, post_bytes, read_to_close, wait_until

CLIENTS = 40


def accept_queue(listening: socket.socket) -> tuple[int, int]:
    """(connections waiting to be accepted, the most that may wait) of a listening
    socket: struct tcp_info's tcpi_unacked and tcpi_sacked, which Linux fills so (the
    project runs on Linux; elsewhere `socket.TCP_INFO` is missing and this fails)."""
    info = listening.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    fields = struct.unpack_from("8B6I", info)
    return fields[12], fields[13]


def test_a_burst_of_clients_waits_in_the_listen_queue_and_each_is_answered():
    with Listener(max_connections=100) as listener:
        server = listener.processor._server
        assert accept_queue(server.socket)[1] >= 100
        clients = []
        with server._lock:  # the accepting thread stops at its next connection
            for n in range(CLIENTS):
                sock = connect(listener.port)
                sock.sendall(post_bytes(f"burst {n}".encode()))
                clients.append(sock)
            # One taken by the accepting thread, held at the lock; the rest queued.
            wait_until(lambda: accept_queue(server.socket)[0] >= CLIENTS - 1, 10, "the burst to be queued")
        statuses = [parse_answer(read_to_close(sock, 30))[0] for sock in clients]
        for sock in clients:
            sock.close()
        assert statuses == [200] * CLIENTS
        wait_until(lambda: len(listener.bodies()) == CLIENTS, 10, "every body to be taken")
        assert sorted(listener.bodies()) == sorted(f"burst {n}".encode() for n in range(CLIENTS))
