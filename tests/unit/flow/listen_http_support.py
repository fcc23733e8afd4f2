"""A ListenHTTP in a stateless flow, and a raw loopback client, for the unit tests that
talk HTTP to it.

    with Listener(max_request_size="1 KB") as listener:   # triggered by a thread of its own
        answer = exchange(listener.port, post_bytes(b"data"))
        assert status_of(answer) == 200 and listener.bodies() == [b"data"]

`Listener(run=False)` is not triggered: the test calls `trigger()` and settles each
result itself. Every socket is on 127.0.0.1.
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
import time

from flow.loading import parse_flow
from flow.stateless import StatelessFlow

BASE = "/contentListener"
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-5][0-9][0-9])(?: [^\r\n]*)?\r\n")


class Listener:
    def __init__(self, *, run: bool = True, acknowledge_after: float = 0.0, **properties):
        """`acknowledge_after`: how long the trigger thread holds a result with outputs
        before acknowledging it (a commit in flight)."""
        self.flow = StatelessFlow(
            parse_flow(
                {
                    "processors": [{"id": "listen", "type": "ListenHTTP", "properties": {"port": 0, **properties}}],
                    "ports": [{"id": "out", "type": "output"}],
                    "connections": [{"source": "listen", "destination": "out"}],
                }
            )
        )
        self.outputs: list[tuple[dict, bytes]] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._acknowledge_after = acknowledge_after
        self.flow.trigger().acknowledge()  # schedules ListenHTTP: it listens from now on
        self.processor = self.flow.graph.processors["listen"]
        self.port = self.processor.port
        self._thread = None
        if run:
            self._thread = threading.Thread(target=self._run, name="listener-trigger", daemon=True)
            self._thread.start()

    def trigger(self):
        result = self.flow.trigger()
        self.outputs.extend((attributes, data) for _, attributes, data in result.outputs)
        if not result.success:
            self.failures.append(result.failure)
        return result

    def _run(self) -> None:
        while not self._stop.is_set():
            result = self.trigger()
            if result.outputs:
                self._stop.wait(self._acknowledge_after)
            else:
                self._stop.wait(0.005)
            result.acknowledge()

    def bodies(self) -> list[bytes]:
        return [data for _, data in self.outputs]

    @property
    def waiting(self) -> int:
        """Requests queued for the processor, not taken yet."""
        return self.processor._intake.waiting

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            assert not self._thread.is_alive(), "the trigger thread did not stop"
        self.flow.close()

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def post_bytes(body: bytes, headers: dict | None = None, *, path: str = BASE) -> bytes:
    """A well-formed POST of `body` (Content-Length framed) with `headers`."""
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunked(*pieces: bytes, trailer: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n" + trailer + b"\r\n"


def connect(port: int, *, tls: ssl.SSLContext | None = None, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if tls is not None:
        sock = tls.wrap_socket(sock, server_hostname="127.0.0.1")
    return sock


def exchange(
    port: int, raw: bytes, *, half_close: bool = True, timeout: float = 10.0, tls: ssl.SSLContext | None = None
) -> bytes:
    """Send `raw`, then read until the server closes. Raises TimeoutError when neither an
    answer nor a close came within `timeout`; a reset ends the reading like a close."""
    with connect(port, tls=tls, timeout=timeout) as sock:
        try:
            sock.sendall(raw)
            if half_close and tls is None:
                sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed early (a refusal, a full server)
            pass
        return read_to_close(sock, timeout)


def read_to_close(sock: socket.socket, timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    received = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no close within {timeout} s; received {bytes(received[:200])!r}")
        sock.settimeout(left)
        try:
            piece = sock.recv(65536)
        except TimeoutError:
            raise TimeoutError(f"no close within {timeout} s; received {bytes(received[:200])!r}") from None
        except (ConnectionResetError, ssl.SSLError):
            return bytes(received)
        if not piece:
            return bytes(received)
        received += piece


def parse_answer(answer: bytes, *, to_head: bool = False) -> tuple[int, dict[str, str], bytes]:
    """(status, headers in lower case, body) of a well-formed HTTP answer (`to_head`: to a
    HEAD request, so without its body); AssertionError otherwise."""
    match = _STATUS_LINE.match(answer)
    assert match, f"not an HTTP answer: {answer[:200]!r}"
    rest = answer[match.end() :]
    if rest.startswith(b"\r\n"):
        head, body = b"", rest[2:]
    else:
        head, separator, body = rest.partition(b"\r\n\r\n")
        assert separator, f"an HTTP answer whose headers never end: {answer[:200]!r}"
    headers = {}
    for line in head.split(b"\r\n") if head else ():
        name, colon, value = line.partition(b":")
        assert colon and name and name == name.strip(), f"a malformed header line {line!r} in {answer[:200]!r}"
        headers[name.decode("latin-1").lower()] = value.strip().decode("latin-1")
    if "content-length" in headers and not to_head:
        assert len(body) == int(headers["content-length"]), f"a body unlike its Content-Length: {answer[:200]!r}"
    return int(match.group(1)), headers, body


def status_of(answer: bytes) -> int:
    return parse_answer(answer)[0]


def wait_until(condition, timeout: float = 10.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} not reached within {timeout} s"
        time.sleep(0.01)
