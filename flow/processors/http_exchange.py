"""One HTTP request and its answer, for InvokeHTTP: a fresh connection (Custody's
ListenHTTP closes each after its answer), the body streamed from an iterable, every
socket operation under a timeout.

Timeouts, as NiFi's InvokeHTTP has them: `connect` for the TCP connection and the TLS
handshake, `write` for each send of the request, `read` for each receive of the
answer. A receiver that stops reading or answering for that long fails the exchange;
one that trickles bytes slower than that never does, as in NiFi (the timeouts are per
operation, not a deadline for the whole exchange).

What goes wrong on the wire raises `TransportError` (the request may or may not have
arrived: retry it with the same idempotency key). What goes wrong reading the body's
source (the FlowFile's content: `UnreadableContent`, storage that cannot be reached)
is raised as it is, never as a `TransportError`: it is not the network's fault.
"""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import SplitResult

READ_CHUNK = 1 << 16
# Methods whose request has no body: no Content-Length is sent with them.
BODILESS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})


class TransportError(Exception):
    """The exchange failed on the wire: `kind` names the error's class (TimeoutError,
    ConnectionRefusedError, SSLCertVerificationError, ...)."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind, self.message = kind, message


@dataclass(frozen=True)
class Timeouts:
    connect: float
    write: float
    read: float


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    content_type: str | None
    body: bytes  # as much of the body as was asked for (`read_body`)
    body_cut: bool  # the body was longer than that


class _Source:
    """The body's chunks; remembers an error raised by the source itself, so that it is
    told apart from the socket's."""

    def __init__(self, chunks: Iterable[bytes]):
        self._iterator = iter(chunks)
        self.error: BaseException | None = None

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = next(self._iterator)
            except StopIteration:
                return
            except BaseException as error:
                self.error = error
                raise
            yield chunk

    def close(self) -> None:
        """Close the source (a generator holding the content open) when the exchange
        ends before the body does."""
        close = getattr(self._iterator, "close", None)
        if close is not None:
            close()


def exchange(
    method: str,
    url: SplitResult,
    headers: dict[str, str],
    body: Iterable[bytes],
    length: int,
    timeouts: Timeouts,
    *,
    tls: ssl.SSLContext | None = None,
    read_body: int = 0,
) -> Answer:
    """Send `method` `url` with `headers` and `length` bytes of `body`, and read the
    answer: its status, and up to `read_body` bytes of its body (`body_cut` when there
    was more). Raises `TransportError`, or what `body` raised."""
    port = url.port
    if url.scheme == "https":
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            url.hostname or "", port, timeout=timeouts.connect, context=tls or ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(url.hostname or "", port, timeout=timeouts.connect)
    source = _Source(body)
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    try:
        connection.connect()
        assert connection.sock is not None
        connection.sock.settimeout(timeouts.write)
        connection.putrequest(method, target, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        if length or method not in BODILESS:
            connection.putheader("Content-Length", str(length))
        connection.endheaders()
        for chunk in source:
            connection.send(chunk)
        connection.sock.settimeout(timeouts.read)
        response = connection.getresponse()
        data = response.read(read_body + 1) if read_body else b""
        return Answer(
            response.status,
            response.reason,
            response.getheader("Content-Type"),
            data[:read_body],
            len(data) > read_body,
        )
    except (OSError, http.client.HTTPException, ValueError) as error:
        if source.error is not None:
            raise source.error from None
        raise TransportError(type(error).__name__, str(error) or repr(error)) from None
    finally:
        source.close()
        connection.close()
