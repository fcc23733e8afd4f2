"""The cluster's flow in ZooKeeper (`ClusterLayout.flow`): the flow every node runs
from its next incarnation on, written by a rolling deploy (`cluster.admin.deploy`).

It is the document as deployed (`core.flows.FlowSnapshot`, canonical JSON), a few
kilobytes, far below ZooKeeper's 1 MB znode limit. A cluster that was never deployed
to has none: each node runs its own flow file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from ..core.flows import FlowSnapshot
from ..core.layout import ClusterLayout
from .kazoo_errors import translated

if TYPE_CHECKING:
    from kazoo.client import KazooClient


@translated
def read_cluster_flow(client: KazooClient, layout: ClusterLayout) -> FlowSnapshot | None:
    try:
        data, _stat = client.get(layout.flow)
    except NoNodeError:
        return None
    return FlowSnapshot.decode(data) if data else None


@translated
def write_cluster_flow(client: KazooClient, layout: ClusterLayout, snapshot: FlowSnapshot) -> None:
    """Set the cluster's flow (last writer wins: deploys are an operator's act)."""
    data = snapshot.encoded
    try:
        client.set(layout.flow, data)
    except NoNodeError:
        client.create(layout.flow, data, makepath=True)
