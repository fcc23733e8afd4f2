"""`/api/v1/cluster/...`: the cluster as ZooKeeper holds it. Any node answers (a
standalone node answers 404: it is in no cluster)."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request

from .auth import API, requires
from .models import ClusterView
from .responses import LOOKUP_ERRORS
from .views import cluster_view


def register(app: FastAPI) -> None:
    read = [Depends(requires("read"))]

    @app.get(f"{API}/cluster", response_model=ClusterView, tags=["cluster"], dependencies=read,
             responses=LOOKUP_ERRORS,
             summary="members, the leader, shards and their owners, plans, recent failovers")
    def get_cluster(request: Request) -> ClusterView:
        return cluster_view(request.app.state.control.cluster_status())
