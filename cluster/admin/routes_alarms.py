"""`/api/v1/node/alarms`: what on this node needs an operator (swap files that cannot be
read, set aside and in quarantine: `flow.unreadable_swap`), and `/retry` to read them
again at once after a repair instead of after their backoff."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request

from .auth import API, requires
from .models_alarms import Alarm, AlarmRetry
from .responses import CONTROL_ERRORS, READ_ERRORS


def register(app: FastAPI) -> None:
    read = [Depends(requires("read"))]
    admin = [Depends(requires("admin"))]

    @app.get(
        f"{API}/node/alarms",
        response_model=list[Alarm],
        tags=["node"],
        dependencies=read,
        responses=READ_ERRORS,
        summary="what needs an operator on this node, oldest first",
    )
    def get_alarms(request: Request) -> list[Alarm]:
        return [Alarm(**alarm) for alarm in request.app.state.control.alarms()]

    @app.post(
        f"{API}/node/alarms/retry",
        response_model=AlarmRetry,
        tags=["control"],
        dependencies=admin,
        responses=CONTROL_ERRORS,
        summary="read every swap file in alarm again now (after a repair)",
    )
    def retry_alarms(request: Request) -> AlarmRetry:
        control = request.app.state.control
        return AlarmRetry(node=control.name, retried=control.retry_alarms())
