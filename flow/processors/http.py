"""ListenHTTP: receives FlowFiles by HTTP POST, and answers only after the commit.

The client gets 200 when the session that holds its data is durable (`on_success`),
and 503 when the commit failed or the flow that took it failed (`on_failure`): an
acknowledging source, as NiFi's stateless execution design calls it (acknowledge only
what is durable). It binds 127.0.0.1 unless told otherwise.

A client that retries on anything but 200 gets its data delivered at least once; with
an idempotency key, exactly once. A request may carry a key in the header
`idempotency_key_header` (`Idempotency-Key`): the keys of the requests whose FlowFiles
were committed are kept in the processor state, in the same WAL transaction as those
FlowFiles (`flow.processors.intake.format`), and a retried POST with a key already
committed is answered 200 with no second FlowFile, also after a crash that lost the
first 200. A retry while the first is still being committed waits for that commit, and
is then answered 200 without a FlowFile (or taken, if that commit failed). Keys are
kept for `idempotency_key_age`, and at most `idempotency_max_keys` of them (the oldest
go first; the whole list is written with every commit that changes it): a retry later
than that is taken again. Only the first request's body is kept for a key. Without a
key a retry after a lost 200 is a new request, and its data is delivered twice:
nothing tells it apart from new data.

What each answer promises:

  200  the data is durable (or was already, for a committed idempotency key)
  503  the data is not and will never be delivered: the commit or the flow failed, the
       request waited `ack_timeout` without being taken, `max_pending` requests were
       waiting already, `max_connections` connections were open already (answered at
       once and closed; a client that had sent its request already may see the
       connection reset instead), or the processor was stopping. With Retry-After.
  none the connection is closed without an answer when the request's commit has an
       unknown outcome: the processor stopped while it was in flight, or the WAL write
       failed in a way a recovery may still replay (retry with a key); or when the
       client went away or stayed silent for `idle_timeout`.
  4xx  the request was refused before it was read, or while: 400 malformed (a
       Content-Length that is not a decimal number, both Content-Length and
       Transfer-Encoding, a bad chunk), 401 no valid `Authorization: Bearer` token
       (when `auth_token` is set), 404 another path, 405 not a POST, 413 a body over
       `max_request_size` (refused as soon as the size is known: a chunked body is read
       up to that limit, never further), 431 too many or too long headers; 501 a
       Transfer-Encoding other than chunked, 505 an HTTP version but 1.0 and 1.1.
  500  the processor failed before committing.

Limits: a request's body is read in pieces, so memory grows with the bytes received,
never past `max_request_size`; request lines and header lines are capped by Python's
http.server (64 KiB a line, 100 headers). Every socket operation times out after
`idle_timeout`. After its answer a connection is half-closed and what the client still
sends is read and dropped for up to a second (a close with unread data would reset the
connection, and the client could lose the answer).

Attributes: `http.remote.host` (the client's address) and, with a key,
`http.idempotency.key`; then the request headers whose names fully match
`header_attributes` (case-insensitive): `X-Attr-<name>` gives the attribute <name> (in
lower case), `Content-Type` gives `mime.type`, any other header its name in lower case.
A header can never set an attribute in the processor's own `http.` namespace, nor `uuid`.

Security: off by default, on 127.0.0.1. `auth_token` makes every POST carry
`Authorization: Bearer <token>` (compared in constant time; 401 otherwise, before the
body is read). `tls_cert` and `tls_key` (PEM files) serve HTTPS instead of HTTP, TLS 1.2
at least; the handshake is done in the connection's own thread, under `idle_timeout`.
"""

from __future__ import annotations

import collections
import hmac
import logging
import re
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import CommitError, FlowError
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .intake import HandsOverIntake, format as intake_format
from .intake.ledger import recent_keys, remember_keys

READ_PIECE = 64 * 1024
MAX_CHUNK_LINE = 4096  # a chunk-size line, extensions included
MAX_TRAILER_LINES = 100
MAX_CONTENT_LENGTH_DIGITS = 18  # more is over any limit; int() of a very long text is refused
LINGER_SECONDS = 1.0
LINGER_BYTES = 1 << 20
RETRY_AFTER_SECONDS = 1
MAX_PORT = 65535
TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")  # RFC 6750's b64token
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")
_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nRetry-After: %d\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
         % RETRY_AFTER_SECONDS)
_RETRY_AFTER = (("Retry-After", str(RETRY_AFTER_SECONDS)),)


class Refusal(Exception):
    """A request answered with `status` and not taken."""

    def __init__(self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


class ClientGone(Exception):
    """The client closed its side before its request was complete: nobody to answer."""


# -- reading a request's body ---------------------------------------------------------


def read_body(rfile, headers, limit: int) -> bytes:
    """The body of a request whose `headers` were read from `rfile`, at most `limit`
    bytes of it in memory. Raises `Refusal` (400, 413, 501) or `ClientGone`."""
    encodings = headers.get_all("Transfer-Encoding") or []
    lengths = headers.get_all("Content-Length") or []
    if encodings:
        if lengths:
            raise Refusal(400, "both Transfer-Encoding and Content-Length: send one of them")
        if ",".join(encodings).strip().lower() != "chunked":
            raise Refusal(501, "the only Transfer-Encoding taken is chunked (without other codings)")
        return read_chunked(rfile, limit)
    if not lengths:
        return b""
    body = bytearray()
    _read_into(rfile, body, content_length(lengths, limit))
    return bytes(body)


def content_length(values: list[str], limit: int) -> int:
    """The length the Content-Length headers `values` give: `Refusal` 400 unless they are
    one decimal number of bytes (the same, if repeated), 413 when over `limit`."""
    texts = {value.strip() for value in values}
    if len(texts) != 1:
        raise Refusal(400, "Content-Length headers that disagree: send one")
    text = texts.pop()
    if not _DIGITS.fullmatch(text):
        raise Refusal(400, "Content-Length must be the body's size in bytes, a decimal number")
    digits = text.lstrip("0") or "0"
    if len(digits) > MAX_CONTENT_LENGTH_DIGITS or int(digits) > limit:
        raise _too_large(limit)
    return int(digits)


def _too_large(limit: int) -> Refusal:
    return Refusal(413, f"a body is at most {limit} bytes (max_request_size)")


def read_chunked(rfile, limit: int) -> bytes:
    """A chunked body (RFC 9112 7.1), trailers read and dropped; `Refusal` (400, 413)."""
    body = bytearray()
    while True:
        size = _chunk_size(_line(rfile, MAX_CHUNK_LINE, "a chunk-size line"))
        if size == 0:
            break
        if len(body) + size > limit:
            raise _too_large(limit)
        _read_into(rfile, body, size)
        if _line(rfile, 2, "the end of a chunk") not in (b"\r\n", b"\n"):
            raise Refusal(400, "a chunk longer than its size line says")
    for _ in range(MAX_TRAILER_LINES):
        if _line(rfile, MAX_CHUNK_LINE, "a trailer line") in (b"\r\n", b"\n"):
            return bytes(body)
    raise Refusal(400, f"more than {MAX_TRAILER_LINES} trailer lines")


def _chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    if not _HEX.fullmatch(text) or len(text) > 16:
        raise Refusal(400, "a chunk-size line must start with the chunk's size in hexadecimal")
    return int(text, 16)


def _line(rfile, limit: int, what: str) -> bytes:
    line = rfile.readline(limit + 1)
    if not line.endswith(b"\n"):
        if len(line) > limit:
            raise Refusal(400, f"{what} over {limit} bytes")
        raise ClientGone()
    return line


def _read_into(rfile, body: bytearray, count: int) -> None:
    while count > 0:
        piece = rfile.read(min(count, READ_PIECE))
        if not piece:
            raise ClientGone()
        body += piece
        count -= len(piece)


# -- what a request's headers give ----------------------------------------------------


def header_attributes(headers, pattern: re.Pattern) -> dict[str, str]:
    """The attributes the headers whose names fully match `pattern` give (see the module
    docstring); never one in the processor's own namespace."""
    attributes = {}
    for name, value in headers.items():
        if not pattern.fullmatch(name):
            continue
        attribute = _attribute_name(name.lower())
        if attribute and attribute != "uuid" and not attribute.startswith("http."):
            attributes[attribute] = value
    return attributes


def _attribute_name(header: str) -> str:
    if header.startswith("x-attr-"):
        return header[len("x-attr-"):]
    return "mime.type" if header == "content-type" else header


def authorized(headers, token: bytes) -> bool:
    """Whether `headers` carry exactly one `Authorization: Bearer <token>`."""
    values = headers.get_all("Authorization") or []
    if len(values) != 1:
        return False
    scheme, _, presented = values[0].strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    # Header values are decoded as latin-1: encoding them back gives the bytes sent.
    return hmac.compare_digest(presented.strip().encode("latin-1", "replace"), token)


# -- requests waiting for their answer ------------------------------------------------

WAITING, TAKEN, ANSWERED = "waiting", "taken", "answered"


class _Pending:
    __slots__ = ("body", "attributes", "client", "key", "done", "status", "state")

    def __init__(self, body: bytes, attributes: dict, client: str, key: str | None = None):
        self.body, self.attributes, self.client, self.key = body, attributes, client, key
        self.done = threading.Event()
        self.status: int | None = None  # once answered, None: the outcome is unknown, close unanswered
        self.state = WAITING


class _Intake:
    """The requests of one scheduling of the processor, from their arrival to their
    answer. Its lock guards every request's state, so that each moves once:
    waiting -> taken (by `on_trigger`) or answered (503: timed out, or the processor
    stopped); taken -> answered (by the commit's outcome, or unknown: stopped first)."""

    def __init__(self, max_pending: int):
        self._lock = threading.Lock()
        self._waiting: collections.deque[_Pending] = collections.deque()
        self._taken: set[_Pending] = set()
        self._max_pending = max_pending
        self._open = True

    def offer(self, request: _Pending) -> bool:
        """Queue `request` for `on_trigger`; False when full or closed (answer 503)."""
        with self._lock:
            if not self._open or len(self._waiting) >= self._max_pending:
                return False
            self._waiting.append(request)
            return True

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)

    def take(self, count: int) -> list[_Pending]:
        with self._lock:
            batch = []
            while self._waiting and len(batch) < count:
                request = self._waiting.popleft()
                request.state = TAKEN
                batch.append(request)
            self._taken.update(batch)
            return batch

    def outcome(self, request: _Pending, timeout: float) -> int | None:
        """The status to answer `request` with: its commit's, or 503 when it was not
        taken within `timeout` (then it never will be)."""
        if not request.done.wait(timeout):
            with self._lock:
                if request.state == WAITING:
                    self._waiting.remove(request)
                    self._answer(request, 503)
            # Taken: the commit decides, whenever it ends; `close` ends the wait otherwise.
            request.done.wait()
        return request.status

    def settle(self, requests, status: int | None) -> None:
        """Answer the taken `requests` with `status` (None: unknown); those answered already keep their answer."""
        with self._lock:
            for request in requests:
                if request.state == TAKEN:
                    self._taken.discard(request)
                    self._answer(request, status)

    def close(self) -> None:
        """No more requests: those waiting get 503, those taken are closed unanswered."""
        with self._lock:
            self._open = False
            while self._waiting:
                self._answer(self._waiting.popleft(), 503)
            for request in self._taken:
                self._answer(request, None)
            self._taken.clear()

    @staticmethod
    def _answer(request: _Pending, status: int | None) -> None:
        request.state, request.status = ANSWERED, status
        request.body = b""  # in the session's content already, or never to be
        request.done.set()


# -- the HTTP server ------------------------------------------------------------------


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


class ListenHTTP(HandsOverIntake, Processor):
    """See the module docstring.

    Lock plan. `_lock` is held from reading the committed keys until the commit that
    writes the next ones has returned, so a retry waits for the first request's commit
    and then finds its key (or, the commit failed, does not). The stateless engine is
    not triggered again before its result is settled. The intake's lock (`_Intake`)
    guards each request's state and is taken inside `_lock`, never the reverse, and
    never held while calling out. A connection thread whose request waited
    `ack_timeout` answers 503 only if, under the intake's lock, the request is still
    waiting: it is removed then, so `on_trigger` can no longer take it. If
    `on_trigger` took it first, the thread waits for the commit's outcome (200 or 503,
    from the commit's callbacks) however long the commit takes; an unknown outcome (the
    processor stopping first, a WAL write a recovery may replay) closes the connection
    unanswered. Each request is answered once: the first of these wins."""

    type_name = "ListenHTTP"
    description = "An HTTP endpoint: each POST body becomes a FlowFile; 200 once it is durable."
    is_source = True
    properties = (
        PropertyDescriptor("port", "integer", required=True, description="0: any free port"),
        PropertyDescriptor("host", "string", default="127.0.0.1"),
        PropertyDescriptor("base_path", "string", default="contentListener"),
        PropertyDescriptor("max_batch", "integer", default=100),
        PropertyDescriptor("max_request_size", "size", default="100 MB"),
        PropertyDescriptor("ack_timeout", "duration", default="30 sec"),
        PropertyDescriptor("idle_timeout", "duration", default="30 sec",
                           description="a connection silent (or not reading) that long is closed"),
        PropertyDescriptor("max_connections", "integer", default=100,
                           description="connections served at once; one more is answered 503 and closed"),
        PropertyDescriptor("max_pending", "integer", default=1000,
                           description="requests waiting to be taken; one more is answered 503"),
        PropertyDescriptor("header_attributes", "regex", default="X-Attr-.+|Content-Type|filename",
                           description="request headers (full names, any case) that become attributes"),
        PropertyDescriptor("auth_token", "string", default="",
                           description="when set, a POST must carry Authorization: Bearer <this> (a secret)"),
        PropertyDescriptor("tls_cert", "string", default="", description="PEM certificate (chain): serve HTTPS"),
        PropertyDescriptor("tls_key", "string", default="", description="PEM private key of tls_cert"),
        PropertyDescriptor("idempotency_key_header", "string", default="Idempotency-Key",
                           description="request header whose key makes a retry answered, not taken again "
                                       "(empty: none)"),
        PropertyDescriptor("idempotency_max_keys", "integer", default=1000,
                           description="committed keys kept in state, the newest"),
        PropertyDescriptor("idempotency_key_age", "duration", default="10 min",
                           description="how long a committed key is kept"),
    )

    @classmethod
    def validate(cls, properties, dynamic):
        port = properties["port"]
        if not 0 <= port <= MAX_PORT:
            return [("port", f"must be 0 to {MAX_PORT} (0: any free port), got {port}")]
        for name in ("max_batch", "max_connections", "max_pending", "idempotency_max_keys"):
            if properties[name] < 1:
                return [(name, f"must be at least 1, got {properties[name]}")]
        for name in ("ack_timeout", "idle_timeout"):
            if properties[name] <= 0:
                return [(name, "must be more than 0 seconds")]
        if bool(properties["tls_cert"]) != bool(properties["tls_key"]):
            return [("tls_key" if properties["tls_cert"] else "tls_cert",
                     "tls_cert and tls_key go together: give both PEM files, or neither for plain HTTP")]
        token = properties["auth_token"]
        if token and not TOKEN.fullmatch(token):
            return [("auth_token", "must be letters, digits and -._~+/ (then any '='), as a Bearer token is")]
        return []

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._intake = _Intake(1)
        self._intake.close()  # nothing arrives before on_scheduled opens one
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.port: int | None = None
        self._scheme = "http"

    def on_scheduled(self, context: ProcessContext) -> None:
        base = "/" + context["base_path"].strip("/")
        tls = _tls_context(self.id, context["tls_cert"], context["tls_key"]) if context["tls_cert"] else None
        self._intake = _Intake(context["max_pending"])
        endpoint = _Endpoint(
            base=base, limit=context["max_request_size"], ack_timeout=context["ack_timeout"],
            key_header=context["idempotency_key_header"].strip(),
            header_pattern=re.compile(context["header_attributes"].pattern, re.IGNORECASE),
            token=context["auth_token"].encode() if context["auth_token"] else None,
            intake=self._intake, logger=context.logger)
        self._server = _Server((context["host"], context["port"]), endpoint,
                               max_connections=context["max_connections"], idle_timeout=context["idle_timeout"],
                               tls=tls)
        self.port = self._server.server_address[1]
        self._scheme = "https" if tls else "http"
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"ListenHTTP {self.id}", daemon=True)
        self._thread.start()
        context.logger.info("%s listening on %s://%s:%d%s", self.id, self._scheme, context["host"], self.port, base)

    def on_trigger(self, context: ProcessContext, session) -> None:
        batch = self._intake.take(context["max_batch"])
        if not batch:
            return
        try:
            self._receive_all(context, session, batch)
        except BaseException:
            # Those not answered yet had nothing committed (`_commit` answers the others).
            self._intake.settle(batch, 500)
            raise

    def _receive_all(self, context: ProcessContext, session, batch: list[_Pending]) -> None:
        now_ms = context.clock_ms() if context.clock_ms is not None else int(time.time() * 1000)
        max_age_ms = int(context["idempotency_key_age"] * 1000)
        with self._lock:
            state = intake_format.unpack(session.get_state(), self.id)
            committed = recent_keys(state.keys, now_ms, max_age_ms)
            groups: list[list[_Pending]] = []  # one FlowFile each, its requests answered alike
            keyed: dict[str, list[_Pending]] = {}
            replayed = []
            for request in batch:
                if request.key is None:
                    groups.append([request])
                elif request.key in committed:
                    replayed.append(request)
                elif request.key in keyed:  # a retry in the same batch
                    keyed[request.key].append(request)
                else:
                    keyed[request.key] = [request]
                    groups.append(keyed[request.key])
            self._intake.settle(replayed, 200)
            for group in groups:
                self._receive(context, session, group[0])
            keys = remember_keys(state.keys, keyed, now_ms, max_count=context["idempotency_max_keys"],
                                 max_age_ms=max_age_ms)
            if keys != dict(state.keys):
                session.set_state(intake_format.pack(state.replace(keys=keys)))
            if not session.touched:
                session.rollback()
                return
            self._commit(session, [request for group in groups for request in group])

    def _commit(self, session, requests: list[_Pending]) -> None:
        failures: list[BaseException] = []

        def failed(error: BaseException) -> None:
            # A WAL write whose outcome is unknown may be replayed by a recovery: no 503 then.
            unknown = isinstance(error, CommitError) and error.wal_written
            self._intake.settle(requests, None if unknown else 503)
            failures.append(error)

        try:
            session.commit_async(lambda: self._intake.settle(requests, 200), failed)
        except BaseException:
            # Not a failed commit (that calls `failed`): the WAL may hold it, so neither answer is true.
            self._intake.settle(requests, None)
            raise
        if failures:
            raise failures[0]

    def _receive(self, context: ProcessContext, session, request: _Pending) -> None:
        attributes = dict(request.attributes)
        attributes["http.remote.host"] = request.client
        if request.key is not None:
            attributes["http.idempotency.key"] = request.key
        flowfile = session.create(attributes=attributes)
        flowfile = session.write_bytes(flowfile, request.body)
        session.receive(flowfile, f"{self._scheme}://{context['host']}:{self.port}/{context['base_path']}")
        session.transfer(flowfile, "success")

    def on_stopped(self, context: ProcessContext) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._intake.close()
            self._server.server_close()
            self._server = None
        self._intake.close()
