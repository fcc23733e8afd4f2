"""Decommissioning a node and connecting it again, as an operator asks it: what
`custody node decommission NAME` and `custody node connect NAME` do, and the admin
API's `POST /api/v1/cluster/nodes/{name}/decommission` and `.../connect` on any node.

    decommission_node(store, storage, "n3", requested_by="...")   # the record: n3 may not join
    connect_node(store, storage, "n3")                            # the record deleted: it may

Asking writes the node's record (`cluster.zk.decommissions`) and nothing else: a live
node that sees it leaves and stops (`cluster.failover.decommission`), and the leader
does the rest (`cluster.failover.kept`). So a node can be decommissioned while it is
down, the usual case (its machine is gone), or while it is up. A name no member, shard,
plan or kept directory names is refused (`NotFound`), and so is decommissioning the
only member (`Conflict`: nobody could take its shards). Asking twice answers what the
first asked.

Errors are those `NodeControl` answers with (404, 409, 503 in the admin API).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.decommission import Decommission, decommission_refusal, known_node, name_refusal, node_of
from ..errors import ClusterError, first_line
from ..zk.decommissions import DecommissionRecords
from .control_errors import Conflict, NotFound, Unavailable

if TYPE_CHECKING:
    from repositories.storage import Storage


def decommission_node(
    store, storage: Storage, node: str, *, requested_by: str, wall_clock: Callable[[], float] = time.time
) -> dict:
    """Mark `node` decommissioned; its answer (`answer`)."""
    with _answering(store, "decommissioning", node):
        _check_name(node)
        records = DecommissionRecords(store.client, store.layout)
        store.sync()
        existing = records.mark(node)
        if existing is None:
            live = store.members()
            if not _known(store, storage, node, live):
                raise NotFound(
                    f"no node {node} is known to cluster {store.layout.cluster}: no member, shard, plan or "
                    "directory kept on HDFS names it"
                )
            refusal = decommission_refusal(node, live.values(), records.names())
            if refusal is not None:
                raise Conflict(refusal)
            if records.create(Decommission(node, wall_clock(), requested_by)):
                # Written before the members are read: a node joining meanwhile sees it (its watch).
                store.sync()
                return answer(store, node, records.mark(node), "decommission")
            existing = records.mark(node)
        return answer(store, node, existing, "decommission", again=True)


def connect_node(store, storage: Storage, node: str) -> dict:
    """Delete `node`'s decommission record: it may join again (as a new node: what was
    kept for it may be gone). `Conflict` when it has none."""
    with _answering(store, "connecting", node):
        _check_name(node)
        records = DecommissionRecords(store.client, store.layout)
        if records.delete(node):
            return answer(store, node, None, "connect")
        if not _known(store, storage, node, store.members()):
            raise NotFound(f"no node {node} is known to cluster {store.layout.cluster}")
        raise Conflict(
            f"node {node} is not decommissioned: nothing to connect (an offloaded node is connected "
            "through its own admin API, POST /api/v1/node/connect, or `custody node connect --config`)"
        )


def check_may_connect(store, node: str) -> None:
    """`Conflict` when `node` is decommissioned: an offloaded node asked to connect
    (its own `POST /api/v1/node/connect`) would be refused at its start; the operator
    connects the name first (`connect_node`)."""
    with _answering(store, "connecting", node):
        record = DecommissionRecords(store.client, store.layout).mark(node)
    if record is not None:
        raise Conflict(
            f"node {node} is decommissioned: run `custody node connect {node} --config NODE.toml` (or POST "
            f"/api/v1/cluster/nodes/{node}/connect) first, then connect it"
        )


def answer(store, node: str, record: Decommission | None, action: str, *, again: bool = False) -> dict:
    """What the caller is told: the record as it is now, and the node's live incarnations."""
    live = sorted(name for name in store.live_incarnations() if node_of(name) == node)
    if record is None:
        state, detail = (
            "connectable",
            (
                f"node {node} may join cluster {store.layout.cluster} again; it starts as a "
                "new node, without what was kept for it if that was collected"
            ),
        )
    elif again:
        state, detail = record.state, f"node {node} was decommissioned already ({record.requested_by or 'asked'})"
    elif live:
        state, detail = (
            record.state,
            (
                f"{', '.join(live)} leaves the cluster now, as an offload does (its shards go "
                "to the others), and stops; the node does not join under this name again "
                "until connected"
            ),
        )
    else:
        state, detail = (
            record.state,
            (
                "it is not a member: the leader hands its sources' state over or drops it, "
                "and deletes what was kept for it; the node does not join under this name "
                "again until connected"
            ),
        )
    return {
        "node": node,
        "action": action,
        "state": state,
        "decommissioned": record is not None,
        "live": live,
        "requested_at": record.requested_at if record is not None else None,
        "finished_at": record.finished_at if record is not None else None,
        "notes": list(record.notes) if record is not None else [],
        "detail": detail,
    }


def _check_name(node: str) -> None:
    refusal = name_refusal(node)
    if refusal is not None:
        raise NotFound(refusal)


def _known(store, storage: Storage, node: str, live) -> bool:
    shards = store.shards.all()
    try:
        directories = [status.name for status in storage.list(store.layout.hdfs_shards)]
    except FileNotFoundError:
        directories = []
    return known_node(node, live, shards, (entry[0].owner for entry in shards.values()), store.plans.all(), directories)


class _answering:
    """ZooKeeper or HDFS trouble as `Unavailable`, naming what was being done."""

    def __init__(self, store, doing: str, node: str):
        self.store, self.doing, self.node = store, doing, node

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace) -> bool:
        if error is None or isinstance(error, (NotFound, Conflict, Unavailable)):
            return False
        if isinstance(error, (OSError, ClusterError)):  # ZooKeeper trouble is a `ZooKeeperError`
            raise Unavailable(
                f"{self.doing} {self.node} in cluster {self.store.layout.cluster}: ZooKeeper or HDFS "
                f"did not answer: {type(error).__name__}: {first_line(error, 200)}"
            ) from error
        return False
