"""The timeline of recent failovers, read from what ZooKeeper keeps: each plan (when
the leader wrote it, when it marked it done, when each moved shard first delivered
at its new owner) and each moved shard's history (when its new owner took it over:
the entry that leaves ADOPTING at a later epoch), and the dead incarnation's last
heartbeat the leader had read when it wrote the plan (`last_seen_at`).

A failover's three phases, one after the other, as `custody drill --plot` draws them:
detection (last heard of to the plan: `detection_s`), takeover (the plan to the last
shard running at its new owner) and resume (that to the last shard's first delivery).

    timelines = failover_timelines(plans, shards, limit=20)   # newest first
"""

from __future__ import annotations

from dataclasses import dataclass

from .ownership import ShardOwnership, ShardState
from .plans import FailoverPlan


@dataclass(frozen=True)
class FailoverTimeline:
    plan: str
    dead: str
    detected_at: float  # the leader wrote the plan
    taken_over_at: float | None  # the last moved shard left ADOPTING at its new owner
    finished_at: float | None  # the leader marked the plan done
    shards: tuple[str, ...]
    resumed_at: float | None = None  # the last moved shard first delivered at its new owner
    last_seen_at: float | None = None  # the dead incarnation's last heartbeat the leader read

    @property
    def detection_s(self) -> float | None:
        """From the last heartbeat the leader had of the dead to the plan: the death
        itself is somewhere in between, so this bounds the detection's length from above."""
        return None if self.last_seen_at is None else max(0.0, self.detected_at - self.last_seen_at)

    @property
    def takeover_s(self) -> float | None:
        return None if self.taken_over_at is None else max(0.0, self.taken_over_at - self.detected_at)

    @property
    def resume_s(self) -> float | None:
        return None if self.resumed_at is None else max(0.0, self.resumed_at - self.detected_at)

    @property
    def finish_s(self) -> float | None:
        return None if self.finished_at is None else max(0.0, self.finished_at - self.detected_at)


def taken_over_at(shard: ShardOwnership | None, from_epoch: int) -> float | None:
    """When the shard first ran at a new owner after `from_epoch`: the first history
    entry at a later epoch in a state past ADOPTING (a HELD shard has not run yet)."""
    if shard is None:
        return None
    for entry in shard.history:
        if entry.epoch > from_epoch and entry.state not in (ShardState.ADOPTING, ShardState.HELD):
            return entry.at
    return None


def resumed_at(plan: FailoverPlan, shard: str, from_epoch: int) -> float | None:
    """When `shard` first delivered at an owner after `from_epoch` (the plan's record)."""
    found = [
        at
        for key, at in plan.resumed.items()
        if key.rpartition("@")[0] == shard and int(key.rpartition("@")[2]) > from_epoch
    ]
    return min(found) if found else None


def _latest(moments: list[float | None]) -> float | None:
    """The last of `moments`; None when there are none or one is not known yet."""
    known = [moment for moment in moments if moment is not None]
    return max(known) if known and len(known) == len(moments) else None


def failover_timelines(
    plans: dict[str, FailoverPlan], shards: dict[str, ShardOwnership], *, limit: int = 20
) -> list[FailoverTimeline]:
    timelines = []
    for plan in plans.values():
        taken = _latest([taken_over_at(shards.get(move.shard), move.from_epoch) for move in plan.moves])
        resumed = _latest([resumed_at(plan, move.shard, move.from_epoch) for move in plan.moves])
        timelines.append(
            FailoverTimeline(
                plan.plan_id,
                plan.dead,
                plan.created_at,
                taken,
                plan.finished_at,
                tuple(move.shard for move in plan.moves),
                resumed,
                plan.last_seen_at,
            )
        )
    timelines.sort(key=lambda t: t.detected_at, reverse=True)
    return timelines[:limit]
