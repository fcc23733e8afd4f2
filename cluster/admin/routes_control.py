"""`/api/v1/node/offload` and `/api/v1/node/connect`: NiFi's offload, with Custody's
guarantee (every shard moves through the failover protocol: fenced, at a new epoch,
exactly once, without waiting for a session timeout), and joining again."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Query, Request

from .auth import API, requires
from .models import ControlResult
from .responses import CONTROL_ERRORS, PARAMETER_CONTROL_ERRORS

MAX_WAIT_S = 300.0


def register(app: FastAPI) -> None:
    admin = [Depends(requires("admin"))]

    @app.post(
        f"{API}/node/offload",
        response_model=ControlResult,
        tags=["control"],
        dependencies=admin,
        responses=PARAMETER_CONTROL_ERRORS,
        summary="hand every shard of this node to the others, and stay up owning nothing",
    )
    def offload(
        request: Request,
        wait_s: float = Query(0.0, ge=0.0, le=MAX_WAIT_S, description="wait this long for the node to own nothing"),
    ):
        control = request.app.state.control
        state = control.offload(wait_s=wait_s)
        return ControlResult(
            node=control.name,
            action="offload",
            state=state,
            detail="owns nothing" if state == "OFFLOADED" else "its shards are being adopted",
        )

    @app.post(
        f"{API}/node/connect",
        response_model=ControlResult,
        tags=["control"],
        dependencies=admin,
        responses=CONTROL_ERRORS,
        summary="join the cluster again after an offload, as a new incarnation",
    )
    def connect(request: Request):
        control = request.app.state.control
        return ControlResult(
            node=control.name,
            action="connect",
            state=control.connect(),
            detail="a new incarnation joins with a new home shard",
        )
