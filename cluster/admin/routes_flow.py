"""`/api/v1/flow`: which flow version runs where, and rolling deploys
(`cluster.admin.deploy`)."""

from __future__ import annotations

import dataclasses

from fastapi import Depends, FastAPI, Request

from flow.definition import MAX_DOCUMENT_BYTES

from ..node.control import Conflict, NotFound
from .auth import API, requires
from .deploy import RollingDeploy
from .models import Deploy, DeployRequest, FlowVersions
from .responses import BODY_CONTROL_ERRORS, LOOKUP_ERRORS

# A flow file is at most MAX_DOCUMENT_BYTES; as JSON, with the quotes JSON puts around
# every key and text YAML leaves bare, and its escapes, twice that is ample, and still
# a body the node parses in well under a second.
DEPLOY_MAX_BODY_BYTES = 2 * MAX_DOCUMENT_BYTES


def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def register(app: FastAPI) -> None:
    read, admin = [Depends(requires("read"))], [Depends(requires("admin"))]
    app.state.deploy = None

    @app.get(f"{API}/flow", response_model=FlowVersions, tags=["flow"], dependencies=read,
             responses=LOOKUP_ERRORS, summary="the cluster's flow version, this node's, and each shard's")
    def get_flow(request: Request) -> FlowVersions:
        control = request.app.state.control
        status = control.cluster_status()
        flow = control.identity().get("flow_version")
        deployed = control.cluster_flow_version()
        return FlowVersions(cluster_version=deployed, node_version=flow,
                            shards={name: shard.flow for name, shard in sorted(status.shards.items())})

    @app.post(f"{API}/flow/deploy", response_model=Deploy, status_code=202, tags=["flow"], dependencies=admin,
              responses=BODY_CONTROL_ERRORS, max_body_size=DEPLOY_MAX_BODY_BYTES,
              summary="roll a new flow version across the cluster, node by node (offload, connect)")
    def deploy(request: Request, body: DeployRequest) -> Deploy:
        current = request.app.state.deploy
        if current is not None and current.status().state == "running":
            raise Conflict(f"a deploy of flow version {current.status().version} is running; wait for it "
                           f"(GET {API}/flow/deploy)")
        rolling = RollingDeploy(request.app.state.control, body.flow, token=bearer_token(request)).start()
        request.app.state.deploy = rolling
        return Deploy(**dataclasses.asdict(rolling.status()))

    @app.get(f"{API}/flow/deploy", response_model=Deploy, tags=["flow"], dependencies=read,
             responses=LOOKUP_ERRORS, summary="the last deploy this node ran, and how far it got")
    def deploy_status(request: Request) -> Deploy:
        current = request.app.state.deploy
        if current is None:
            raise NotFound("this node has run no deploy since it started")
        return Deploy(**dataclasses.asdict(current.status()))
