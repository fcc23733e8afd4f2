"""ListenHTTP: receives FlowFiles by HTTP POST, and answers only after the commit.

The client gets 200 when the session that holds its data is durable (`on_success`),
and 503 when the commit failed or the flow that took it failed (`on_failure`): an
acknowledging source, as NiFi's stateless execution design calls it (acknowledge only
what is durable). It binds 127.0.0.1 unless told otherwise.

A client that retries on anything but 200 gets its data delivered at least once; with
an idempotency key, exactly once. A request may carry a key in the header
`idempotency_key_header` (`Idempotency-Key`), as the IETF Idempotency-Key draft has it:
the keys of the requests whose FlowFiles were committed are kept in the processor
state with a fingerprint of each one's payload (its body and the attributes its headers
gave), in the same WAL transaction as those FlowFiles (`flow.processors.intake.format`).
A retried POST with a key already committed is answered 200 with no second FlowFile,
also after a crash that lost the first 200; with the same key but another payload, 422
(the key was reused: nothing is kept; new data needs a new key). While the first
request with a key is in flight (read, and not answered yet), another with that key is
answered 409 at once (422 if its payload differs): retry once the first is answered.
Keys are kept for `idempotency_key_age`, and at most `idempotency_max_keys` of them (the
oldest go first): a retry later than that is taken again. The processor state is one
WAL record, written whole: each commit that adds a key writes every key kept (expired
ones are dropped then, not by a commit of their own). Without a key a retry after a
lost 200 is a new request, and its data is delivered twice: nothing tells it apart from
new data.

What each answer promises:

  200  the data is durable (or was already, for a committed idempotency key)
  503  the data is not and will never be delivered: the commit or the flow failed, the
       request waited `ack_timeout` without being taken, `max_pending` requests were
       waiting already, `max_connections` connections were open already and none could
       be cut (answered at once and closed; a client that had sent its request already
       may see the connection reset instead), the connection was cut to make room for
       another (below), or the processor was stopping. With Retry-After.
  none the connection is closed without an answer when the request's commit has an
       unknown outcome: the processor stopped while it was in flight, or the WAL write
       failed in a way a recovery may still replay (retry with a key); or when the
       client went away, or stayed silent for `idle_timeout`, or sent its headers
       without the blank line that ends them.
  4xx  the request was refused before it was read, or while, and nothing of it was
       kept: 400 malformed (a header line that is not `Name: value`, folded, or with a
       control character; a Content-Length that is not a decimal number, both
       Content-Length and Transfer-Encoding, a bad chunk), 401 no valid
       `Authorization: Bearer` token (when `auth_token` is set), 404 another path, 405
       not a POST, 408 too slow (below), 409 and 422 an idempotency key in flight or
       reused (above), 413 a body over `max_request_size` (refused as soon as the size
       is known: a chunked body is read up to that limit, never further), 431 too many
       or too long headers; 501 a Transfer-Encoding other than chunked, 505 an HTTP
       version but 1.0 and 1.1.
  500  the processor failed before committing.

Limits: a request's body is read in pieces, so memory grows with the bytes received,
never past `max_request_size`; request lines and header lines are capped by Python's
http.server (64 KiB a line, 100 headers), and a header block is taken only if every
line of it parses (`http_request.check_header_lines`: Python's email parser, under
http.server, would otherwise hide the headers after a malformed line). Every socket
operation times out after `idle_timeout`, and a request must arrive in time, as
Apache's mod_reqtimeout has it (`http_deadlines`): the request line and headers within
`header_timeout` of the connection opening (a TLS handshake included), then the body at
`body_min_rate` bytes a second at least, after a grace of `body_timeout`; a client
slower than that is answered 408 and closed. When all `max_connections` are taken, a
new connection cuts the one that has waited longest for its headers (at least
`EVICTABLE_AFTER_SECONDS`), which is answered 503: a slowloris client holding every
slot cannot keep others out, and real clients, whose headers arrive at once, are
served meanwhile. After its answer a connection is half-closed and what the client
still sends is read and dropped for up to a second (a close with unread data would
reset the connection, and the client could lose the answer).

A body of `Content-Type: application/flowfile-v3` (NiFi's FlowFile Stream v3,
`flow.flowfile_v3`) is read whole when it arrives: a FlowFile per package, with the
attributes it carried (not its sender's `uuid`, nor anything in `http.`), all in the
request's one commit and answer; a damaged or empty stream is answered 400, nothing
of it kept.

Attributes: `http.remote.host` (the client's address) and, with a key,
`http.idempotency.key`; then the request headers whose names fully match
`header_attributes` (case-insensitive): `X-Attr-<name>` gives the attribute <name> (in
lower case), `Content-Type` gives `mime.type`, any other header its name in lower case.
A header can never set an attribute in the processor's own `http.` namespace, nor
`uuid`; nor `filename`, `path` or `absolute.path`, which steer FetchFile and PutFile,
unless `reserved_header_attributes` names them (a comma-separated list, empty by
default: a flow that wants a client's file name says so). A header that would set
one is dropped, the request taken without it.

Security: off by default, on 127.0.0.1. `auth_token` makes every POST carry
`Authorization: Bearer <token>` (compared in constant time; 401 otherwise, before the
body is read). `tls_cert` and `tls_key` (PEM files) serve HTTPS instead of HTTP, TLS 1.2
at least; the handshake is done in the connection's own thread, under `idle_timeout`.

Refusals are logged at most once a minute for each kind, with a count of the others
(`ProcessContext.limited_log`): a hostile client cannot flood the log.

Here is the processor; `http_request` reads a request within its limits,
`http_deadlines` times it, `http_pending` holds the requests waiting for their answer,
`http_server` serves the connections.
"""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING

from ..errors import CommitError
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .http_pending import _Intake, _Pending
from .http_request import NEVER_FROM_HEADERS, RESERVED_ATTRIBUTES, Refusal, read_body
from .http_server import EVICTABLE_AFTER_SECONDS, _Endpoint, _Server, _tls_context
from .intake import HandsOverIntake
from .intake import format as intake_format
from .intake.ledger import NEW, REPLAY, key_decision, recent_keys, remember_keys

if TYPE_CHECKING:
    from ..session import ProcessSession

# Refusal and read_body (http_request) are still imported from this module.
__all__ = ["EVICTABLE_AFTER_SECONDS", "ListenHTTP", "Refusal", "read_body"]

MAX_PORT = 65535
TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")  # RFC 6750's b64token


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
        PropertyDescriptor(
            "idle_timeout",
            "duration",
            default="30 sec",
            description="a connection silent (or not reading) that long is closed",
        ),
        PropertyDescriptor(
            "max_connections",
            "integer",
            default=100,
            description="connections served at once; one more is answered 503 and closed. The kernel's queue "
            "of connections not yet accepted holds as many (at least 128)",
        ),
        PropertyDescriptor(
            "max_pending", "integer", default=1000, description="requests waiting to be taken; one more is answered 503"
        ),
        PropertyDescriptor(
            "header_timeout",
            "duration",
            default="10 sec",
            description="the request line and headers must all arrive within this of the "
            "connection opening; a slower client is answered 408",
        ),
        PropertyDescriptor(
            "body_timeout",
            "duration",
            default="10 sec",
            description="the body's grace: it must arrive within this, plus 1 s for every "
            "body_min_rate bytes received; a slower client is answered 408",
        ),
        PropertyDescriptor(
            "body_min_rate",
            "size",
            default="1 KB",
            description="the slowest body taken after body_timeout, in bytes a second",
        ),
        PropertyDescriptor(
            "header_attributes",
            "regex",
            default="X-Attr-.+|Content-Type",
            description="request headers (full names, any case) that become attributes",
        ),
        PropertyDescriptor(
            "reserved_header_attributes",
            "string",
            default="",
            description="of filename, path and absolute.path (which steer FetchFile and "
            "PutFile), those a header may set, comma-separated (default: none)",
        ),
        PropertyDescriptor(
            "auth_token",
            "string",
            default="",
            description="when set, a POST must carry Authorization: Bearer <this> (a secret)",
        ),
        PropertyDescriptor("tls_cert", "string", default="", description="PEM certificate (chain): serve HTTPS"),
        PropertyDescriptor("tls_key", "string", default="", description="PEM private key of tls_cert"),
        PropertyDescriptor(
            "idempotency_key_header",
            "string",
            default="Idempotency-Key",
            description="request header whose key makes a retry answered, not taken again (empty: none)",
        ),
        PropertyDescriptor(
            "idempotency_max_keys", "integer", default=1000, description="committed keys kept in state, the newest"
        ),
        PropertyDescriptor(
            "idempotency_key_age", "duration", default="10 min", description="how long a committed key is kept"
        ),
    )

    @classmethod
    def validate(cls, properties, dynamic):
        port = properties["port"]
        if not 0 <= port <= MAX_PORT:
            return [("port", f"must be 0 to {MAX_PORT} (0: any free port), got {port}")]
        for name in ("max_batch", "max_connections", "max_pending", "idempotency_max_keys"):
            if properties[name] < 1:
                return [(name, f"must be at least 1, got {properties[name]}")]
        for name in ("ack_timeout", "idle_timeout", "header_timeout", "body_timeout"):
            if properties[name] <= 0:
                return [(name, "must be more than 0 seconds")]
        if properties["body_min_rate"] < 1:
            return [("body_min_rate", "must be at least 1 byte (a second)")]
        for name in _names(properties["reserved_header_attributes"]):
            if name == NEVER_FROM_HEADERS:
                return [("reserved_header_attributes", "uuid is a FlowFile's identity and never comes from a header")]
            if name not in RESERVED_ATTRIBUTES:
                return [
                    (
                        "reserved_header_attributes",
                        f"{name!r} is not reserved; name some of "
                        f"{', '.join(RESERVED_ATTRIBUTES)} (any other attribute "
                        "comes from header_attributes alone)",
                    )
                ]
        if bool(properties["tls_cert"]) != bool(properties["tls_key"]):
            return [
                (
                    "tls_key" if properties["tls_cert"] else "tls_cert",
                    "tls_cert and tls_key go together: give both PEM files, or neither for plain HTTP",
                )
            ]
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
            processor_id=self.id,
            base=base,
            limit=context["max_request_size"],
            ack_timeout=context["ack_timeout"],
            key_header=context["idempotency_key_header"].strip(),
            header_pattern=re.compile(context["header_attributes"].pattern, re.IGNORECASE),
            reserved_allowed=frozenset(_names(context["reserved_header_attributes"])),
            token=context["auth_token"].encode() if context["auth_token"] else None,
            intake=self._intake,
            logger=context.logger,
            limited=context.limited_log,
        )
        self._server = _Server(
            (context["host"], context["port"]),
            endpoint,
            max_connections=context["max_connections"],
            idle_timeout=context["idle_timeout"],
            header_timeout=context["header_timeout"],
            body_timeout=context["body_timeout"],
            body_min_rate=context["body_min_rate"],
            tls=tls,
            reuse_port=not context.worker.sole,
        )
        self.port = self._server.server_address[1]
        self._scheme = "https" if tls else "http"
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"ListenHTTP {self.id}", daemon=True)
        self._thread.start()
        context.logger.info("%s listening on %s://%s:%d%s", self.id, self._scheme, context["host"], self.port, base)

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        batch = self._intake.take(context["max_batch"])
        if not batch:
            return
        try:
            self._receive_all(context, session, batch)
        except BaseException:
            # Those not answered yet had nothing committed (`_commit` answers the others).
            self._intake.settle(batch, 500)
            raise

    def _receive_all(self, context: ProcessContext, session: ProcessSession, batch: list[_Pending]) -> None:
        now_ms = context.clock_ms() if context.clock_ms is not None else int(time.time() * 1000)
        max_age_ms = int(context["idempotency_key_age"] * 1000)
        with self._lock:
            state = intake_format.unpack(session.get_state(), self.id)
            committed = recent_keys(state.keys, now_ms, max_age_ms)
            taken: list[_Pending] = []
            answered: dict[int, list[_Pending]] = {}
            new_keys: dict[str, str] = {}  # key -> fingerprint, of the requests taken
            for request in batch:
                if request.key is None:
                    taken.append(request)
                    continue
                if request.key in new_keys:  # a safeguard: the intake queues one request a key at a time
                    status = 409 if new_keys[request.key] == request.fingerprint else 422
                else:
                    decision = key_decision(request.key, request.fingerprint, committed)
                    if decision == NEW:
                        new_keys[request.key] = request.fingerprint
                        taken.append(request)
                        continue
                    status = 200 if decision == REPLAY else 422
                answered.setdefault(status, []).append(request)
            for status, requests in answered.items():
                self._intake.settle(requests, status)
            for request in taken:
                self._receive(context, session, request)
            if new_keys:
                keys = remember_keys(
                    state.keys, new_keys, now_ms, max_count=context["idempotency_max_keys"], max_age_ms=max_age_ms
                )
                session.set_state(intake_format.pack(state.replace(keys=keys)))
            if not session.touched:
                session.rollback()
                return
            self._commit(session, taken)

    def _commit(self, session: ProcessSession, requests: list[_Pending]) -> None:
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

    def _receive(self, context: ProcessContext, session: ProcessSession, request: _Pending) -> None:
        attributes = dict(request.attributes)
        attributes["http.remote.host"] = request.client
        if request.key is not None:
            attributes["http.idempotency.key"] = request.key
        uri = f"{self._scheme}://{context['host']}:{self.port}/{context['base_path']}"
        if request.packaged is None:
            flowfiles, contents = [session.create(attributes=attributes)], [request.body]
        else:
            # A FlowFile Stream v3: a FlowFile per package, with the attributes it carried
            # (not its sender's uuid, nor the stream's own mime.type).
            attributes.pop("mime.type", None)
            flowfiles = [
                session.create(attributes={**attributes, **_carried(package.attributes)})
                for package in request.packaged
            ]
            contents = [package.content for package in request.packaged]
        for flowfile in session.write_bytes_many(flowfiles, contents):
            session.receive(flowfile, uri)
            session.transfer(flowfile, "success")

    def on_stopped(self, context: ProcessContext) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._intake.close()
            self._server.server_close()
            self._server = None
        self._intake.close()


def _names(text: str) -> list[str]:
    """The names of a comma-separated list, in lower case (attribute names are)."""
    return [name.strip().lower() for name in text.split(",") if name.strip()]


def _carried(attributes: dict[str, str]) -> dict[str, str]:
    """The attributes a packaged FlowFile brings, but its sender's `uuid` (a FlowFile
    received here is a new one, as in NiFi) and this processor's `http.` namespace."""
    return {name: value for name, value in attributes.items() if name != "uuid" and not name.startswith("http.")}
