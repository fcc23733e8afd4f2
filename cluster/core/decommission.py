"""Decommissioning a node, and the directories kept for a node that does not come
back: the record, and the leader's decisions, as pure functions.

A node's home shard may hold what its sources took on their machine (a file source's
records of files taken and not yet deleted, its listing mark; ListenHTTP's idempotency
keys). When the node dies, its adopter drains the shard and, at retirement, keeps the
shard's directory on HDFS for the node's next incarnation to read and delete
(`cluster.node.hand_over`). A node that never comes back leaves those directories for
ever. Two things end that:

* Decommissioning (NiFi's "delete a node", HBase's decommissioned RegionServer): an
  operator says the node is gone for good. Its record `decommissioned/<node>` (a
  `Decommission`) is written first; a node started under that name refuses to join
  until `connect` deletes the record. A live node that sees its record leaves the
  cluster at once, as an offload does (its shards go to the others through the normal
  plan and fencing), and stops; the leader meanwhile gives it no new shard (it is
  "draining", HBase's word). Once it is gone and its shards are moved, the leader hands
  what its sources took to a survivor where a survivor can use it (ListenHTTP's keys),
  drops the rest with a warning (the files it names are on the node's machine), and
  deletes the kept directories, then the node's retired shard znodes and done plan
  znodes, and marks the record finished. The record itself stays, so the name stays
  refused, until `connect`.
* Retention: a kept directory of a node that is not a member, and whose newest file is
  older than the retention (`[node] absent_node_retention`, 7 days by default), is
  collected by the leader with a warning that names what is dropped. A node that comes
  back later starts without it: its sources may take again what the warning names.

What is kept (`kept_directories`). A directory under `<root>/<cluster>/shards/` is a
shard's (`<shard>`, or `<shard>-fenced-<epoch>` once fenced); the node it was kept for
is the one whose incarnation named the shard (a home shard `<node>-<epoch>`, or the
parent of a divvy slice `<node>-<epoch>.e<e>s<i>`). It counts as kept when the node has
no live incarnation (a live one's own hand-over reads and deletes it) and its shard is
RETIRED or has no znode. A shard's directory is created only after its znode (and a
home shard's znode only after its node's membership znode), and the runner reads in the
content collector's order (list HDFS, sync ZooKeeper, then shards, members last), so a
directory listed without a znode had one, since deleted: retired and collected. The
content collector's counter rule is not used here: a node whose last incarnation was
also the last drawn would have its directories judged never, and the member check
(last) already covers a node that is starting. A decommission is finished only once no
directory of the node is left at all.

How long a node has been away is not in ZooKeeper once its retired shard znodes are
collected (ten minutes after retirement), so it is read from the kept directory itself:
the newest modification time of anything in it. Nothing writes a kept directory after
its adopter retired it, and the node left before that, so the node has been away at
least that long: a rule on it collects late, never early. (A divvy slice's directory is
read by no hand-over, the parent's holds the whole state; collecting one early loses
nothing.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from .collection import needed_by_others
from .heartbeat import Heartbeat
from .incarnation import Incarnation
from .layout import ClusterLayout
from .names import node_name_problem
from .ownership import ShardOwnership, ShardState
from .plans import FailoverPlan

DEFAULT_ABSENT_NODE_RETENTION = 7 * 86400.0  # seconds a node may be away before what was kept for it goes
NOTES_LIMIT = 20  # a record keeps its newest notes only


# -- the record --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decommission:
    """`decommissioned/<node>`: the node may not join under that name (until `connect`
    deletes it). `finished_at` is set by the leader once nothing of the node is left."""

    node: str
    requested_at: float
    requested_by: str = ""
    finished_at: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        return "decommissioning" if self.finished_at is None else "decommissioned"

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "node": self.node,
                "requested_at": self.requested_at,
                "requested_by": self.requested_by,
                "finished_at": self.finished_at,
                "notes": list(self.notes),
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Decommission:
        body = json.loads(data.decode())
        finished = body.get("finished_at")
        return cls(
            str(body["node"]),
            float(body["requested_at"]),
            str(body.get("requested_by", "")),
            float(finished) if finished is not None else None,
            tuple(str(n) for n in body.get("notes", ())),
        )


def with_notes(record: Decommission, notes: Iterable[str]) -> Decommission:
    notes = tuple(notes)
    if not notes:
        return record
    return replace(record, notes=(record.notes + notes)[-NOTES_LIMIT:])


def finished(record: Decommission, at: float) -> Decommission:
    return record if record.finished_at is not None else replace(record, finished_at=at)


# -- names ----------------------------------------------------------------------------------------
def origin_of(name: str) -> tuple[str, Incarnation] | None:
    """(shard id, the incarnation that named it) of a shard, or of a shard directory's
    name (`<shard>` or `<shard>-fenced-<epoch>`); a divvy slice `<shard>.e<e>s<i>` is its
    parent's. None for a name no incarnation gave (node names have no '.', see `names`)."""
    parsed = ClusterLayout.parse_shard_directory_name(name)
    if parsed is None:
        return None
    try:
        return parsed.shard, Incarnation.parse(parsed.shard.partition(".")[0])
    except ValueError:
        return None


def node_of(name: str | None) -> str | None:
    """The node of an incarnation id, shard id or shard directory name; None if none."""
    origin = origin_of(name) if name else None
    return origin[1].node if origin is not None else None


def live_nodes(live: Iterable[str]) -> set[str]:
    """The nodes that have a live incarnation, from the incarnation ids under `nodes/`."""
    return {node for node in (node_of(incarnation) for incarnation in live) if node is not None}


# -- asking for it (the operator's side) -----------------------------------------------------------
def known_node(
    node: str,
    live: Iterable[str],
    shards: Iterable[str],
    owners: Iterable[str | None],
    plans: Iterable[str],
    directories: Iterable[str],
) -> bool:
    """Whether anything of the cluster names `node`: a live incarnation, a shard (its id
    or its owner), a plan, or a shard directory on HDFS (a kept one outlives every znode)."""
    names = [*live, *shards, *(owner for owner in owners if owner), *plans, *directories]
    return any(node_of(name) == node for name in names)


def name_refusal(node: str) -> str | None:
    """Why `node` cannot be any node's name (so no node of the cluster has it), or None."""
    problem = node_name_problem(node)
    return f"no node can be called {node!r}: {problem}" if problem is not None else None


def decommission_refusal(node: str, live: Iterable[Heartbeat], decommissioned: Iterable[str] = ()) -> str | None:
    """Why `node` cannot be decommissioned now, or None. A node that is up leaves and its
    shards go to the others: refused when no other node is up to take them (NiFi refuses
    to offload the last node for the same reason); one that is leaving too does not count."""
    beats, leaving = list(live), set(decommissioned)
    if any(beat.node == node for beat in beats) and not any(beat.node not in leaving | {node} for beat in beats):
        return (
            f"node {node} is the only member of the cluster (but for nodes leaving it): nobody could take its "
            "shards over; start another node first"
        )
    return None


def draining(decommissioned: Iterable[str], live: dict[str, Heartbeat]) -> frozenset[str]:
    """Live incarnations of decommissioned nodes: leaving, so never chosen to adopt."""
    names = set(decommissioned)
    return frozenset(incarnation for incarnation, beat in live.items() if beat.node in names)


# -- what is kept, and what the leader does with it ------------------------------------------------
@dataclass(frozen=True)
class KeptDirectory:
    name: str  # the directory's name under <root>/<cluster>/shards
    shard: str  # the shard it holds
    node: str  # the node it was kept for


def kept_directories(
    directories: Iterable[str], shards: dict[str, ShardOwnership], live: Iterable[str]
) -> list[KeptDirectory]:
    """The shard directories kept for a node that is not a member (module docstring)."""
    present = live_nodes(live)
    found = []
    for name in sorted(set(directories)):
        origin = origin_of(name)
        if origin is None:
            continue
        shard, incarnation = origin
        if incarnation.node in present:
            continue
        current = shards.get(shard)
        if current is not None and current.state is not ShardState.RETIRED:
            continue
        found.append(KeptDirectory(name, shard, incarnation.node))
    return found


@dataclass(frozen=True)
class KeptView:
    """What one round of the leader read, in the order it read it."""

    directories: tuple[str, ...]  # every directory name under <root>/<cluster>/shards
    kept: tuple[KeptDirectory, ...]
    modified: dict[str, float]  # kept directory name -> newest modification time
    shards: dict[str, tuple[ShardOwnership, int]]  # shard id -> (value, znode version)
    plans: dict[str, tuple[FailoverPlan, int]]  # plan id -> (value, znode version)
    live: frozenset[str]  # incarnations under nodes/
    decommissions: dict[str, tuple[Decommission, int]]  # node -> (record, znode version)
    now: float  # wall clock at the leader


@dataclass(frozen=True)
class DecommissionSteps:
    """For one decommissioned node that is gone, in this order: hand over and delete
    `hand_over`, then delete the `shards` and `plans` znodes (versioned), then mark the
    record finished (`finish`). Each step only once every one before it succeeded."""

    node: str
    hand_over: tuple[KeptDirectory, ...]
    shards: tuple[tuple[str, int], ...]
    plans: tuple[tuple[str, int], ...]
    finish: bool


@dataclass(frozen=True)
class Collect:
    """Retention: delete `directory`, with a warning; its node has been away `absent_for` s."""

    directory: KeptDirectory
    absent_for: float


@dataclass(frozen=True)
class KeptPlan:
    decommissions: tuple[DecommissionSteps, ...] = ()
    collect: tuple[Collect, ...] = ()
    waiting: dict[str, str] = field(default_factory=dict)  # decommissioned node -> what it waits for

    @property
    def busy(self) -> bool:
        """Some decommission is not finished: worth looking again soon."""
        return bool(self.waiting) or any(steps.finish or steps.hand_over for steps in self.decommissions)


def unsettled_shards(node: str, shards: Iterable[ShardOwnership]) -> list[ShardOwnership]:
    """The node's shards not retired yet: named by one of its incarnations (its home
    shards and their slices), or owned by one (shards it had adopted)."""
    return [
        shard
        for shard in shards
        if shard.state is not ShardState.RETIRED and node in (node_of(shard.shard), node_of(shard.owner))
    ]


def plan_kept(view: KeptView, retention: float) -> KeptPlan:
    present = live_nodes(view.live)
    shards = {name: entry[0] for name, entry in view.shards.items()}
    needed = needed_by_others(shards)
    steps, waiting = [], {}
    for node, (record, _version) in sorted(view.decommissions.items()):
        if node in present:
            members = sorted(i for i in view.live if node_of(i) == node)
            waiting[node] = f"{', '.join(members)} still a member: it leaves the cluster and stops"
            continue
        unsettled = unsettled_shards(node, shards.values())
        open_plans = sorted(
            name for name, (plan, _) in view.plans.items() if node_of(plan.dead) == node and plan.status != "done"
        )
        directories = tuple(kept for kept in view.kept if kept.node == node)
        kept_names = {kept.name for kept in directories}
        unjudged = sorted(name for name in view.directories if node_of(name) == node and name not in kept_names)
        if unsettled or open_plans or unjudged:
            waiting[node] = "waiting for " + "; ".join(
                [f"shard {s.shard} ({s.state.value}, owner {s.owner or '-'})" for s in unsettled]
                + [f"plan {name} (open)" for name in open_plans]
                + [f"directory {name} (its shard not settled yet)" for name in unjudged]
            )
            if directories:  # what is kept already need not wait for the rest
                steps.append(DecommissionSteps(node, directories, (), (), False))
            continue
        retired = tuple(
            (name, view.shards[name][1])
            for name, shard in sorted(shards.items())
            if node_of(name) == node and shard.state is ShardState.RETIRED and name not in needed
        )
        done = tuple(
            (name, version)
            for name, (plan, version) in sorted(view.plans.items())
            if node_of(plan.dead) == node and plan.status == "done"
        )
        if directories or retired or done or record.finished_at is None:
            steps.append(DecommissionSteps(node, directories, retired, done, record.finished_at is None))
    collect = []
    for kept in view.kept:
        if kept.node in view.decommissions:
            continue
        modified = view.modified.get(kept.name)
        if modified is not None and view.now - modified >= retention:
            collect.append(Collect(kept, view.now - modified))
    return KeptPlan(tuple(steps), tuple(collect), waiting)
