"""Collecting what nothing can reference any more: dead incarnations' content
containers on HDFS, and shard and plan znodes finished long ago. The leader runs it
(`leader.Leader`, every `collect_interval` seconds while it leads and may act).

One round (`ContentCollector.collect`) reads a `CollectionView`, decides with the
pure `plan_collection`, then deletes. Nothing here raises: a round that cannot read
its view deletes nothing, a deletion that fails is logged as one line, and the next
round decides again from scratch.

Containers. Incarnation X's content is the directory `<root>/<cluster>/content/X/`
(`hdfs_content_root(layout.hdfs_cluster, X)`, as `node_content.open_node_content`
writes it; it holds the container `X/<section>/...`). It is deleted when all of
these hold:

* its name is an incarnation id (`<node>-<epoch>`): a name we cannot place is
  never ours to delete;
* `garbage_containers` says so: X is not a live member, and every shard that could
  reference X's claims (X among its owners, or a divvy ancestor's owners) is RETIRED;
* no shard that is not RETIRED (nor a divvy ancestor of one) has a full history
  (`HISTORY_LIMIT` entries): it may have forgotten owners, and then nothing is
  collected until it retires;
* X's epoch is *lower* than the incarnation counter read in the same round (see
  the race below): the newest incarnation drawn is never collected, nor is a
  container whose epoch this cluster's counter has not reached (content left by an
  earlier ZooKeeper state, or a view that lags).

The race this prevents. An incarnation (1) draws its epoch from the counter,
(2) creates its membership znode `nodes/X`, (3) creates its home shard znode
`shards/X`, (4) creates its content container on HDFS (`node.ClusteredNode`, from
the first runtime, after `ClusterMember.start` has done 1-3). A collector that
read the members first and listed HDFS afterwards could see the container of an
X that joined in between, find X neither live nor pinned, and delete the content
of a live node. So a round reads in the opposite order:

    list containers on HDFS  ->  sync ZooKeeper  ->  counter, shards  ->  members

A container in the listing was created before the listing, so X's steps 1-3 were
done before it too. `client.sync` makes the ZooKeeper server this client reads
from catch up with the quorum, so the reads after it see steps 1-3 (ZooKeeper
reads are otherwise only sequentially consistent and may lag real time). Then X is
either in the member listing (live: kept) or dead, and a dead incarnation never
comes back (`membership`); its home shard, seen in the shard listing, pins X until
an adopter drained and retired it. The counter rule is belt and braces for a view
that still lags: the incarnation that drew the newest epoch may not have its
membership znode in a lagging view, so it is kept whatever else the view says.

Being garbage is final: a RETIRED shard never changes again, and a new shard only
inherits the owners of a non-retired one (a divvy child, created in the same
transaction that sets its parent SPLIT), or is the home shard of a new incarnation.
So a container found garbage stays garbage, and a round still running on a leader
that has just been deposed deletes nothing another leader needs.

Retired shard znodes. Shard S's znode is deleted when S is RETIRED, its RETIRED
history entry is older than `retention` (wall clock, at the leader; default 10
minutes, so a late reader still sees "retired" rather than "gone"), and no
non-retired shard needs it: not as a divvy ancestor (a child's pins go through its
parent's owners, transitively) and not as a child of a SPLIT parent that still
waits for every child to be seeded (`reassignment.RetireSplitParent`). The delete
is versioned, so a znode that changed since it was read is left alone.

Done plan znodes. Plan P's znode is deleted when P is done and was marked done
(`finished_at`, wall clock at the leader) at least `retention` ago. A done plan is
never read again by a decision (`reassignment.decide` sees open plans only), and
its dead incarnation never owns a shard again, so no leader needs it; the
retention is for operators (`custody status`). Without this every plan ever
written stays under `plans/`, and the leader, which reads them all before each
decision, grew slower with every failover: 0.5 s at 800 plans. The delete is
versioned.

Lock plan: none; one round runs at a time, on the leader's collector thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kazoo.exceptions import BadVersionError, NoNodeError

from replication.hdfs_content import hdfs_content_root

from .incarnation import Incarnation
from .node_content import garbage_containers
from .ownership import HISTORY_LIMIT, ShardOwnership, ShardState
from .plans import FailoverPlan, PlanStore
from .shard_registry import ShardRegistry

log = logging.getLogger(__name__)

DEFAULT_RETENTION = 600.0  # seconds a RETIRED shard znode, or a done plan znode, is kept
DEFAULT_INTERVAL = 30.0    # seconds between two rounds on the leader


def container_directory(layout, incarnation: str) -> str:
    """Everything incarnation `incarnation` wrote to HDFS content (`node_content`)."""
    return hdfs_content_root(layout.hdfs_cluster, incarnation)


def containers_directory(layout) -> str:
    """Where the incarnations' content directories are (`<root>/<cluster>/content`)."""
    return layout.hdfs_content


@dataclass(frozen=True)
class CollectionView:
    """What one round read, in the order it read it."""

    containers: tuple[str, ...]                  # directory names under `containers_directory`
    counter: int                                 # the incarnation counter (newest epoch drawn)
    shards: dict[str, tuple[ShardOwnership, int]]  # shard id -> (value, znode version)
    live: frozenset[str]                         # children of `nodes/`
    now: float                                   # wall clock
    plans: dict[str, tuple[FailoverPlan, int]] = field(default_factory=dict)  # plan id -> (value, version)


@dataclass(frozen=True)
class CollectionPlan:
    containers: tuple[str, ...]           # incarnation ids whose content directory goes
    shards: tuple[tuple[str, int], ...]   # (shard id, version) of retired znodes that go
    plans: tuple[tuple[str, int], ...] = ()  # (plan id, version) of done plan znodes that go


# -- the decisions (pure) ------------------------------------------------------------------
def collectable_containers(containers: Iterable[str], shards: Iterable[ShardOwnership],
                           live: Iterable[str], counter: int) -> list[str]:
    """The containers to delete: incarnation ids below the counter that
    `garbage_containers` finds unreferenced (see the module docstring)."""
    shards = list(shards)
    if owners_may_be_forgotten({shard.shard: shard for shard in shards}):
        return []
    drawn = []
    for name in containers:
        try:
            epoch = Incarnation.parse(name).epoch
        except ValueError:
            continue
        if epoch < counter:
            drawn.append(name)
    return garbage_containers(drawn, shards, live)


def owners_may_be_forgotten(shards: dict[str, ShardOwnership]) -> bool:
    """True when a shard that is not RETIRED, or a divvy ancestor of one, has a
    history `HISTORY_LIMIT` long: older owners may have been cut from it, and their
    content may still be referenced."""
    for shard in shards.values():
        if shard.state is ShardState.RETIRED:
            continue
        current, seen = shard, set()
        while current is not None and current.shard not in seen:
            if len(current.history) >= HISTORY_LIMIT:
                return True
            seen.add(current.shard)
            current = shards.get(current.source.parent) if current.source is not None else None
    return False


def retired_at(shard: ShardOwnership) -> float | None:
    """Wall-clock time of the shard's (last) RETIRED history entry; None if it has none."""
    for entry in reversed(shard.history):
        if entry.state is ShardState.RETIRED:
            return entry.at
    return None


def needed_by_others(shards: dict[str, ShardOwnership]) -> set[str]:
    """Shard ids a non-retired shard still needs: its divvy ancestors (transitively,
    through retired ones too), and the children of a SPLIT parent."""
    needed: set[str] = set()
    for shard in shards.values():
        if shard.state is ShardState.RETIRED:
            continue
        needed.update(shard.children)
        current, seen = shard, {shard.shard}
        while current.source is not None and current.source.parent not in seen:
            needed.add(current.source.parent)
            seen.add(current.source.parent)
            current = shards.get(current.source.parent)
            if current is None:
                break
    return needed


def collectable_shards(shards: dict[str, ShardOwnership], now: float, retention: float) -> list[str]:
    """RETIRED shards retired at least `retention` seconds before `now` that no
    non-retired shard needs."""
    needed = needed_by_others(shards)
    found = []
    for name, shard in sorted(shards.items()):
        if shard.state is not ShardState.RETIRED or name in needed:
            continue
        at = retired_at(shard)
        if at is not None and now - at >= retention:
            found.append(name)
    return found


def collectable_plans(plans: dict[str, FailoverPlan], now: float, retention: float) -> list[str]:
    """Done plans marked done at least `retention` seconds before `now` (a done plan
    written before plans kept `finished_at` counts from its creation)."""
    found = []
    for name, plan in sorted(plans.items()):
        finished = plan.finished_at if plan.finished_at is not None else plan.created_at
        if plan.status == "done" and now - finished >= retention:
            found.append(name)
    return found


def plan_collection(view: CollectionView, retention: float = DEFAULT_RETENTION) -> CollectionPlan:
    shards = {name: entry[0] for name, entry in view.shards.items()}
    containers = collectable_containers(view.containers, shards.values(), view.live, view.counter)
    znodes = collectable_shards(shards, view.now, retention)
    plans = collectable_plans({name: entry[0] for name, entry in view.plans.items()}, view.now, retention)
    return CollectionPlan(tuple(containers), tuple((name, view.shards[name][1]) for name in znodes),
                          tuple((name, view.plans[name][1]) for name in plans))


# -- the I/O (thin) --------------------------------------------------------------------------
class ContentCollector:
    def __init__(self, client, layout, storage, *, retention: float = DEFAULT_RETENTION,
                 wall_clock: Callable[[], float] = time.time):
        self.client, self.layout, self.storage = client, layout, storage
        self.retention = retention
        self._wall_clock = wall_clock
        self.registry = ShardRegistry(client, layout, wall_clock=wall_clock)
        self.plan_store = PlanStore(client, layout)

    def read_view(self) -> CollectionView:
        # The order is the safety argument of the module docstring: HDFS first, then
        # sync, then ZooKeeper, members last.
        containers = self._list_containers()
        self.client.sync(self.layout.root)
        counter = self._read_counter()
        shards = self.registry.all()
        plans = self.plan_store.all()
        live = frozenset(self.client.get_children(self.layout.nodes))
        return CollectionView(containers, counter, shards, live, self._wall_clock(), plans)

    def collect(self, keep_going: Callable[[], bool] = lambda: True) -> CollectionPlan:
        """One round. Returns what it decided (whether or not each deletion worked).
        `keep_going()` is asked before every deletion: False ends the round."""
        try:
            plan = plan_collection(self.read_view(), self.retention)
        except Exception as error:  # noqa: BLE001 - decide nothing on a view we could not read
            log.warning("content collection skipped this round: %s: %s", type(error).__name__, _line(error))
            return CollectionPlan((), (), ())
        for container in plan.containers:
            if not keep_going():
                return plan
            self._delete_container(container)
        for shard, version in plan.shards:
            if not keep_going():
                return plan
            self._delete_znode(self.layout.shard(shard), version, f"the znode of shard {shard}, retired")
        for plan_id, version in plan.plans:
            if not keep_going():
                return plan
            self._delete_znode(self.layout.plan(plan_id), version, f"the znode of plan {plan_id}, done")
        return plan

    def _list_containers(self) -> tuple[str, ...]:
        directory = containers_directory(self.layout)
        try:
            return tuple(sorted(status.name for status in self.storage.list(directory) if status.is_dir))
        except FileNotFoundError:
            return ()  # no incarnation wrote content yet

    def _read_counter(self) -> int:
        try:
            data, _ = self.client.get(self.layout.incarnation_counter)
        except NoNodeError:
            return 0
        return int(data.decode("ascii") or 0)  # kazoo's Counter: repr(int)

    def _delete_container(self, container: str) -> None:
        path = container_directory(self.layout, container)
        try:
            self.storage.delete(path, recursive=True)
        except Exception as error:  # noqa: BLE001 - collected on a later round
            log.warning("deleting the content of dead incarnation %s (%s) failed, retried next round: %s",
                        container, path, _line(error))
            return
        log.info("deleted the content of dead incarnation %s (%s): no shard can reference it", container, path)

    def _delete_znode(self, path: str, version: int, what: str) -> None:
        try:
            self.client.delete(path, version=version)
        except (NoNodeError, BadVersionError):
            return  # gone already, or changed since read: decided again next round
        except Exception as error:  # noqa: BLE001 - collected on a later round
            log.warning("deleting %s (%s) failed, retried next round: %s", what, path, _line(error))
            return
        log.info("deleted %s more than %.0f s ago", what, self.retention)


def _line(error: BaseException) -> str:
    text = str(error).splitlines()
    return text[0][:200] if text else type(error).__name__
