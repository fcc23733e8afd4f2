"""ListenHTTP's HTTP server (`flow.processors.http`): one thread a connection, at most
`max_connections`, TLS done in the connection's thread, each request read, checked and
handed to the intake, and answered with its outcome; then the connection lingers."""

from __future__ import annotations

import logging
import re
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import FlowError
from .http_pending import _Intake, _Pending
from .http_request import READ_PIECE, ClientGone, Refusal, authorized, header_attributes, read_body
from .intake import format as intake_format

LINGER_SECONDS = 1.0
LINGER_BYTES = 1 << 20
RETRY_AFTER_SECONDS = 1
_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: %d\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
         % RETRY_AFTER_SECONDS)
_RETRY_AFTER = (("Retry-After", str(RETRY_AFTER_SECONDS)),)


@dataclass(frozen=True)
class _Endpoint:
    """What the connection threads need of the processor's configuration."""

    base: str
    limit: int
    ack_timeout: float
    key_header: str
    header_pattern: re.Pattern
    token: bytes | None
    intake: _Intake
    logger: logging.Logger

    def request(self, handler: "_Handler") -> _Pending:
        """The request `handler` read, checked and with its body; raises `Refusal`, `ClientGone`."""
        if handler.path.split("?")[0].rstrip("/") != self.base:
            raise Refusal(404, f"POST to {self.base}")
        if self.token is not None and not authorized(handler.headers, self.token):
            raise Refusal(401, "send the header Authorization: Bearer <the processor's auth_token>",
                          (("WWW-Authenticate", "Bearer"),))
        key = handler.headers.get(self.key_header, "").strip() if self.key_header else ""
        if key and not intake_format.valid_key(key):
            raise Refusal(400, f"{self.key_header}: 1 to {intake_format.MAX_KEY_LENGTH} printable ASCII characters")
        body = read_body(handler.rfile, handler.headers, self.limit)
        attributes = header_attributes(handler.headers, self.header_pattern)
        return _Pending(body, attributes, handler.client_address[0], key or None)

    def deliver(self, request: _Pending) -> int | None:
        if not self.intake.offer(request):
            return 503
        return self.intake.outcome(request, self.ack_timeout)


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    # A request line without a version is not taken for HTTP/0.9 (see send_response_only).
    default_request_version = "HTTP/1.0"

    def version_string(self) -> str:
        return "Custody-ListenHTTP"

    def log_message(self, *args):  # quiet: the node logs what matters
        pass

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if int(self.request_version[len("HTTP/"):].split(".")[0]) < 1:
            self._reply(505, "send HTTP/1.0 or HTTP/1.1")
            return False
        return True

    def send_response_only(self, code, message=None):
        # http.server answers HTTP/0.9 without a status line nor headers: neither a 200 nor a
        # refusal would be seen as one.
        if self.request_version == "HTTP/0.9":
            self.request_version = "HTTP/1.0"
        super().send_response_only(code, message)

    def handle(self):
        try:
            super().handle()
        except OSError as error:  # the client reset, stalled past idle_timeout or broke TLS
            self.server.endpoint.logger.debug("connection from %s ended: %s", self.client_address[0], error)
        except Exception:  # noqa: BLE001 - a connection thread must not die with a traceback on stderr
            self.server.endpoint.logger.exception("unexpected error answering %s", self.client_address[0])

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        _linger(self.connection)

    def do_POST(self):
        endpoint = self.server.endpoint
        try:
            request = endpoint.request(self)
        except Refusal as refusal:
            self._reply(refusal.status, refusal.message, refusal.headers)
            return
        except ClientGone:
            self.close_connection = True
            return
        status = endpoint.deliver(request)
        if status is None:
            self.close_connection = True
            return
        self._reply(status, headers=_RETRY_AFTER if status == 503 else ())

    def do_GET(self):
        if self.path.split("?")[0].rstrip("/") == self.server.endpoint.base:
            self._reply(405, "POST to this path", (("Allow", "POST"),))
        else:
            self._reply(404)

    def _reply(self, status: int, message: str = "", headers=()) -> None:
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
    """One thread a connection, at most `max_connections` of them: a connection beyond
    is answered 503 at once (plain HTTP; closed, with TLS) by the accepting thread."""

    daemon_threads = True
    block_on_close = False  # stopping must not wait for connections still reading

    def __init__(self, address, endpoint: _Endpoint, *, max_connections: int, idle_timeout: float,
                 tls: ssl.SSLContext | None):
        self.endpoint = endpoint
        self._slots = threading.BoundedSemaphore(max_connections)
        self._idle_timeout = idle_timeout
        self._tls = tls
        super().__init__(address, _Handler)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            self._turn_away(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request, client_address):
        request.settimeout(self._idle_timeout)
        if self._tls is None:
            self.RequestHandlerClass(request, client_address, self)
            return
        try:
            connection = self._tls.wrap_socket(request, server_side=True)
        except OSError as error:
            self.endpoint.logger.debug("TLS handshake with %s failed: %s", client_address[0], error)
            return
        try:
            self.RequestHandlerClass(connection, client_address, self)
        finally:
            connection.close()

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
        raise FlowError(f"{processor_id}: cannot load tls_cert {cert!r} with tls_key {key!r}: {error}; "
                        "give PEM files of a certificate and its private key") from None
    return context
