"""`read_cluster_view(store)`: one snapshot of a cluster's znodes, for
`cluster.core.validation.validate_cluster` to check.

It reads through the `ClusterStore` facade and its registries only, each child listing
pipelined (`znodes.read_children`): about one round trip per folder, a few milliseconds
for a test's or a drill's cluster. The order is the one the rules rely on (see
`validation`): shards, plans, decommissions and the roll, then the members, then the
election. One client's reads see ZooKeeper's states in order, so each read is of a
state no older than the one before.
"""

from __future__ import annotations

from ..core.validation import ClusterView
from ..errors import UnreadableZnode
from .decommissions import DecommissionRecords


def read_cluster_view(store) -> ClusterView:
    shards = store.shards.all()
    plans = store.plans.all()
    unreadable = {
        **{f"shard {name}": why for name, why in store.shards.znodes.unreadable.items()},
        **{f"plan {name}": why for name, why in store.plans.znodes.unreadable.items()},
    }
    decommissions = DecommissionRecords(store.client, store.layout).all()
    try:
        roll = store.operator.roll()
    except UnreadableZnode as error:
        roll = None
        unreadable["deploy"] = str(error)
    members = store.members()
    contenders = store.contenders()
    return ClusterView(
        store.layout.cluster,
        shards={name: value for name, (value, _version) in shards.items()},
        plans={name: value for name, (value, _version) in plans.items()},
        decommissions={node: record for node, (record, _version) in decommissions.items()},
        roll=roll[0] if roll is not None else None,
        members=members,
        contenders=tuple(contenders),
        unreadable=unreadable,
    )
