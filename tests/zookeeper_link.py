"""`ZooKeeperLink`: a TCP link from a client to one ZooKeeper member, for tests that
drop a client's connection (`cut`: the client reconnects, through the link again, to
the same session) and that have a connect answered with another session timeout than
the server granted (`grant_ms`), as a server of an ensemble reconfigured with a lower
maxSessionTimeout grants a re-established session.

    link = ZooKeeperLink("127.0.0.1", member_port)
    client = KazooClient(hosts=f"127.0.0.1:{link.port}/chroot", ...)
    link.grant_ms = 2000; link.cut()      # the reconnect is told 2 s
    link.close()

The rewrite knows one thing of ZooKeeper's wire protocol: the first frame a server
sends on a connection is its ConnectResponse, a 4-byte length, then the protocol
version and the granted timeout, each a big-endian int32.
"""

from __future__ import annotations

import socket
import struct
import threading

_FRAME = struct.Struct(">i")
_TIMEOUT_AT = 4  # in the ConnectResponse, after the protocol version


class ZooKeeperLink:
    """Lock plan: `_lock` guards `_sockets`; the pumps run on threads of their own."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.grant_ms: int | None = None  # set: the ConnectResponse of each new connection says this
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name="zookeeper-link", daemon=True).start()

    def cut(self) -> None:
        """Drop every connection now open through the link; new ones are accepted."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _close(sock)

    def close(self) -> None:
        self._closed = True
        _close(self._server)
        self.cut()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=10)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets += [client, server]
            grant = self.grant_ms
            threading.Thread(target=self._pump, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, grant), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, grant_ms: int | None) -> None:
        try:
            if grant_ms is not None:
                (length,) = _FRAME.unpack(_read(source, _FRAME.size))
                response = bytearray(_read(source, length))
                _FRAME.pack_into(response, _TIMEOUT_AT, grant_ms)
                sink.sendall(_FRAME.pack(length) + bytes(response))
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(source)
            _close(sink)


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("the connection closed mid-frame")
        data += chunk
    return data


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
