"""`ClusterStore`: one cluster's ZooKeeper state, behind one facade.

In the spirit of kazoo's client (which binds its recipes to itself), the store binds
the cluster's znode registries to one client and one `ClusterLayout`, so that the
leader, a member, the collector, the CLI and the admin API take a store, not a
client and a layout each:

    store = ClusterStore(client, ClusterLayout("c1"))
    store.shards.claim(shard, incarnation, epoch)     # `shards.ShardRegistry`
    store.plans.open_plans()                          # `plans.PlanStore`
    store.members()                                   # live incarnations' heartbeats
    store.new_incarnation("n1")                       # draws the next epoch
    store.status()                                    # read-only snapshot (`status`)
    store.cluster_flow()                              # the deployed flow (`flows`)
    store.operator.roll()                             # run states, deploy (`operator`)

Watches, session listeners and the leader election go through it too, and every
method raises kazoo's exceptions as `cluster.errors.ZooKeeperError`s
(`kazoo_errors`), so kazoo stays inside `cluster.zk`. The client itself is made by
`cluster.zk.client` for `cluster.clients.ClientFactory`, which carries the node's
ZooKeeper settings to every client the product makes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState

from ..core.flows import FlowSnapshot
from ..core.heartbeat import Heartbeat
from ..core.incarnation import Incarnation
from ..core.layout import ROOT, ClusterLayout
from ..core.ownership import ShardOwnership
from ..errors import ZooKeeperAccessRefused
from .acl import check_root_acl, shared_parent_acl
from .client import ensure_chroot
from .flows import read_cluster_flow, write_cluster_flow
from .kafka_holds import KafkaHolds
from .kazoo_errors import translates_kazoo
from .membership import Membership, new_incarnation, read_incarnation_counter, read_members, remove_gone
from .operator import OperatorStore
from .plans import PlanStore
from .session import GuardCallbacks, SessionGuard
from .shards import ShardRegistry
from .status import ClusterStatus, read_status

if TYPE_CHECKING:
    from kazoo.client import KazooClient


@translates_kazoo
class LeaderElection:
    """kazoo's `Election` on `leader/`, raising `ZooKeeperError`s: `run(func)` blocks
    until this contender leads, then calls `func`; `cancel()` leaves the line."""

    def __init__(self, client: KazooClient, path: str, identifier: str):
        self._election = client.Election(path, identifier=identifier)

    def run(self, func: Callable[..., object], *args, **kwargs):
        return self._election.run(func, *args, **kwargs)

    def cancel(self) -> None:
        self._election.cancel()


@translates_kazoo
class ClusterStore:
    def __init__(self, client: KazooClient, layout: ClusterLayout, *, wall_clock: Callable[[], float] = time.time):
        self.client, self.layout = client, layout
        self.shards = ShardRegistry(client, layout, wall_clock=wall_clock)
        self.plans = PlanStore(client, layout)
        self.operator = OperatorStore(client, layout)

    def kafka_holds(self, processor_id: str) -> KafkaHolds:
        """The holds of a ConsumeKafka processor's partitions (`cluster.core.kafka_holds`)."""
        return KafkaHolds(self.client, self.layout, processor_id)

    # -- the cluster's folders, members and incarnations ----------------------------------
    def ensure_paths(self) -> None:
        """The persistent parents every member and leader creates at start. With
        credentials (the client's default ACL), the shared parent is made open to
        creating only, and the cluster's root must carry the identity's ACL alone
        (`cluster.zk.acl`); without, a protected cluster is refused by name."""
        identity = getattr(self.client, "default_acl", None)
        try:
            ensure_chroot(self.client, shared_parent_acl(identity) if identity else None)
            if identity and not self.client.exists(ROOT):
                try:
                    self.client.create(ROOT, b"", acl=shared_parent_acl(identity))
                except NodeExistsError:
                    pass
            for path in self.layout.zookeeper_paths():
                self.client.ensure_path(path)
            # `exists` needs no right at all: only a read tells whether we may use the cluster.
            self.client.get_children(self.layout.root)
        except NoAuthError:
            raise ZooKeeperAccessRefused(
                f"ZooKeeper refuses access to {self.layout.root}: the cluster is protected by credentials; give "
                "this node the cluster's [zookeeper] credentials_file"
            ) from None
        if identity:
            check_root_acl(
                self.client,
                self.layout.root,
                identity,
                secure_command=f"custody cluster secure --cluster {self.layout.cluster} --zk HOSTS "
                "--credentials-file FILE",
            )

    def new_incarnation(self, node: str) -> Incarnation:
        return new_incarnation(self.client, self.layout, node)

    def incarnation_counter(self) -> int:
        return read_incarnation_counter(self.client, self.layout)

    def cluster_flow(self) -> FlowSnapshot | None:
        """The flow deployed to the cluster (None: each node runs its own file)."""
        return read_cluster_flow(self.client, self.layout)

    def set_cluster_flow(self, snapshot: FlowSnapshot) -> None:
        write_cluster_flow(self.client, self.layout, snapshot)

    def members(self) -> dict[str, Heartbeat]:
        """Live incarnations and their current heartbeats."""
        return read_members(self.client, self.layout)

    def remove_gone(self, incarnation: str) -> list[str]:
        """An incarnation proven gone loses its znodes now, not at its session's expiry."""
        return remove_gone(self.client, self.layout, incarnation)

    def live_incarnations(self) -> frozenset[str]:
        """Live incarnations, by name only (one round trip)."""
        return frozenset(self.client.get_children(self.layout.nodes))

    def is_member(self, incarnation: str) -> bool:
        return self.client.exists(self.layout.node(incarnation)) is not None

    def membership(self, first: Heartbeat, **options) -> Membership:
        """This process's membership znode and heartbeat (see `Membership`)."""
        return Membership(self.client, self.layout, first, **options)

    def session_guard(self, incarnation: str, timeout: float, callbacks: GuardCallbacks, **options) -> SessionGuard:
        """The guard of this client's session, probing the incarnation's own znode."""
        return SessionGuard(self.client, self.layout.node(incarnation), timeout, callbacks, **options)

    def connected(self) -> bool:
        """Whether the client is connected now (its session may still be lost later)."""
        return self.client.connected

    def sync(self) -> None:
        """Make the server this client reads from catch up with the quorum: reads
        after it see every write that completed before it."""
        self.client.sync(self.layout.root)

    # -- leadership -------------------------------------------------------------------------
    def election(self, identifier: str) -> LeaderElection:
        """kazoo's `Election` on `leader/` (never an election of our own)."""
        return LeaderElection(self.client, self.layout.leader, identifier)

    def contenders(self) -> list[str]:
        """The leader first, then the others in line; empty when nobody campaigns."""
        return self._contenders()

    def contenders_retried(self) -> list[str]:
        """`contenders()`, asked again while the connection is lost (kazoo's retry: with
        backoff, for as long as it takes), for a drill that watches a cluster's faults."""
        return self.client.retry(self._contenders)

    def _contenders(self) -> list[str]:
        try:
            return self.client.Election(self.layout.leader).contenders()
        except NoNodeError:
            return []

    # -- watches and the session ------------------------------------------------------------
    def watch_members(self, on_change: Callable[[list[str]], bool | None]) -> None:
        """kazoo ChildrenWatch on `nodes/`: `on_change(children)`; returning False ends it."""
        self.client.ChildrenWatch(self.layout.nodes, on_change)

    def watch_shards(self, on_change: Callable[[list[str]], bool | None]) -> None:
        self.client.ChildrenWatch(self.layout.shards, on_change)

    def watch_shard(self, shard: str, on_change: Callable[[ShardOwnership | None], bool | None]) -> None:
        """kazoo DataWatch on `shards/<shard>`: `on_change(value or None when gone)`.
        A value that cannot be parsed is skipped. Returning False ends the watch."""

        def watch(data, stat, event=None):
            if data is None:
                return on_change(None)
            try:
                value = ShardOwnership.from_json(data)
            except (ValueError, KeyError):
                return None
            return on_change(value)

        self.client.DataWatch(self.layout.shard(shard), watch)

    def on_session_lost(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (on kazoo's thread) when the session is LOST; returns the
        function that removes the listener."""

        def listener(state):
            if state == KazooState.LOST:
                callback()
                return True
            return False

        self.client.add_listener(listener)
        return lambda: self.client.remove_listener(listener)

    # -- deletion and status -------------------------------------------------------------------
    def delete_if_unchanged(self, path: str, version: int) -> bool:
        """Delete a znode still at `version`; False when it is gone or changed since."""
        try:
            self.client.delete(path, version=version)
        except (NoNodeError, BadVersionError):
            return False
        return True

    def delete(self, path: str, *, recursive: bool = False) -> None:
        """Delete a znode (with everything under it, when `recursive`), whatever its
        version: `ZnodeMissing`, `ZnodeNotEmpty` or `ZnodeAccessDenied` when it cannot."""
        self.client.delete(path, recursive=recursive)

    def status(self) -> ClusterStatus:
        return read_status(self)
