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
node that is not decommissioned).

`GET /api/v1/cluster/processors` and `GET /api/v1/cluster/queues` (role read): the
whole cluster's, after NiFi's request replication: the node asked asks every live
member's `/api/v1/node/...` with the caller's own token, in parallel, 2 s each, and
merges their shard maps (`fan_out`); a member that gives no answer is reported in
`members`, not fatal. On a node run with worker processes (`custody run --workers N`) its
workers are the members, and worker I's shards are named `wI.<shard>` (`worker_siblings`)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from fastapi import Depends, FastAPI, Path, Request
from pydantic import BaseModel, TypeAdapter

from .auth import API, requires
from .fan_out import Asked, ShardItems, ask_members, fetch_json, merge
from .models import ClusterView, NodeDecommission, ProcessorFigures, QueueFigures
from .models_cluster_wide import ClusterProcessors, ClusterQueues
from .responses import CONTROL_ERRORS, LOOKUP_ERRORS
from .views import cluster_view, shard_processors, shard_queues
from .worker_siblings import as_worker_shards

_PROCESSORS = TypeAdapter(dict[str, list[ProcessorFigures]])
_QUEUES = TypeAdapter(dict[str, list[QueueFigures]])


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

    @app.get(
        f"{API}/cluster/processors",
        response_model=ClusterProcessors,
        tags=["cluster"],
        dependencies=read,
        responses=LOOKUP_ERRORS,
        summary="every processor of every shard of the cluster: each live member's /api/v1/node/processors "
        "(asked with the caller's token), merged by shard; a member that gave no answer is reported",
    )
    def get_cluster_processors(request: Request) -> ClusterProcessors:
        control = request.app.state.control
        return ClusterProcessors(
            **_replicated(request, "/node/processors", lambda: shard_processors(control), _PROCESSORS)
        )

    @app.get(
        f"{API}/cluster/queues",
        response_model=ClusterQueues,
        tags=["cluster"],
        dependencies=read,
        responses=LOOKUP_ERRORS,
        summary="every queue of every shard of the cluster: each live member's /api/v1/node/queues "
        "(asked with the caller's token), merged by shard; a member that gave no answer is reported",
    )
    def get_cluster_queues(request: Request) -> ClusterQueues:
        control = request.app.state.control
        return ClusterQueues(**_replicated(request, "/node/queues", lambda: shard_queues(control), _QUEUES))

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


def _replicated(request: Request, path: str, here: Callable[[], ShardItems], items: TypeAdapter) -> dict:
    """NiFi's request replication of GET `path` to every live member (`fan_out`); the
    node asked answers for itself through `here`. `NotFound` on a node in no cluster."""
    control = request.app.state.control
    siblings = request.app.state.workers
    if siblings is not None:  # a node of workers: its workers are the members (`worker_siblings`)
        members, owners, own = siblings.members(), {}, siblings.own
    else:
        status = control.cluster_status()
        members = [Asked(beat.node, incarnation, beat.admin) for incarnation, beat in sorted(status.members.items())]
        owners = {shard: ownership.owner for shard, ownership in status.shards.items()}
        own = control.identity().get("incarnation")

    def read(document: dict) -> ShardItems:
        shards: dict[str, list[BaseModel]] = items.validate_python(document)
        return shards

    answers = ask_members(
        members,
        API + path,
        request.headers.get("authorization"),
        own=own,
        answer_here=here,
        read=read,
        fetch=functools.partial(fetch_json, context=request.app.state.member_trust),
    )
    if siblings is not None:
        answers = as_worker_shards(answers)
    return merge(answers, owners)
