"""Who may call what: bearer tokens checked against the node's token file, and the
role each route needs (`requires("read")`, `requires("admin")`). Every API route
lives under `API`."""

from __future__ import annotations

import logging

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .tokens import Tokens, allows

log = logging.getLogger(__name__)

API = "/api/v1"

_bearer = HTTPBearer(auto_error=False, description="a token from the node's token file (custody admin token)")


class AuthProblem(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def requires(role: str):
    """A dependency that lets the request through with a token of `role` (or admin)."""

    # async: a few hash comparisons, done on the event loop rather than after a hop to
    # the thread pool (which costs more than the check, on every request).
    async def check(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> str:
        tokens: Tokens = request.app.state.tokens
        if not tokens.enabled:
            return "admin"
        if credentials is None or credentials.scheme.lower() != "bearer":
            raise AuthProblem(401, "a bearer token is needed: Authorization: Bearer <token>")
        entry = tokens.identify(credentials.credentials)
        if entry is None:
            raise AuthProblem(401, "the token is not known to this node")
        if not allows(entry.role, role):
            log.info("refused %s %s to token %r (role %s, needs %s)", request.method, request.url.path,
                     entry.name, entry.role, role)
            raise AuthProblem(403, f"this needs the {role} role; the token {entry.name!r} has {entry.role}")
        return entry.role

    return check
