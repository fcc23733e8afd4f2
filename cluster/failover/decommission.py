"""A member's side of decommissioning (`cluster.core.decommission`): a node whose name
is decommissioned does not join, and a running one that is decommissioned leaves.

* Before it draws an incarnation, `ClusterMember.start` calls `refuse_if_decommissioned`:
  `NodeDecommissioned`, a `ConfigurationRefused`, so the node stops with one line that
  names `connect` instead of retrying (`cluster.node.lifecycle`). Nothing of it was
  written to ZooKeeper or HDFS.
* Once it has joined (its membership znode exists), it watches its record
  (`watch_decommission`). A record written after the check above is seen by that watch,
  whichever came first: the decommission writes its record before it reads the
  members, and the member creates its znode before the watch reads the record. On it,
  the member leaves as an offload does (its runtimes stop, its membership znode goes,
  the leader hands its shards to the others at once) and the node stops.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..core.decommission import Decommission
from ..errors import ConfigurationRefused
from ..zk.decommissions import DecommissionRecords


class NodeDecommissioned(ConfigurationRefused):
    """The node's name is decommissioned: it does not join the cluster under it until an
    operator runs `connect`."""

    def __init__(self, cluster: str, record: Decommission):
        self.cluster, self.record = cluster, record
        node = record.node
        when = (
            f" at {time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(record.requested_at))}"
            if record.requested_at > 0
            else ""
        )
        by = f" by {record.requested_by}" if record.requested_by else ""
        super().__init__(
            f"node {node} was decommissioned from cluster {cluster}{when}{by}: it does not join under that name "
            f"again. To bring it back, run `custody node connect {node} --config NODE.toml` (or POST "
            f"/api/v1/cluster/nodes/{node}/connect to any node's admin API), then start it"
        )


def records(store) -> DecommissionRecords:
    return DecommissionRecords(store.client, store.layout)


def refuse_if_decommissioned(store, node: str) -> None:
    """`NodeDecommissioned` when `node` has a decommission record."""
    record = records(store).mark(node)
    if record is not None:
        raise NodeDecommissioned(store.layout.cluster, record)


def watch_decommission(
    store, node: str, on_decommissioned: Callable[[NodeDecommissioned], None], stopped: Callable[[], bool]
) -> None:
    """Call `on_decommissioned` once, on kazoo's thread, when `node` gets a record (at
    once if it has one); the watch ends then, or at the first change after `stopped()`.
    `on_decommissioned` must return at once."""

    def changed(record: Decommission | None) -> bool | None:
        if stopped():
            return False
        if record is None:
            return None
        on_decommissioned(NodeDecommissioned(store.layout.cluster, record))
        return False

    records(store).watch(node, changed)
