"""`/api/v1/cluster/...`: the cluster as ZooKeeper holds it, and its nodes'
decommissioning. Any node answers (a standalone node answers 404: it is in no
cluster).

`POST /api/v1/cluster/nodes/{name}/decommission` (role admin): node `name` is gone for
good, as NiFi's "delete node" and HBase's decommissioned RegionServer are. Up, it
leaves at once (its shards go through the failover protocol, as by an offload) and
stops; down, its shards were moved already. The leader then hands what its sources
took to a survivor, or drops it with a warning, and deletes what was kept for it; it
does not join under that name until `POST .../connect`. 404 for a name the cluster
does not know (or no node could have), 409 for the only member (and for connecting a
node that is not decommissioned)."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Path, Request

from .auth import API, requires
from .models import ClusterView, NodeDecommission
from .responses import CONTROL_ERRORS, LOOKUP_ERRORS
from .views import cluster_view


def register(app: FastAPI) -> None:
    read = [Depends(requires("read"))]
    admin = [Depends(requires("admin"))]
    node_name = Path(description="the node's name (as in its NODE.toml), not an incarnation's", examples=["n3"])

    @app.get(
        f"{API}/cluster",
        response_model=ClusterView,
        tags=["cluster"],
        dependencies=read,
        responses=LOOKUP_ERRORS,
        summary="members, the leader, shards and their owners, plans, recent failovers, decommissioned nodes",
    )
    def get_cluster(request: Request) -> ClusterView:
        return cluster_view(request.app.state.control.cluster_status())

    @app.post(
        f"{API}/cluster/nodes/{{name}}/decommission",
        response_model=NodeDecommission,
        tags=["control"],
        dependencies=admin,
        responses=CONTROL_ERRORS,
        summary="node NAME is gone for good: it leaves if up, its shards and kept state are handed over, and "
        "it does not join again until connected",
    )
    def decommission(request: Request, name: str = node_name) -> NodeDecommission:
        return NodeDecommission(**request.app.state.control.decommission_node(name))

    @app.post(
        f"{API}/cluster/nodes/{{name}}/connect",
        response_model=NodeDecommission,
        tags=["control"],
        dependencies=admin,
        responses=CONTROL_ERRORS,
        summary="let decommissioned node NAME join the cluster again",
    )
    def connect(request: Request, name: str = node_name) -> NodeDecommission:
        return NodeDecommission(**request.app.state.control.connect_node(name))
