"""`/api/v1/flow`: which flow version runs where, and rolling deploys
(`cluster.admin.deploy`), as ZooKeeper holds them: any node answers for the
cluster's deploy, whichever received it and whoever drives it."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request

from flow.definition import MAX_DOCUMENT_BYTES

from ..node.control import NotFound
from .auth import API, requires
from .deploy import deploy_answer, start_deploy
from .models import Deploy, DeployRequest, FlowVersions
from .responses import BODY_CONTROL_ERRORS, LOOKUP_ERRORS

# A flow file is at most MAX_DOCUMENT_BYTES; as JSON, with the quotes JSON puts around
# every key and text YAML leaves bare, and its escapes, twice that is ample, and still
# a body the node parses in well under a second.
DEPLOY_MAX_BODY_BYTES = 2 * MAX_DOCUMENT_BYTES


def register(app: FastAPI) -> None:
    read, admin = [Depends(requires("read"))], [Depends(requires("admin"))]

    @app.get(
        f"{API}/flow",
        response_model=FlowVersions,
        tags=["flow"],
        dependencies=read,
        responses=LOOKUP_ERRORS,
        summary="the cluster's flow version, this node's, each shard's, and the last rolling deploy",
    )
    def get_flow(request: Request) -> FlowVersions:
        control = request.app.state.control
        status = control.cluster_status()
        flow = control.identity().get("flow_version")
        deployed = control.cluster_flow_version()
        roll = control.current_roll()
        return FlowVersions(
            cluster_version=deployed,
            node_version=flow,
            shards={name: shard.flow for name, shard in sorted(status.shards.items())},
            deploy=Deploy(**deploy_answer(roll[0])) if roll is not None else None,
        )

    @app.post(
        f"{API}/flow/deploy",
        response_model=Deploy,
        status_code=202,
        tags=["flow"],
        dependencies=admin,
        responses=BODY_CONTROL_ERRORS,
        max_body_size=DEPLOY_MAX_BODY_BYTES,
        summary="roll a new flow version across the cluster, node by node (offload, connect), driven by the leader",
    )
    def deploy(request: Request, body: DeployRequest) -> Deploy:
        return Deploy(**deploy_answer(start_deploy(request.app.state.control, body.flow)))

    @app.get(
        f"{API}/flow/deploy",
        response_model=Deploy,
        tags=["flow"],
        dependencies=read,
        responses=LOOKUP_ERRORS,
        summary="the cluster's last deploy, and how far it got (whichever node received it)",
    )
    def deploy_status(request: Request) -> Deploy:
        roll = request.app.state.control.current_roll()
        if roll is None:
            raise NotFound("no rolling deploy was ever started in this cluster")
        return Deploy(**deploy_answer(roll[0]))
