"""The protocol's invariants, checked over one snapshot of the cluster's state.

dask's distributed checks its scheduler's and workers' invariants after every test;
this is the same for the failover protocol: `validate_cluster(view)` returns what a
`ClusterView` (read by `cluster.zk.view.read_cluster_view`) shows broken, as
`transitions.Violation`s, empty when nothing is. The integration tests run it after
every test that ran a cluster, and the drill after every round.

Only rules that hold at every instant are checked, not those of a cluster at rest: a
snapshot may catch a failover half-way (a dead node's shard not planned yet, a plan
not done yet), and that is no violation. The snapshot is read in the order the rules
rely on (`read_cluster_view`): shards, plans, decommissions and the roll first, the
members next, the leader election last. A dead incarnation never comes back, so a
member read after a plan that names it dead, or a leader read after the members that
lacks one, is a real contradiction and not a race of the reads.

The rules (each `Violation.rule`):

  unreadable         a shard or plan znode that does not parse: nothing else can judge it
  record             a shard's owner, epoch and state are not its newest history entry
  epoch-fell, two-owners, transition, epoch, owner
                     two successive history entries that `transitions` does not allow
                     (an epoch goes back; one epoch has two owners; no such transition;
                     the epoch or the owner changed as that transition does not)
  split-family       a split parent without one of its slices, or a slice not yet
                     retired without its parent (the collector keeps both)
  retired-unaccounted  a retired shard whose FlowFiles are not all accounted for: a
                     member's heartbeat sent after the retirement still counts some queued
                     in it, or a retired split parent has a slice that was never seeded
  two-runners        two live members both say they run one shard
  runner-not-owner   a live member runs a shard (not retired) another incarnation owns
  plan-for-live      a failover plan for an incarnation that is a live member
  plan-done-early    a plan marked done while its dead incarnation still owns a shard
                     it planned to move, at the planned epoch
  decommissioned     a node whose decommission finished is a member, or owns a shard
  leader             the leader is not a live member, or an incarnation campaigns twice
  roll               a rolling deploy with two steps in progress, or one that ended with
                     a step still waiting or in progress
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from .decommission import Decommission, node_of
from .heartbeat import Heartbeat
from .ownership import HISTORY_LIMIT, ShardOwnership
from .plans import FailoverPlan, pending_moves
from .rolls import IN_PROGRESS, RUNNING, WAITING, Roll
from .transitions import OwnershipRecord, ShardState, Violation, check_transition


@dataclass(frozen=True)
class ClusterView:
    """One cluster as ZooKeeper held it, read once (`cluster.zk.view`)."""

    cluster: str
    shards: dict[str, ShardOwnership] = field(default_factory=dict)
    plans: dict[str, FailoverPlan] = field(default_factory=dict)
    decommissions: dict[str, Decommission] = field(default_factory=dict)
    roll: Roll | None = None
    members: dict[str, Heartbeat] = field(default_factory=dict)  # live incarnation -> its heartbeat
    contenders: tuple[str, ...] = ()  # the election's, the leader first
    unreadable: dict[str, str] = field(default_factory=dict)  # "shard <id>", "plan <id>", "deploy" -> why

    @property
    def leader(self) -> str | None:
        return self.contenders[0] if self.contenders else None


def validate_cluster(view: ClusterView) -> list[Violation]:
    """Every rule the view breaks (module docstring), shards first, in a stable order."""
    return [
        *_unreadable(view),
        *_histories(view),
        *_split_families(view),
        *_retired(view),
        *_runners(view),
        *_plans(view),
        *_decommissioned(view),
        *_leader(view),
        *_roll(view),
    ]


def _unreadable(view: ClusterView) -> Iterator[Violation]:
    for subject, why in sorted(view.unreadable.items()):
        yield Violation("unreadable", subject, f"its znode does not parse, so no rule can judge it: {why}")


def _histories(view: ClusterView) -> Iterator[Violation]:
    for name, shard in sorted(view.shards.items()):
        subject = f"shard {name}"
        newest = shard.history[-1] if shard.history else None
        if newest is None or (newest.owner, newest.epoch, newest.state) != (shard.owner, shard.epoch, shard.state):
            yield Violation(
                "record",
                subject,
                f"it is {shard.state.value}@{shard.epoch} ({shard.owner}) but its history ends {_entry(newest)}",
            )
        # A full history lost its oldest entries: its first is then no creation.
        before = None if len(shard.history) < HISTORY_LIMIT else shard.history[0]
        for after in shard.history[0 if before is None else 1 :]:
            found = check_transition(before, after, subject=subject)
            if found is not None:
                yield found
            before = after


def _entry(entry: OwnershipRecord | None) -> str:
    return "nowhere (it is empty)" if entry is None else f"{entry.state.value}@{entry.epoch} ({entry.owner})"


def _split_families(view: ClusterView) -> Iterator[Violation]:
    for name, shard in sorted(view.shards.items()):
        if shard.state is ShardState.SPLIT:
            missing = [child for child in shard.children if child not in view.shards]
            if missing:
                yield Violation("split-family", f"shard {name}", f"split, but its slices {missing} have no znode")
        if (
            shard.source is not None
            and shard.state is not ShardState.RETIRED
            and shard.source.parent not in view.shards
        ):
            yield Violation(
                "split-family",
                f"shard {name}",
                f"a slice still {shard.state.value}, but its parent {shard.source.parent} has no znode",
            )


def _retired(view: ClusterView) -> Iterator[Violation]:
    for name, shard in sorted(view.shards.items()):
        if shard.state is not ShardState.RETIRED:
            continue
        retired_at = next((entry.at for entry in shard.history if entry.state is ShardState.RETIRED), None)
        for incarnation, beat in sorted(view.members.items()):
            queued = sum(load.count for key, load in beat.queues.items() if key.partition("/")[0] == name)
            # A beat sent before the retirement (by the retiring owner's clock) is no evidence.
            if queued and retired_at is not None and beat.sent_at > retired_at:
                yield Violation(
                    "retired-unaccounted",
                    f"shard {name}",
                    f"retired at {retired_at:.3f}, but {incarnation}'s heartbeat of {beat.sent_at:.3f} "
                    f"counts {queued} FlowFile(s) queued in it",
                )
        unseeded = [child for child in shard.children if child in view.shards and not view.shards[child].seeded]
        if unseeded:
            yield Violation(
                "retired-unaccounted",
                f"shard {name}",
                f"a split parent retired before its slices {unseeded} were seeded",
            )


def _runners(view: ClusterView) -> Iterator[Violation]:
    runners: dict[str, list[str]] = {}
    for incarnation, beat in sorted(view.members.items()):
        for shard in beat.owned_shards:
            runners.setdefault(shard, []).append(incarnation)
    for shard, names in sorted(runners.items()):
        if len(names) > 1:
            yield Violation("two-runners", f"shard {shard}", f"run by {', '.join(names)} at once")
        current = view.shards.get(shard)
        for incarnation in names:
            if current is not None and current.state is not ShardState.RETIRED and current.owner != incarnation:
                yield Violation(
                    "runner-not-owner",
                    f"shard {shard}",
                    f"{incarnation} runs it, but {current.owner or 'nobody'} owns it at epoch "
                    f"{current.epoch} ({current.state.value})",
                )


def _plans(view: ClusterView) -> Iterator[Violation]:
    for name, plan in sorted(view.plans.items()):
        if plan.dead in view.members:
            yield Violation("plan-for-live", f"plan {name}", f"plans the shards of {plan.dead}, a live member")
        if plan.status == "done":
            pending = [f"{move.shard}@{move.from_epoch}" for move in pending_moves(plan, view.shards)]
            if pending:
                yield Violation(
                    "plan-done-early", f"plan {name}", f"marked done, but {plan.dead} still owns {', '.join(pending)}"
                )


def _decommissioned(view: ClusterView) -> Iterator[Violation]:
    gone = {node for node, record in view.decommissions.items() if record.finished_at is not None}
    for incarnation in sorted(view.members):
        if node_of(incarnation) in gone:
            yield Violation("decommissioned", f"member {incarnation}", "a member, but its node's decommission finished")
    for name, shard in sorted(view.shards.items()):
        if shard.state is not ShardState.RETIRED and node_of(shard.owner) in gone:
            yield Violation(
                "decommissioned",
                f"shard {name}",
                f"owned by {shard.owner} ({shard.state.value}), but its node's decommission finished",
            )


def _leader(view: ClusterView) -> Iterator[Violation]:
    leader = view.leader
    if leader is not None and leader not in view.members:
        yield Violation("leader", f"leader {leader}", "leads, but is not a live member")
    for incarnation, count in sorted(Counter(view.contenders).items()):
        if count > 1:
            yield Violation("leader", f"contender {incarnation}", f"campaigns {count} times")


def _roll(view: ClusterView) -> Iterator[Violation]:
    roll = view.roll
    if roll is None:
        return
    moving = [step.incarnation for step in roll.steps if step.state in IN_PROGRESS]
    if len(moving) > 1:
        yield Violation("roll", f"roll {roll.roll_id}", f"steps of {', '.join(moving)} are in progress at once")
    if roll.state != RUNNING:
        left = [f"{step.incarnation} {step.state}" for step in roll.steps if step.state in (WAITING, *IN_PROGRESS)]
        if left:
            yield Violation("roll", f"roll {roll.roll_id}", f"{roll.state}, but {', '.join(left)}")
