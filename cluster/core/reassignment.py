"""What the leader does next: a pure function from what it sees to instructions.

The leader (`leader.Leader`) reads the cluster into a `LeaderView`, calls `decide`,
and carries out the instructions in order, through ZooKeeper. Because the decision
is a function of ZooKeeper's contents alone, a new leader reading the same state
decides the same thing: that is how it finishes a plan its predecessor started.

Level-triggered, not edge-triggered: a shard is orphaned when its owner has no
znode under `nodes/` (a dead incarnation never comes back: a returning process is a
new incarnation). So a death the old leader never saw is still found.

Every instruction has a `step` id (`story`), derived from the instruction alone: the
leader logs it, writes it into the plan's notes and the moved shard's history.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .heartbeat import Heartbeat
from .ownership import ShardOwnership, ShardState
from .planner import in_flight, plan_failover
from .plans import FailoverPlan, Move, pending_moves
from .story import step_id, tag


@dataclass(frozen=True)
class LeaderView:
    leader: str
    at: float
    live: dict[str, Heartbeat]  # incarnation -> its current heartbeat
    shards: dict[str, ShardOwnership]
    plans: dict[str, FailoverPlan]  # open plans, by plan id (= dead incarnation)
    last_beats: dict[str, Heartbeat]  # last heartbeat the leader saw of each incarnation
    policy: str = "whole"
    # Live incarnations of decommissioned nodes (`decommission.draining`): they are leaving,
    # so they adopt nothing (HBase's draining RegionServers); their own shards stay theirs
    # until they leave.
    draining: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WritePlan:
    plan: FailoverPlan


@dataclass(frozen=True)
class RevisePlan:
    plan: FailoverPlan
    reason: str


@dataclass(frozen=True)
class ExecuteMove:
    plan_id: str
    move: Move


@dataclass(frozen=True)
class FinishPlan:
    plan_id: str


@dataclass(frozen=True)
class RetireSplitParent:
    shard: str


Instruction = WritePlan | RevisePlan | ExecuteMove | FinishPlan | RetireSplitParent


def step_of_instruction(instruction: Instruction) -> str:
    """The instruction's step id (`story`): a function of the instruction alone, so
    every leader that decides the same step names it the same."""
    match instruction:
        case WritePlan(plan):
            return step_id(plan.dead, "failover/plan")
        case RevisePlan(plan, _):
            return revise_step(plan.dead, plan.revision)
        case ExecuteMove(plan_id, move):
            return step_id(plan_id, f"failover/move-{move.shard}@{move.from_epoch}")
        case FinishPlan(plan_id):
            return step_id(plan_id, "failover/done")
        case RetireSplitParent(shard):
            return step_id(shard, "split/retire")
    raise TypeError(f"not a leader instruction: {instruction!r}")


def revise_step(dead: str, revision: int) -> str:
    """The step that rewrites the plan for `dead` now at `revision`."""
    return step_id(dead, f"failover/revise-{revision + 1}")


def orphans(view: LeaderView) -> dict[str, list[ShardOwnership]]:
    """Shards whose owner is not alive, by dead owner."""
    found: dict[str, list[ShardOwnership]] = {}
    for shard in view.shards.values():
        if shard.state in (ShardState.RETIRED, ShardState.SPLIT) or shard.owner is None:
            continue
        if shard.owner not in view.live:
            found.setdefault(shard.owner, []).append(shard)
    return found


def _planned_at(plan: FailoverPlan | None, now: float) -> float:
    return now if plan is None else min(plan.created_at, now)


def decide(view: LeaderView) -> list[Instruction]:
    out: list[Instruction] = []
    survivors = sorted(
        (beat for name, beat in view.live.items() if name not in view.draining), key=lambda beat: beat.incarnation
    )
    orphaned = orphans(view)
    # What each survivor is adopting already, and (filled in by each plan below) what
    # the plans of this decision give it: deaths at once spread over the survivors.
    adopting = in_flight(view.shards.values(), view.live)
    # First come, first served: a death already planned (by this leader or one before it)
    # is carried out before a later one is planned, so that its shards reach their
    # adopter's workers first; deaths not planned yet follow in name order.
    for dead in sorted(orphaned, key=lambda name: (_planned_at(view.plans.get(name), view.at), name)):
        shards = orphaned[dead]
        plan = view.plans.get(dead)
        fresh = plan_failover(
            dead,
            shards,
            survivors,
            plan_id=dead,
            leader=view.leader,
            at=view.at,
            policy=view.policy,
            last_beat=view.last_beats.get(dead),
            adopting=dict(adopting),
        )
        if plan is None:
            if not fresh.moves:
                continue  # nobody eligible yet; decided again on the next change
            out.append(WritePlan(fresh))
            plan = fresh
        else:
            pending = pending_moves(plan, view.shards)
            planned = {move.shard for move in pending}
            dead_targets = [m for m in pending if any(t not in view.live for t in m.targets)]
            uncovered = [s.shard for s in shards if s.shard not in planned]
            if dead_targets or uncovered:
                reason = (
                    f"targets gone: {sorted({t for m in dead_targets for t in m.targets if t not in view.live})}; "
                    f"shards not planned: {sorted(uncovered)}"
                )
                note = f"{tag(revise_step(dead, plan.revision))} {reason}"
                # The revision keeps when the death was first planned and when the dead was last heard of.
                plan = replace(
                    fresh,
                    created_at=plan.created_at,
                    revision=plan.revision,
                    notes=plan.notes + (note,),
                    last_seen_at=plan.last_seen_at if plan.last_seen_at is not None else fresh.last_seen_at,
                )
                out.append(RevisePlan(plan, reason))
        for move in pending_moves(plan, view.shards):
            for target in move.targets:  # not moved yet: not in flight yet either
                adopting[target] = adopting.get(target, 0) + 1
            if all(target in view.live for target in move.targets):
                out.append(ExecuteMove(plan.plan_id, move))
    for plan_id, plan in sorted(view.plans.items()):
        if plan_id not in orphaned and not pending_moves(plan, view.shards):
            out.append(FinishPlan(plan_id))
    for shard in sorted(view.shards.values(), key=lambda s: s.shard):
        if shard.state is ShardState.SPLIT:
            children = [view.shards.get(child) for child in shard.children]
            if all(child is not None and child.seeded for child in children):
                out.append(RetireSplitParent(shard.shard))
    return out
