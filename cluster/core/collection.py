"""What nothing can reference any more, decided purely: dead incarnations' content
containers on HDFS, retired shards' Spark staging, and shard and plan znodes
finished long ago.

`plan_collection(view)` decides; `cluster.failover.collector.ContentCollector` reads
the `CollectionView` (in the order the race below needs), carries the plan out,
and runs on the leader (`cluster.failover.leader.Leader`, every `collect_interval`
seconds while it leads and may act). A round that cannot read its view deletes
nothing, a deletion that fails is logged as one line, and the next round decides
again from scratch.

Containers. Incarnation X's content is the directory `<root>/<cluster>/content/X/`
(as `cluster.node.content.open_node_content` writes it; it holds the container
`X/<section>/...`). It is deleted when all of
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
`shards/X`, (4) creates its content container on HDFS (`cluster.node.clustered.ClusteredNode`,
from the first runtime, after `ClusterMember.start` has done 1-3). A collector that
read the members first and listed HDFS afterwards could see the container of an
X that joined in between, find X neither live nor pinned, and delete the content
of a live node. So a round reads in the opposite order:

    list containers on HDFS  ->  sync ZooKeeper  ->  counter, shards  ->  members

A container in the listing was created before the listing, so X's steps 1-3 were
done before it too. `client.sync` makes the ZooKeeper server this client reads
from catch up with the quorum, so the reads after it see steps 1-3 (ZooKeeper
reads are otherwise only sequentially consistent and may lag real time). Then X is
either in the member listing (live: kept) or dead, and a dead incarnation never
comes back (`cluster.zk.membership`); its home shard, seen in the shard listing, pins X until
an adopter drained and retired it. The counter rule is belt and braces for a view
that still lags: the incarnation that drew the newest epoch may not have its
membership znode in a lagging view, so it is kept whatever else the view says.

Being garbage is final: a RETIRED shard never changes again, and a new shard only
inherits the owners of a non-retired one (a divvy child, created in the same
transaction that sets its parent SPLIT), or is the home shard of a new incarnation.
So a container found garbage stays garbage, and a round still running on a leader
that has just been deposed deletes nothing another leader needs.

Spark staging. Shard S's Spark batches are staged under `<root>/<cluster>/spark/S/`
(`flow.spark.staging`); a processor deletes each batch's directory when the batch is
done, and whatever it finds there when it first runs on S. That leaves what no
processor will run on again: the staging of a retired S. Above all, a node paused
while its batch ran and woken after the takeover goes on with that batch until its
next check of the session guard, and may create the batch's directory again after
the adopter collected it. So S's staging directory is deleted when S is RETIRED, or
when S has no znode and its name is an incarnation id below the counter (a home
shard retired and collected). It is read right after the containers, before the
sync, for the same reason: a directory in the listing was created by a processor
running on S, so S's znode existed before the listing. Deleting it under a deposed
node's batch is harmless: that node can commit nothing for S.

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

from collections.abc import Iterable
from dataclasses import dataclass, field

from .incarnation import Incarnation
from .ownership import HISTORY_LIMIT, ShardOwnership, ShardState
from .plans import FailoverPlan

DEFAULT_RETENTION = 600.0  # seconds a RETIRED shard znode, or a done plan znode, is kept
DEFAULT_INTERVAL = 30.0  # seconds between two rounds on the leader


@dataclass(frozen=True)
class CollectionView:
    """What one round read, in the order it read it."""

    containers: tuple[str, ...]  # directory names under `<root>/<cluster>/content`
    counter: int  # the incarnation counter (newest epoch drawn)
    shards: dict[str, tuple[ShardOwnership, int]]  # shard id -> (value, znode version)
    live: frozenset[str]  # children of `nodes/`
    now: float  # wall clock
    plans: dict[str, tuple[FailoverPlan, int]] = field(default_factory=dict)  # plan id -> (value, version)
    staging: tuple[str, ...] = ()  # directory names under `<root>/<cluster>/spark`


@dataclass(frozen=True)
class CollectionPlan:
    containers: tuple[str, ...]  # incarnation ids whose content directory goes
    shards: tuple[tuple[str, int], ...]  # (shard id, version) of retired znodes that go
    plans: tuple[tuple[str, int], ...] = ()  # (plan id, version) of done plan znodes that go
    staging: tuple[str, ...] = ()  # shard ids whose Spark staging directory goes


# -- the decisions --------------------------------------------------------------------------
def garbage_containers(containers: Iterable[str], shards: Iterable[ShardOwnership], live: Iterable[str]) -> list[str]:
    """Content containers (incarnation ids) nothing can reference any more.

    A FlowFile only ever lives in a shard, and its content was written by an
    incarnation that ran that shard, or (a divvy slice) its parent. So container X can
    be referenced by a shard whose owners included X, and by the slices of such a
    shard. X is garbage when X is not a live member and every such shard still known
    is RETIRED (a shard whose znode is gone was retired and collected)."""
    shards = list(shards)
    by_id = {shard.shard: shard for shard in shards}
    live = set(live)

    def owners(shard: ShardOwnership, seen: frozenset[str] = frozenset()) -> set[str]:
        found = {entry.owner for entry in shard.history if entry.owner} | ({shard.owner} if shard.owner else set())
        found.add(shard.shard)  # a home shard's id is its first owner's incarnation
        parent = by_id.get(shard.source.parent) if shard.source is not None else None
        if parent is not None and parent.shard not in seen:
            found |= owners(parent, seen | {shard.shard})
        return found

    pinned: set[str] = set()
    for shard in shards:
        if shard.state is not ShardState.RETIRED:
            pinned |= owners(shard)
    return sorted(c for c in set(containers) if c not in live and c not in pinned)


def collectable_containers(
    containers: Iterable[str], shards: Iterable[ShardOwnership], live: Iterable[str], counter: int
) -> list[str]:
    """The containers to delete: incarnation ids below the counter that
    `garbage_containers` finds unreferenced (see the module docstring)."""
    shards = list(shards)
    if owners_may_be_forgotten({shard.shard: shard for shard in shards}):
        return []
    return garbage_containers([name for name in containers if drawn_before(name, counter)], shards, live)


def drawn_before(name: str, counter: int) -> bool:
    """True when `name` is an incarnation id whose epoch is below `counter`: drawn, and
    not the newest drawn."""
    try:
        return Incarnation.parse(name).epoch < counter
    except ValueError:
        return False


def collectable_staging(directories: Iterable[str], shards: dict[str, ShardOwnership], counter: int) -> list[str]:
    """The shards' Spark staging directories to delete: a RETIRED shard's, and one
    whose shard has no znode and is named as an incarnation below `counter` (see the
    module docstring)."""

    def garbage(name: str) -> bool:
        shard = shards.get(name)
        return drawn_before(name, counter) if shard is None else shard.state is ShardState.RETIRED

    return [name for name in sorted(set(directories)) if garbage(name)]


def owners_may_be_forgotten(shards: dict[str, ShardOwnership]) -> bool:
    """True when a shard that is not RETIRED, or a divvy ancestor of one, has a
    history `HISTORY_LIMIT` long: older owners may have been cut from it, and their
    content may still be referenced."""
    for shard in shards.values():
        if shard.state is ShardState.RETIRED:
            continue
        current: ShardOwnership | None = shard
        seen = set()
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
        current: ShardOwnership | None = shard
        seen = {shard.shard}
        while current is not None and current.source is not None and current.source.parent not in seen:
            needed.add(current.source.parent)
            seen.add(current.source.parent)
            current = shards.get(current.source.parent)
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
    staging = collectable_staging(view.staging, shards, view.counter)
    return CollectionPlan(
        tuple(containers),
        tuple((name, view.shards[name][1]) for name in znodes),
        tuple((name, view.plans[name][1]) for name in plans),
        tuple(staging),
    )
