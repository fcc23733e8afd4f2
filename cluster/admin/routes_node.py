"""`/api/v1/node/...`: what this node runs: its shards, queues, processors and the
sizes of its repositories."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request

from .auth import API, requires
from .models import NodeStatus, ProcessorFigures, QueueFigures
from .responses import READ_ERRORS
from .views import node_status, shard_processors, shard_queues


def register(app: FastAPI) -> None:
    read = [Depends(requires("read"))]

    @app.get(
        f"{API}/node",
        response_model=NodeStatus,
        tags=["node"],
        dependencies=read,
        responses=READ_ERRORS,
        summary="this node: state, incarnation, shards, repository sizes",
    )
    def get_node(request: Request) -> NodeStatus:
        return node_status(request.app.state.control)

    @app.get(
        f"{API}/node/queues",
        response_model=dict[str, list[QueueFigures]],
        tags=["node"],
        dependencies=read,
        responses=READ_ERRORS,
        summary="every queue of every shard this node runs: shard -> queues",
    )
    def get_queues(request: Request) -> dict[str, list[QueueFigures]]:
        return shard_queues(request.app.state.control)

    @app.get(
        f"{API}/node/processors",
        response_model=dict[str, list[ProcessorFigures]],
        tags=["node"],
        dependencies=read,
        responses=READ_ERRORS,
        summary="every processor of every shard this node runs: shard -> processors",
    )
    def get_processors(request: Request) -> dict[str, list[ProcessorFigures]]:
        return shard_processors(request.app.state.control)
