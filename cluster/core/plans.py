"""Failover plans: the model and its JSON (the znodes under `plans/` are
`cluster.zk.plans.PlanStore`).

A plan is written to ZooKeeper before any of its moves is made, so that a leader
that dies half-way leaves the rest of the plan for the next one (HBase's
ServerCrashProcedure keeps its steps in a procedure store for the same reason).

One plan per dead incarnation: its znode is `plans/<dead incarnation>`. Whether a
move is done is read from the shard itself, never stored in the plan: a move of
shard S planned at epoch e is done once S's epoch is past e (whoever moved it), and
pending while S is still owned by the dead incarnation at epoch e. So a new leader
replays a plan without moving anything twice: the compare-and-set on e refuses it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from .ownership import ShardOwnership, ShardState


@dataclass(frozen=True)
class Slice:
    """Divvy: child shard `child`, owned by `owner`, takes hashes in [low, high)."""

    child: str
    owner: str
    low: int
    high: int


@dataclass(frozen=True)
class Move:
    """Move `shard` away from `from_owner` at `from_epoch`: whole to `to`, or split
    into `slices` (policy divvy; then `to` is None)."""

    shard: str
    from_owner: str
    from_epoch: int
    to: str | None
    slices: tuple[Slice, ...] = ()

    @property
    def targets(self) -> tuple[str, ...]:
        if self.slices:
            return tuple(s.owner for s in self.slices)
        return () if self.to is None else (self.to,)


@dataclass(frozen=True)
class FailoverPlan:
    plan_id: str
    dead: str
    leader: str
    created_at: float
    policy: str
    moves: tuple[Move, ...]
    status: str = "open"  # open | done
    revision: int = 0
    notes: tuple[str, ...] = field(default=())
    finished_at: float | None = None  # wall clock at the leader that marked it done
    # "<shard>@<epoch>" -> wall clock at the adopter when the shard first delivered
    # there (its first output): when the failover's data flowed again.
    resumed: dict[str, float] = field(default_factory=dict)
    # When the leader last heard from the dead incarnation as it wrote the plan: the
    # `sent_at` of the last heartbeat it read (the death itself is known to no one).
    # None in plans written before this was kept, and when no heartbeat was read.
    last_seen_at: float | None = None

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "plan_id": self.plan_id,
                "dead": self.dead,
                "leader": self.leader,
                "created_at": self.created_at,
                "policy": self.policy,
                "status": self.status,
                "revision": self.revision,
                "notes": list(self.notes),
                "finished_at": self.finished_at,
                "resumed": dict(self.resumed),
                "last_seen_at": self.last_seen_at,
                "moves": [
                    {
                        "shard": m.shard,
                        "from_owner": m.from_owner,
                        "from_epoch": m.from_epoch,
                        "to": m.to,
                        "slices": [vars(s).copy() for s in m.slices],
                    }
                    for m in self.moves
                ],
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> FailoverPlan:
        body = json.loads(data.decode())
        moves = tuple(
            Move(
                m["shard"],
                m["from_owner"],
                int(m["from_epoch"]),
                m.get("to"),
                tuple(Slice(**s) for s in m.get("slices", ())),
            )
            for m in body["moves"]
        )
        return cls(
            body["plan_id"],
            body["dead"],
            body["leader"],
            body["created_at"],
            body["policy"],
            moves,
            body.get("status", "open"),
            body.get("revision", 0),
            tuple(body.get("notes", ())),
            body.get("finished_at"),
            {str(k): float(v) for k, v in body.get("resumed", {}).items()},
            _seconds_or_none(body.get("last_seen_at")),
        )


def _seconds_or_none(value: float | str | None) -> float | None:
    return None if value is None else float(value)


def with_resumed(plan: FailoverPlan, shard: str, epoch: int, at: float) -> FailoverPlan:
    """`plan` with the first output of `shard` at `epoch` recorded (the first one stands)."""
    key = f"{shard}@{epoch}"
    if key in plan.resumed:
        return plan
    return replace(plan, resumed={**plan.resumed, key: at})


def move_is_done(move: Move, current: ShardOwnership | None) -> bool:
    """Done when the shard moved past the planned epoch, was retired, or is gone."""
    if current is None:
        return True
    if current.state in (ShardState.RETIRED, ShardState.SPLIT):
        return True
    return current.epoch > move.from_epoch or current.owner != move.from_owner


def pending_moves(plan: FailoverPlan, shards: dict[str, ShardOwnership]) -> list[Move]:
    """The moves of `plan` still to make, judged from the shards as they are now."""
    return [move for move in plan.moves if not move_is_done(move, shards.get(move.shard))]
