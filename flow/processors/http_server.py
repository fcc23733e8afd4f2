"""ListenHTTP's HTTP server (`flow.processors.http`): one thread a connection, at most
`max_connections` served, TLS done in the connection's thread, each request read within
its deadlines (`http_deadlines`), checked and handed to the intake, and answered with
its outcome; then the connection lingers.

Admission. A connection accepted while `max_connections` are served cuts the one that
has waited longest for its request line and headers, if it has waited
`EVICTABLE_AFTER_SECONDS` at least (`oldest_reading_headers`), and takes its place; the
one cut is answered 503 (Retry-After), best effort, and closed. When none has, the new
connection is answered 503 and closed. A client's headers arrive in a moment, so the
connections that wait for theirs are slow or silent: a slowloris attack holds every
slot with them, and would keep real clients out for as long as it keeps sending. A
connection whose headers are in is never cut: its body is read, its request taken.

Lock plan: `_Server._lock` guards the set of connections, the count of those served,
and each connection's `reading_headers` and `evicted`, so that a connection's passage
from its headers to its body and its eviction exclude each other. The shutdown that
wakes an evicted connection's thread is done outside the lock; that thread answers and
closes.
"""

from __future__ import annotations

import io
import logging
import re
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from repositories.log_limits import LimitedLog

from .. import flowfile_v3
from ..errors import FlowError
from .http_deadlines import PacedReader, RequestDeadlines, RequestTimeout
from .http_pending import IN_FLIGHT, REUSED, _Intake, _Pending
from .http_request import (
    READ_PIECE,
    ClientGone,
    HeaderBlock,
    Refusal,
    authorized,
    header_attributes,
    read_body,
)
from .intake import format as intake_format

LINGER_SECONDS = 1.0
LISTEN_BACKLOG_MIN = 128  # the listen backlog when max_connections is smaller
LINGER_BYTES = 1 << 20
RETRY_AFTER_SECONDS = 1
# A connection waiting this long for its headers may be cut to make room for another:
# longer than a client on a slow network takes for its TLS handshake and headers.
EVICTABLE_AFTER_SECONDS = 1.0
_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: %d\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    % RETRY_AFTER_SECONDS
)
_RETRY_AFTER = (("Retry-After", str(RETRY_AFTER_SECONDS)),)
_EVICTED_MESSAGE = (
    f"every connection was taken, and this one had not sent its request line and headers within "
    f"{EVICTABLE_AFTER_SECONDS:g} s: it was closed for another; send the request at once, and "
    "retry"
)


@dataclass(frozen=True)
class _Endpoint:
    """What the connection threads need of the processor's configuration."""

    processor_id: str
    base: str
    limit: int
    ack_timeout: float
    key_header: str
    header_pattern: re.Pattern
    reserved_allowed: frozenset[str]
    token: bytes | None
    intake: _Intake
    logger: logging.Logger
    limited: LimitedLog

    def request(self, handler: _Handler) -> _Pending:
        """The request `handler` read, checked and with its body; raises `Refusal`,
        `ClientGone`, `RequestTimeout`."""
        if handler.path.split("?")[0].rstrip("/") != self.base:
            raise Refusal(404, f"POST to {self.base}")
        if self.token is not None and not authorized(handler.headers, self.token):
            raise Refusal(
                401,
                "send the header Authorization: Bearer <the processor's auth_token>",
                (("WWW-Authenticate", "Bearer"),),
            )
        key = handler.headers.get(self.key_header, "").strip() if self.key_header else ""
        if key and not intake_format.valid_key(key):
            raise Refusal(400, f"{self.key_header}: 1 to {intake_format.MAX_KEY_LENGTH} printable ASCII characters")
        body = read_body(handler.rfile, handler.headers, self.limit)
        attributes, refused = header_attributes(handler.headers, self.header_pattern, self.reserved_allowed)
        if refused:
            self.limited.info(
                f"{self.processor_id}:header-attributes",
                "%s: headers from %s would have set %s, which no header sets here "
                "(reserved_header_attributes lists the reserved ones a flow lets clients set); "
                "the request was taken without them",
                self.processor_id,
                handler.client_address[0],
                ", ".join(sorted(set(refused)))[:200],
            )
        fingerprint = intake_format.payload_fingerprint(body, attributes) if key else None
        pending = _Pending(body, attributes, handler.client_address[0], key or None, fingerprint)
        if _media_type(handler.headers.get("Content-Type", "")) == flowfile_v3.MIME_TYPE:
            try:  # all or nothing: a damaged stream is refused before anything of it is kept
                pending.packaged = list(flowfile_v3.read_stream(io.BytesIO(body), max_content=self.limit))
            except flowfile_v3.FlowFileStreamError as error:
                raise Refusal(400, f"a damaged {flowfile_v3.MIME_TYPE} body, nothing of it kept: {error}") from None
            if not pending.packaged:
                raise Refusal(400, f"an empty {flowfile_v3.MIME_TYPE} body: it holds no FlowFile")
        return pending

    def deliver(self, request: _Pending) -> int | None:
        refused = self.intake.offer(request)
        if refused is not None:
            return refused
        return self.intake.outcome(request, self.ack_timeout)

    def answer_of(self, request: _Pending, status: int) -> str:
        """What the answer `status` to `request` says (a status that needs no words: "")."""
        if status == IN_FLIGHT:
            return (
                f"a request with {self.key_header} {request.key} is in flight: retry once it is answered "
                "(nothing of this one was kept)"
            )
        if status == REUSED:
            return (
                f"{self.key_header} {request.key} was first used with another payload (body or attributes): "
                "a retry must repeat its first request exactly, and new data needs a new key (the IETF "
                "Idempotency-Key draft); nothing of this one was kept"
            )
        return ""

    def answered(self, client: str, status: int, message: str) -> None:
        """Log a refusal: at most one line a minute for each status, with a count of the rest."""
        level = logging.WARNING if status == 408 else logging.INFO
        self.limited.log(
            level,
            f"{self.processor_id}:answered-{status}",
            "%s: answered %d to %s: %s",
            self.processor_id,
            status,
            client,
            message or "(no message)",
        )


class _Connection:
    """One accepted connection, as the server's admission sees it (see the lock plan)."""

    __slots__ = ("socket", "opened_at", "deadlines", "reading_headers", "evicted")

    def __init__(self, sock: socket.socket, opened_at: float, deadlines: RequestDeadlines):
        self.socket, self.opened_at, self.deadlines = sock, opened_at, deadlines
        self.reading_headers = True
        self.evicted = False

    def cut(self) -> None:
        """Wake the connection's thread: its reads end as if the client had closed. The
        plain socket's shutdown, even on a TLS socket (whose own shutdown would drop its
        TLS state under the thread still using it)."""
        try:
            socket.socket.shutdown(self.socket, socket.SHUT_RD)
        except OSError:
            pass


def oldest_reading_headers(connections: Iterable[_Connection], now: float, grace: float) -> _Connection | None:
    """The connection to cut for a new one: of those still waiting for their headers
    (and not cut already), the one opened first, if it has waited `grace` at least."""
    waiting = [c for c in connections if c.reading_headers and not c.evicted and now - c.opened_at >= grace]
    return min(waiting, key=lambda connection: connection.opened_at, default=None)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # A request line without a version is not taken for HTTP/0.9 (see send_response_only).
    default_request_version = "HTTP/1.0"

    def __init__(self, request, client_address, server: _Server, tracked: _Connection):
        self.tracked = tracked
        self.answered = False  # a final answer was sent (or begun)
        super().__init__(request, client_address, server)

    def version_string(self) -> str:
        return "Custody-ListenHTTP"

    def log_message(self, *args):  # quiet: the node logs what matters
        pass

    def setup(self):
        super().setup()
        # What an answer needs before the request line is read (a 408 may come first).
        self.requestline, self.request_version, self.command = "", self.default_request_version, None
        self.rfile.close()
        self.rfile = io.BufferedReader(
            PacedReader(self.connection, self.tracked.deadlines, self.server.idle_timeout, self.server.clock)
        )

    def parse_request(self) -> bool:
        if not self.raw_requestline.endswith(b"\n"):
            raise ClientGone()  # the stream ended within the request line
        rfile, self.rfile = self.rfile, HeaderBlock(self.rfile, self._headers_complete)
        try:
            if not super().parse_request():
                return False
        finally:
            self.rfile = rfile
        if int(self.request_version[len("HTTP/") :].split(".")[0]) < 1:
            self._reply(505, "send HTTP/1.0 or HTTP/1.1")
            return False
        return True

    def _headers_complete(self) -> None:
        if not self.server.headers_read(self.tracked):
            raise ClientGone()  # cut for another connection meanwhile: `handle` answers

    def send_response_only(self, code, message=None):
        # http.server answers HTTP/0.9 without a status line nor headers: neither a 200 nor a
        # refusal would be seen as one.
        if self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.0"
        if code >= 200:
            self.answered = True
        super().send_response_only(code, message)

    def send_error(self, code, message=None, explain=None):
        # http.server's own refusals (a bad request line, too long or too many headers).
        self.server.endpoint.answered(self.client_address[0], code, message or explain or "")
        super().send_error(code, message, explain)

    def handle(self):
        endpoint = self.server.endpoint
        try:
            super().handle()
        except Refusal as refusal:  # the header block
            self._reply_if_possible(refusal.status, refusal.message, refusal.headers)
        except RequestTimeout as timeout:  # the request line or headers
            self._reply_if_possible(408, timeout.message)
        except ClientGone:
            self.close_connection = True
        except OSError as error:  # the client reset, stalled past idle_timeout or broke TLS
            endpoint.limited.debug(
                f"{endpoint.processor_id}:connection-ended",
                "connection from %s ended: %s",
                self.client_address[0],
                error,
            )
        except Exception:  # noqa: BLE001 - a connection thread must not die with a traceback on stderr
            endpoint.logger.exception("unexpected error answering %s", self.client_address[0])
        if self.tracked.evicted and not self.answered:
            self._reply_if_possible(503, _EVICTED_MESSAGE, _RETRY_AFTER)

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        if not self.tracked.evicted:  # cut for another: its slot is that one's already
            _linger(self.connection)

    def do_POST(self):
        endpoint = self.server.endpoint
        try:
            request = endpoint.request(self)
        except Refusal as refusal:
            self._reply(refusal.status, refusal.message, refusal.headers)
            return
        except RequestTimeout as timeout:  # the body
            self._reply(408, timeout.message)
            return
        except ClientGone:
            self.close_connection = True
            return
        status = endpoint.deliver(request)
        if status is None:
            self.close_connection = True
            return
        self._reply(
            status, endpoint.answer_of(request, status), headers=_RETRY_AFTER if status in (503, IN_FLIGHT) else ()
        )

    def do_GET(self):
        if self.path.split("?")[0].rstrip("/") == self.server.endpoint.base:
            self._reply(405, "POST to this path", (("Allow", "POST"),))
        else:
            self._reply(404)

    def _reply(self, status: int, message: str = "", headers=()) -> None:
        if status != 200:
            self.server.endpoint.answered(self.client_address[0], status, message)
        body = f"{message}\n".encode() if message else b""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if body:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def _reply_if_possible(self, status: int, message: str, headers=()) -> None:
        """Answer a client whose request was cut short; it may be gone already."""
        try:
            self._reply(status, message, headers)
        except (OSError, ValueError):
            pass


def _linger(connection: socket.socket) -> None:
    """Close our side, then read what the client still sends for a while: closing a
    socket with unread data resets it, and the client may lose the answer with it."""
    try:
        connection.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + LINGER_SECONDS
        drained = 0
        while drained < LINGER_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            connection.settimeout(left)
            piece = connection.recv(READ_PIECE)
            if not piece:
                return
            drained += len(piece)
    except (OSError, ValueError):
        pass


class _Server(ThreadingHTTPServer):
    """One thread a connection, at most `max_connections` served at once; admission as
    the module docstring says, by the accepting thread."""

    daemon_threads = True
    block_on_close = False  # stopping must not wait for connections still reading

    def __init__(
        self,
        address,
        endpoint: _Endpoint,
        *,
        max_connections: int,
        idle_timeout: float,
        header_timeout: float,
        body_timeout: float,
        body_min_rate: int,
        tls: ssl.SSLContext | None,
        clock: Callable[[], float] = time.monotonic,
        reuse_port: bool = False,
    ):
        # With `reuse_port` (SO_REUSEPORT) the worker processes of one node each bind the
        # port, and the kernel spreads the connections over them.
        self.allow_reuse_port = reuse_port
        self.endpoint = endpoint
        self.idle_timeout = idle_timeout
        self.clock = clock
        self._max_connections = max_connections
        self._deadlines = {
            "header_timeout": header_timeout,
            "body_timeout": body_timeout,
            "body_min_rate": body_min_rate,
        }
        self._tls = tls
        self._lock = threading.Lock()
        self._connections: set[_Connection] = set()
        self._served = 0  # the connections not evicted
        # The kernel's queue of connections not yet accepted (socketserver's default is
        # 5): as many as may be served at once, so that a burst of clients connecting
        # together waits for the accepting thread, which answers each (a 503 beyond
        # `max_connections`), instead of overflowing the queue. An overflowing queue
        # drops handshakes and falls back to SYN cookies; a client of 16 posting at
        # once to a loaded machine had its connection reset.
        self.request_queue_size = max(max_connections, LISTEN_BACKLOG_MIN)
        super().__init__(address, _Handler)

    def process_request(self, request, client_address):
        now = self.clock()
        connection = _Connection(request, now, RequestDeadlines(now, **self._deadlines))
        with self._lock:
            victim = None
            if self._served >= self._max_connections:
                victim = oldest_reading_headers(self._connections, now, EVICTABLE_AFTER_SECONDS)
                if victim is not None:
                    victim.evicted = True
                    self._served -= 1
            if self._served < self._max_connections:
                self._connections.add(connection)
                self._served += 1
            else:
                connection = None
        if connection is None:
            self.endpoint.answered(
                client_address[0],
                503,
                f"all {self._max_connections} connections (max_connections) "
                "were taken, none of them waiting for its headers",
            )
            self._turn_away(request)
            return
        if victim is not None:
            victim.cut()
            self.endpoint.limited.warning(
                f"{self.endpoint.processor_id}:evicted",
                "%s: all %d connections were taken; closed one that had waited %.1f s for its request headers to "
                "serve %s (clients that open connections and send slowly on purpose are a slowloris attack; "
                "header_timeout bounds each)",
                self.endpoint.processor_id,
                self._max_connections,
                now - victim.opened_at,
                client_address[0],
            )
        thread = threading.Thread(
            target=self._serve,
            args=(connection, client_address),
            name=f"ListenHTTP {self.endpoint.processor_id} {client_address[0]}",
            daemon=True,
        )
        try:
            thread.start()
        except BaseException:
            self._release(connection)
            raise

    def headers_read(self, connection: _Connection) -> bool:
        """`connection` has its header block: from now on it is never cut, and its body's
        deadline runs. False when it was cut for another connection first."""
        with self._lock:
            if connection.evicted:
                return False
            connection.reading_headers = False
        connection.deadlines.body_started(self.clock())
        return True

    def _serve(self, connection: _Connection, client_address) -> None:
        request = connection.socket
        try:
            self._finish(connection, client_address)
        except Exception:  # noqa: BLE001 - as socketserver's process_request_thread
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._release(connection)

    def _release(self, connection: _Connection) -> None:
        with self._lock:
            if connection in self._connections:
                self._connections.discard(connection)
                if not connection.evicted:
                    self._served -= 1

    def _finish(self, connection: _Connection, client_address) -> None:
        request = connection.socket
        request.settimeout(self.idle_timeout)
        if self._tls is None:
            _Handler(request, client_address, self, connection)
            return
        try:
            secured = self._tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        except OSError as error:
            self.endpoint.logger.debug("TLS with %s failed: %s", client_address[0], error)
            return
        with self._lock:
            connection.socket = secured  # `request` is detached now: a cut must shut this one
        try:
            try:
                # The handshake is part of the header phase: its deadline bounds it whole
                # (an SSL socket's timeout bounds the handshake, not each read of it).
                wait, _ = connection.deadlines.allowance(self.clock(), self.idle_timeout)
                secured.settimeout(wait)
                secured.do_handshake()
                secured.settimeout(self.idle_timeout)
            except (OSError, RequestTimeout) as error:
                self.endpoint.logger.debug("TLS handshake with %s failed: %s", client_address[0], error)
                return
            _Handler(secured, client_address, self, connection)
        finally:
            secured.close()

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            self.endpoint.logger.debug("connection from %s ended: %s", client_address[0], error)
        else:
            self.endpoint.logger.error("unexpected error answering %s", client_address[0], exc_info=error)

    def _turn_away(self, request) -> None:
        try:
            if self._tls is None:
                request.setblocking(False)
                request.send(_BUSY)
        except OSError:
            pass
        self.shutdown_request(request)


def _tls_context(processor_id: str, cert: str, key: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise FlowError(
            f"{processor_id}: cannot load tls_cert {cert!r} with tls_key {key!r}: {error}; "
            "give PEM files of a certificate and its private key"
        ) from None
    return context


def _media_type(content_type: str) -> str:
    """The media type of a Content-Type header, without its parameters, in lower case."""
    return content_type.split(";", 1)[0].strip().lower()
