"""A read-only snapshot of a cluster as ZooKeeper holds it: members, leader, shards,
plans. Used by `custody cluster status`, and meant for the admin API."""

from __future__ import annotations

from dataclasses import dataclass, field

from kazoo.exceptions import NoNodeError

from ..core.decommission import Decommission
from ..core.heartbeat import Heartbeat
from ..core.ownership import ShardOwnership
from ..core.plans import FailoverPlan, pending_moves
from .acl import acl_state
from .decommissions import DecommissionRecords
from .kazoo_errors import translated


@dataclass
class ClusterStatus:
    cluster: str
    members: dict[str, Heartbeat]
    leader: str | None
    contenders: list[str]
    shards: dict[str, ShardOwnership]
    plans: dict[str, FailoverPlan]
    # "open" (anyone who reaches ZooKeeper may change the cluster: no credentials) or
    # "secured", from the ACL of the cluster's root (`cluster.zk.acl`); None: no root yet.
    zookeeper_acl: str | None = None
    # Nodes an operator decommissioned (`core.decommission`): they may not join until connected.
    decommissioned: dict[str, Decommission] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "cluster": self.cluster,
            "zookeeper_acl": self.zookeeper_acl,
            "leader": self.leader,
            "contenders": self.contenders,
            "members": {
                name: {
                    "node": b.node,
                    "epoch": b.epoch,
                    "admin": b.admin,
                    "sequence": b.sequence,
                    "queued": b.queued_count,
                    "queued_bytes": b.queued_bytes,
                    "active_threads": b.active_threads,
                    "cpu": round(b.cpu, 3),
                    "free_disk": b.free_disk,
                    "capacity_weight": b.capacity_weight,
                    "owned_shards": list(b.owned_shards),
                }
                for name, b in sorted(self.members.items())
            },
            "shards": {
                name: {
                    "owner": s.owner,
                    "epoch": s.epoch,
                    "state": s.state.value,
                    "flow": s.flow,
                    "children": list(s.children),
                    "source": vars(s.source).copy() if s.source else None,
                    "seeded": s.seeded,
                    "history": [
                        {"epoch": h.epoch, "owner": h.owner, "state": h.state.value, "at": h.at, "reason": h.reason}
                        for h in s.history
                    ],
                }
                for name, s in sorted(self.shards.items())
            },
            "decommissioned": {
                name: {
                    "state": d.state,
                    "requested_at": d.requested_at,
                    "requested_by": d.requested_by,
                    "finished_at": d.finished_at,
                    "notes": list(d.notes),
                }
                for name, d in sorted(self.decommissioned.items())
            },
            "plans": {
                name: {
                    "dead": p.dead,
                    "status": p.status,
                    "policy": p.policy,
                    "leader": p.leader,
                    "created_at": p.created_at,
                    "revision": p.revision,
                    "moves": [
                        {"shard": m.shard, "from_epoch": m.from_epoch, "targets": list(m.targets)} for m in p.moves
                    ],
                    "pending": [m.shard for m in pending_moves(p, self.shards)],
                    "notes": list(p.notes),
                }
                for name, p in sorted(self.plans.items())
            },
        }


@translated
def read_status(store) -> ClusterStatus:
    """A `ClusterStatus` read through a `ClusterStore`, changing nothing."""
    contenders = store.contenders()
    shards = {name: entry[0] for name, entry in store.shards.all().items()}
    plans = {name: entry[0] for name, entry in store.plans.all().items()}
    try:
        acl = acl_state(store.client.get_acls(store.layout.root)[0])
    except NoNodeError:
        acl = None
    decommissioned = {name: entry[0] for name, entry in DecommissionRecords(store.client, store.layout).all().items()}
    return ClusterStatus(
        store.layout.cluster,
        store.members(),
        contenders[0] if contenders else None,
        contenders,
        shards,
        plans,
        acl,
        decommissioned,
    )
