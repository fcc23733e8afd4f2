"""A `ClusterStore` with no ZooKeeper behind it: the product's own store and registries
over a client of an in-memory ZooKeeper (`zookeeper.FakeZooKeeper`).

The fake stands where ZooKeeper stands, not where the store does: the registries'
compare-and-set, the divvy transaction and kazoo's errors translated by `cluster.zk`
all run as they do in production, and none of their code is copied here to drift.

    zookeeper = FakeZooKeeper()
    store = fake_store(zookeeper)        # the leader's, say
    other = fake_store(zookeeper)        # another member's, on a session of its own
    other.client.expire()                # that member dies
    dead, victim = join(zookeeper, "n1") # a member's znodes, without the member
"""

from __future__ import annotations

from cluster.core.heartbeat import Heartbeat
from cluster.core.layout import ClusterLayout
from cluster.zk.store import ClusterStore

from .zookeeper import FakeZooKeeper

GIB = 1 << 30


def fake_store(zookeeper: FakeZooKeeper, cluster: str = "c1", *, wall_clock=lambda: 1000.0) -> ClusterStore:
    """A store on a new session of `zookeeper`, its cluster's folders made."""
    store = ClusterStore(zookeeper.session(), ClusterLayout(cluster), wall_clock=wall_clock)
    store.ensure_paths()
    return store


def join(zookeeper: FakeZooKeeper, node: str, *, weight: float = 1.0) -> tuple[ClusterStore, str]:
    """A member's znodes as `ClusterMember.start` makes them, with no member behind
    them: an incarnation, its membership znode (ephemeral, on a session of its own),
    then its home shard. Returns its store and its incarnation id."""
    store = fake_store(zookeeper)
    incarnation = store.new_incarnation(node)
    store.membership(
        Heartbeat(node, incarnation.id, incarnation.epoch, free_disk=100 * GIB, max_threads=4, capacity_weight=weight)
    ).join()
    store.shards.create_home_shard(incarnation.id, incarnation.id, incarnation.epoch)
    return store, incarnation.id
