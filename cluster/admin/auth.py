"""Who may call what: bearer tokens checked against the node's token file, and the
role each route needs (`requires("read")`, `requires("admin")`). Every API route
lives under `API`.

The check runs twice, the same function (`authorize`): in `cluster.admin.gate`, before
any of the request's body is read (FastAPI reads a route's body before it runs its
dependencies, so a caller without a token could make the node parse a body as large
as it liked before its 401), and as the route's dependency, which also declares the
bearer scheme in /openapi.json. `role_needed(route)` reads the role a route declares.

A route a browser link opens (a FlowFile's content) may take a download ticket instead
of a token (`requires_or_ticket`): the gate lets a request that carries one on
(`carries_ticket`), and the route's dependency checks the ticket."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

from .tokens import Tokens, allows

log = logging.getLogger(__name__)

API = "/api/v1"

_bearer = HTTPBearer(auto_error=False, description="a token from the node's token file (custody admin token)")


class AuthProblem(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def authorize(tokens: Tokens, authorization: str | None, role: str, *, method: str, path: str) -> str:
    """The caller's role, from its `Authorization` header, if it is `role` or admin;
    raises `AuthProblem` (401 or 403) if not."""
    if not tokens.enabled:
        return "admin"
    scheme, token = get_authorization_scheme_param(authorization)
    if scheme.lower() != "bearer" or not token:
        raise AuthProblem(401, "a bearer token is needed: Authorization: Bearer <token>")
    entry = tokens.identify(token)
    if entry is None:
        raise AuthProblem(401, "the token is not known to this node")
    if not allows(entry.role, role):
        log.info("refused %s %s to token %r (role %s, needs %s)", method, path, entry.name, entry.role, role)
        raise AuthProblem(403, f"this needs the {role} role; the token {entry.name!r} has {entry.role}")
    return entry.role


def _authorize_request(request: Request, role: str) -> str:
    """`authorize` for the request's bearer token, method and path."""
    return authorize(
        request.app.state.tokens,
        request.headers.get("authorization"),
        role,
        method=request.method,
        path=request.url.path,
    )


def requires(role: str):
    """A dependency that lets the request through with a token of `role` (or admin)."""

    # async: a few hash comparisons, done on the event loop rather than after a hop to
    # the thread pool (which costs more than the check, on every request).
    async def check(request: Request, _credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> str:
        return _authorize_request(request, role)

    check.role = role  # what `role_needed` finds
    return check


def requires_or_ticket(role: str, check_ticket):
    """As `requires(role)`, for a route a browser link may also open with a download
    ticket (`?ticket=`, `cluster.admin.download_tickets`): a request that carries one is
    let through the gate without a token (`carries_ticket`) and admitted here if
    `check_ticket(request, ticket)` returns (it raises `AuthProblem` 401 if not); a
    request without one needs the token as usual."""

    async def check(
        request: Request,
        _credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
        # No length or pattern here: a ticket that is not one is the ticket's 401, which
        # FastAPI's 422 would come before (the check alone decides what a ticket is).
        ticket: str | None = Query(
            None, description="a download ticket for this FlowFile (POST .../content/ticket): served without a token"
        ),
    ) -> str:
        if ticket is not None:
            check_ticket(request, ticket)
            return role
        return _authorize_request(request, role)

    check.role = role
    check.takes_ticket = True  # what `carries_ticket` finds
    return check


def carries_ticket(route, query_string: bytes) -> bool:
    """True when `route` takes a download ticket and the request's query has one: the
    route's own dependency checks it (`requires_or_ticket`), so the gate lets it on."""
    if b"ticket=" not in query_string:
        return False
    pending = list(getattr(getattr(route, "dependant", None), "dependencies", ()))
    while pending:
        dependency = pending.pop()
        if getattr(dependency.call, "takes_ticket", False):
            return "ticket" in parse_qs(query_string.decode("latin-1"), keep_blank_values=True)
        pending.extend(dependency.dependencies)
    return False


def role_needed(route) -> str | None:
    """The role a route's `requires` dependency asks for (None: an open route)."""
    pending = list(getattr(getattr(route, "dependant", None), "dependencies", ()))
    while pending:
        dependency = pending.pop()
        role = getattr(dependency.call, "role", None)
        if role is not None:
            return role
        pending.extend(dependency.dependencies)
    return None
