"""`/api/v1/node/flow/graph`: the flow this node runs, laid out for the status page's
drawing (`cluster.admin.flow_graph`). Its figures come from `/api/v1/node/processors`
and `/api/v1/node/queues`, keyed by the same processor and connection ids."""

from __future__ import annotations

from typing import Any, cast

from fastapi import Depends, FastAPI, Request

from .auth import API, requires
from .flow_graph import FlowGraphs
from .models import Problem
from .models_flow_graph import FlowGraph
from .responses import READ_ERRORS

# responses.py types its tables loosely; FastAPI wants these keys and values.
ERRORS = cast(
    "dict[int | str, dict[str, Any]]",
    {**READ_ERRORS, 404: {"model": Problem, "description": "the node runs no shard yet: it has no flow to draw"}},
)


def register(app: FastAPI) -> None:
    graphs = FlowGraphs()

    @app.get(
        f"{API}/node/flow/graph",
        response_model=FlowGraph,
        tags=["node"],
        dependencies=[Depends(requires("read"))],
        responses=ERRORS,
        summary="the flow this node runs as a layered graph: processors and ports placed, connections routed",
    )
    def get_flow_graph(request: Request) -> FlowGraph:
        return graphs.current(request.app.state.control)
