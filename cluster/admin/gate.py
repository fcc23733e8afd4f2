"""The checks a request passes before the admin API routes it, as two ASGI layers.

    BrowserGate(app, hosts)   AdminServer puts it around the app: Host (421) and
                              Origin (403), as `cluster.admin.admission` rules
    RequestGate(app)          create_app installs it: the route's token (401/403) and
                              its body cap (413), both before any body is read

Order matters, and each answer is made before the request's body is read: FastAPI
reads a route's body (and parses it) before it runs the route's dependencies, so the
token check of `requires` alone came after the whole body; a caller without a token
could make the node buffer and parse as much JSON as it sent. Here a declared length
past the cap is refused from the headers, and a chunked body is counted as it
arrives and refused at the byte that crosses the cap (`BodyTooLarge`, which FastAPI
passes on as an HTTP error), so no more than the cap is ever held.

A request answered before its body was read is answered with `Connection: close`:
the server would otherwise read (and throw away) the rest of the body to reach the
next request on the connection, as long as the client sends it.

A route's body cap is its FastAPI `max_body_size` (the flow deploy's); any other
route reads no body and takes at most DEFAULT_MAX_BODY_BYTES (a client's `{}`).

Refusals are logged once per kind per interval (`LimitedLog`): a hostile client
repeats them as fast as it likes.
"""

from __future__ import annotations

import logging

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.routing import Match

from repositories.log_limits import LimitedLog

from .admission import AllowedHosts, cross_site, declared_body_length
from .auth import AuthProblem, authorize, carries_ticket, role_needed
from .responses import problem

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 4 << 10


class BodyTooLarge(HTTPException):
    """Raised from `receive` at the chunk that crosses a route's body cap."""

    def __init__(self, cap: int, method: str, path: str):
        super().__init__(413, body_too_large(cap, method, path))


def body_too_large(cap: int, method: str, path: str) -> str:
    return f"the request body is larger than {cap} bytes, the most {method} {path} takes; send a smaller one"


def _may_have_body(headers: Headers) -> bool:
    return declared_body_length(headers.get("content-length"), headers.get("transfer-encoding")) != 0


async def _refuse(scope, receive, send, status: int, message: str, headers: dict | None = None) -> None:
    headers = dict(headers or {})
    if _may_have_body(Headers(scope=scope)):
        headers["Connection"] = "close"  # its body is not read: no next request on this connection
    await problem(status, message, headers)(scope, receive, send)


class BrowserGate:
    """Host and Origin, before anything else (see `cluster.admin.admission`)."""

    def __init__(self, app, hosts: AllowedHosts, *, refusals: LimitedLog | None = None):
        self.app = app
        self.hosts = hosts
        self.refusals = refusals or LimitedLog(log)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host, origin, method = headers.get("host"), headers.get("origin"), scope["method"]
        if not self.hosts.allows(host):
            self.refusals.warning(
                "host",
                "admin API: refused a request to host %r (it answers to %s)%s",
                host,
                self.hosts.describe(),
                _client(scope),
            )
            await _refuse(
                scope,
                receive,
                send,
                421,
                f"this node's admin API does not answer to the name {host!r}; it answers to "
                f"{self.hosts.describe()}. If {host!r} is a name of this node, add it to [admin] "
                f"allowed_hosts in NODE.toml (custody run: --admin-allowed-host)",
            )
            return
        if cross_site(method, origin, host):
            self.refusals.warning(
                "origin",
                "admin API: refused %s %s sent by the page at %r%s",
                method,
                scope["path"],
                origin,
                _client(scope),
            )
            await _refuse(
                scope,
                receive,
                send,
                403,
                f"a {method} sent by the page at {origin!r} is refused: a browser may send control "
                f"calls only from this node's own page. Call the API from a script or the custody "
                f"CLI (they send no Origin header)",
            )
            return
        await self.app(scope, receive, send)


class RequestGate:
    """The route's token and body cap, before the route reads the body."""

    def __init__(self, app, *, default_max_body: int = DEFAULT_MAX_BODY_BYTES, refusals: LimitedLog | None = None):
        self.app = app
        self.default_max_body = default_max_body
        self.refusals = refusals or LimitedLog(log)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        application, method, path = scope["app"], scope["method"], scope["path"]
        headers = Headers(scope=scope)
        route = _route_of(application, scope)
        role = role_needed(route) if route is not None else None
        if role is not None and not carries_ticket(route, scope.get("query_string", b"")):
            try:
                authorize(application.state.tokens, headers.get("authorization"), role, method=method, path=path)
            except AuthProblem as refused:
                await _refuse(
                    scope,
                    receive,
                    send,
                    refused.status,
                    str(refused),
                    {"WWW-Authenticate": "Bearer"} if refused.status == 401 else None,
                )
                return
        cap = getattr(route, "max_body_size", None) or self.default_max_body
        declared = declared_body_length(headers.get("content-length"), headers.get("transfer-encoding"))
        if declared is not None and declared > cap:
            self.refusals.warning(
                "body",
                "admin API: refused %s %s: a body of %d bytes, past its cap of %d%s",
                method,
                path,
                declared,
                cap,
                _client(scope),
            )
            await _refuse(scope, receive, send, 413, body_too_large(cap, method, path))
            return
        await _CappedExchange(self.app, cap, declared, self.refusals)(scope, receive, send)


class _CappedExchange:
    """One request through the app: its body counted against `cap` as it is received,
    and `Connection: close` on an answer sent before the body was read whole."""

    def __init__(self, app, cap: int, declared: int | None, refusals: LimitedLog):
        self.app = app
        self.cap = cap
        self.received = 0
        self.body_read = declared == 0
        self.response_started = False
        self.refusals = refusals

    async def __call__(self, scope, receive, send) -> None:
        async def counted_receive():
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > self.cap:
                    self.refusals.warning(
                        "body",
                        "admin API: refused %s %s: its body passed %d bytes%s",
                        scope["method"],
                        scope["path"],
                        self.cap,
                        _client(scope),
                    )
                    raise BodyTooLarge(self.cap, scope["method"], scope["path"])
                self.body_read = not message.get("more_body", False)
            return message

        async def closing_send(message):
            if message["type"] == "http.response.start":
                self.response_started = True
                if not self.body_read:
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counted_receive, closing_send)
        except BodyTooLarge as refused:
            if self.response_started:
                raise
            await problem(413, refused.detail, {"Connection": "close"})(scope, receive, send)


def _route_of(application, scope):
    """The route the app's router will run for `scope` (None: a 404 or 405)."""
    for route in application.router.routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return route
    return None


def _client(scope) -> str:
    client = scope.get("client")
    return f" from {client[0]}" if client else ""
