"""The FastAPI application of a node's admin API.

    app = create_app(control, tokens)      # control: cluster.node.control.NodeControl

Routes: `/health` and `/ready` (open, see below), `/metrics` (Prometheus text, role
read), `/` (the status page, open; its data comes from the API with the reader's
token), and everything else under `/api/v1` (role read for GET, admin for control).

`/health` and `/ready` need no token: load balancers, compose healthchecks and
Kubernetes probes call them without credentials, and they say nothing but whether the
process answers and why it is not ready yet.

Errors are JSON `{"error": ..., "status": ...}`: 401 without a valid token, 403 for
a token whose role is not enough, 404 for an unknown id (naming it), 409 for a call
the node's state refuses, 413 for a body past the route's cap, 422 for a bad
parameter (naming it), 503 when ZooKeeper or storage does not answer (with the
reason). Never a stack trace: an unexpected error is logged with its trace and
answered 500 with one line. The token and the body cap are checked before any body
is read (`cluster.admin.gate.RequestGate`); the server adds the Host and Origin
checks of browsers (421, 403: `cluster.admin.gate.BrowserGate`).
"""

from __future__ import annotations

import logging
import ssl

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import ClusterError, first_line
from ..node.control import Conflict, Invalid, NotFound, Unavailable
from . import (
    page,
    routes_alarms,
    routes_cluster,
    routes_control,
    routes_flow,
    routes_flow_graph,
    routes_node,
    routes_ops,
    routes_provenance,
    routes_queues,
)
from .auth import AuthProblem
from .gate import RequestGate
from .metrics import NodeMetrics
from .responses import document_validation_errors, problem
from .tokens import Tokens
from .worker_siblings import WorkerSiblings, refusal

log = logging.getLogger(__name__)


def create_app(
    control,
    tokens: Tokens | None = None,
    *,
    metrics=None,
    member_trust: ssl.SSLContext | None = None,
    workers: WorkerSiblings | None = None,
) -> FastAPI:
    app = FastAPI(
        title=f"custody admin API ({control.name})",
        version="1",
        description="The admin API of one custody node: the cluster as ZooKeeper holds it, this node's "
        "shards, queues and provenance, and control.",
    )
    app.state.control = control
    app.state.tokens = tokens or Tokens.disabled()
    app.state.metrics = metrics or NodeMetrics(control)
    app.state.member_trust = member_trust  # asking the other members over https (`fan_out`)
    app.state.workers = workers  # a node of worker processes: its other workers (`worker_siblings`)
    if workers is not None:
        # Added before the gate, so it runs after it: a caller without a token hears 401 first.
        @app.middleware("http")
        async def refuse_one_worker_views(request: Request, call_next):
            reason = refusal(request.method, request.url.path, workers.count)
            if reason is not None:
                return problem(409, reason)
            return await call_next(request)

    app.add_middleware(RequestGate)

    @app.exception_handler(AuthProblem)
    async def auth_problem(_request, error: AuthProblem):
        headers = {"WWW-Authenticate": "Bearer"} if error.status == 401 else None
        return problem(error.status, str(error), headers)

    def answer_with(status: int):
        async def handler(_request, error: Exception):
            return problem(status, str(error))

        return handler

    for error_class, status in ((NotFound, 404), (Conflict, 409), (Invalid, 422), (Unavailable, 503)):
        app.add_exception_handler(error_class, answer_with(status))

    @app.exception_handler(ClusterError)
    async def cluster_error(_request, error: ClusterError):
        return problem(503, first_line(error, 300))

    @app.exception_handler(OSError)
    async def storage_error(_request, error: OSError):
        return problem(503, f"storage did not answer: {first_line(error, 300)}")

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request, error: RequestValidationError):
        # One line per parameter (`query.start`), whatever its type: a parameter that may
        # be one of several forms fails each, and says so once, "or" between them.
        reasons: dict[str, list[str]] = {}
        for item in error.errors():
            where = ".".join(str(part) for part in item.get("loc", ())[:2])
            reasons.setdefault(where, []).append(item.get("msg", "invalid"))
        details = [f"{where}: {', or '.join(messages)}" for where, messages in reasons.items()]
        return problem(422, "; ".join(details) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException):
        # Its headers too: a 405 must say which methods the path allows (`Allow`), and
        # Starlette names those of the first route of the path only.
        headers = error.headers
        if error.status_code == 405:
            allowed = sorted(
                {
                    method
                    for route in request.app.routes
                    if getattr(route, "path_regex", None) is not None and route.path_regex.match(request.url.path)
                    for method in (getattr(route, "methods", None) or ())
                }
            )
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        return problem(error.status_code, str(error.detail), headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        log.exception("admin API: %s %s failed", request.method, request.url.path)
        return problem(500, f"internal error ({type(error).__name__}); the node's log has the details")

    routes_ops.register(app)
    routes_node.register(app)
    routes_cluster.register(app)
    routes_control.register(app)
    routes_flow.register(app)
    routes_flow_graph.register(app)
    routes_provenance.register(app)
    routes_queues.register(app)
    routes_alarms.register(app)
    page.register(app)
    document_validation_errors(app)
    return app
