"""`/health`, `/ready` and `/metrics`: what probes and Prometheus call."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from .auth import requires
from .models import Health, Readiness
from .responses import READ_ERRORS


def register(app: FastAPI) -> None:
    @app.get("/health", response_model=Health, tags=["probes"], summary="the process answers (no token needed)")
    def health(request: Request) -> Health:
        return Health(status="ok", node=request.app.state.control.name)

    @app.get(
        "/ready",
        response_model=Readiness,
        tags=["probes"],
        responses={503: {"model": Readiness, "description": "not ready; `reasons` says why"}},
        summary="recovered, owns its home shard, ZooKeeper connected (no token needed)",
    )
    def ready(request: Request):
        control = request.app.state.control
        reasons = control.readiness()
        body = Readiness(ready=not reasons, node=control.name, reasons=reasons)
        return body if not reasons else JSONResponse(body.model_dump(), status_code=503)

    @app.get(
        "/metrics",
        tags=["probes"],
        dependencies=[Depends(requires("read"))],
        responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}, **READ_ERRORS},
        summary="Prometheus metrics of this node",
        response_class=Response,
    )
    async def metrics(request: Request) -> Response:
        node_metrics = request.app.state.metrics
        body = node_metrics.fresh()
        if body is None:
            # Rendered on a worker thread: it may walk the repositories' directories.
            body, _ = await run_in_threadpool(node_metrics.render)
        return Response(body, media_type=CONTENT_TYPE_LATEST)
