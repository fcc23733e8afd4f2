"""The ownership of one shard, as a pure state machine (no ZooKeeper, no clock).

A shard is one node's slice of the cluster's data: its FlowFile WAL and swap files
on HDFS. Its znode `shards/<shard-id>` holds a `ShardOwnership`; the registry
(`cluster.zk.shards`) changes it only by compare-and-set, and only to a value one of
the functions below returned. Each function takes the current value and returns the
next one, or a `Refusal` that says why not. Nothing here raises for a refused
transition: refusing is an ordinary outcome the caller logs and acts on.

States and transitions::

    new_shard ──► ACTIVE ──reassign──► ADOPTING ──adopted──► DRAINING ──retire──► RETIRED
                    ▲                   │  ▲   │              │
                    │                   └──┘   │hold          └──reassign──► ADOPTING
                 (a node's home shard;  reassign▼
                  it takes new input)  (the  HELD ──adopted──► DRAINING
                                      adopter │ ▲└──reassign──► ADOPTING
                                       died)  └─┘hold         (its holder died)
                                      (a recheck failed again, for another reason)

    HELD: its adopter fenced it (every file closed) but can never open it as it is:
    its WAL is damaged in a way no crash explains, or this node's flow lacks a queue
    its FlowFiles are in. Nothing of it is changed or deleted; the reason is in the
    history entry (and the failover plan's notes). Its holder tries it again now and
    then (an operator may have repaired it: `custody wal fsck --accept-damage`) and
    marks it adopted once it opens, or holds it again when the attempt fails for
    another reason, so that the record says why it is held now; if the holder dies, it
    moves on like any shard.

    split (policy divvy): the parent goes to SPLIT (epoch + 1, no owner) and
    children are born ADOPTING, each with a hash range of the parent's FlowFiles;
    the parent is retired once every child is seeded.

Which state may follow which, and what each transition does to the epoch and the
owner, is the table in `transitions`: the guards below read it.

Epochs (Kafka's leader epoch): every reassignment adds one. A claim is valid only
from the owner at the current epoch; anything else is a dead incarnation and is
told "you are dead" (HBase's YouAreDeadException).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from .story import step_of, tag
from .transitions import ShardState as ShardState
from .transitions import sources

HISTORY_LIMIT = 32
HASH_SPACE = 1 << 32  # divvy slices are ranges of crc32(FlowFile id or swap location)


@dataclass(frozen=True)
class HistoryEntry:
    """One change of a shard. `step` is the id of the decision that made it (`story`),
    None for a change no failover step made. `reason` is for people, and ends in the
    step's tag (`[n1-7:failover/move-n1-7@7]`) when there is one: `custody cluster
    status` shows it, and the previous release read the step from there."""

    epoch: int
    owner: str | None
    state: ShardState
    at: float
    reason: str = ""
    step: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "owner": self.owner,
            "state": self.state.value,
            "at": self.at,
            "reason": self.reason,
            "step": self.step,
        }

    @classmethod
    def from_dict(cls, body: dict[str, Any]) -> HistoryEntry:
        reason = body.get("reason", "")
        # The previous release wrote no "step": its entries carry the step only as the
        # tag their reason ends in. Read it from there for those, and for those alone.
        step = body["step"] if "step" in body else step_of(reason)
        return cls(body["epoch"], body.get("owner"), ShardState(body["state"]), body.get("at", 0.0), reason, step)


@dataclass(frozen=True)
class SliceSource:
    """Where a divvy child's FlowFiles come from: the parent shard's data fenced at
    `parent_epoch`, the FlowFiles whose hash falls in [low, high)."""

    parent: str
    parent_epoch: int
    low: int
    high: int

    def contains(self, hash_value: int) -> bool:
        return self.low <= hash_value < self.high


@dataclass(frozen=True)
class ShardOwnership:
    shard: str
    owner: str | None
    epoch: int
    state: ShardState
    history: tuple[HistoryEntry, ...] = ()
    source: SliceSource | None = None  # divvy children only
    seeded: bool = False  # divvy child: its copy from the parent is durable
    children: tuple[str, ...] = ()  # divvy parent only
    flow: str | None = None  # the version of the flow it was written under (`flows`)

    @property
    def step(self) -> str | None:
        """The step id (`story`) of the decision that gave the shard its current epoch,
        as the newest history entry of this epoch that carries one tells."""
        for entry in reversed(self.history):
            if entry.epoch != self.epoch:
                break
            if entry.step:
                return entry.step
        return None

    # -- JSON (the znode's bytes) ----------------------------------------------------
    def to_json(self) -> bytes:
        body: dict[str, Any] = {
            "shard": self.shard,
            "owner": self.owner,
            "epoch": self.epoch,
            "state": self.state.value,
            "history": [entry.to_dict() for entry in self.history],
        }
        if self.source is not None:
            body["source"] = vars(self.source).copy()
        if self.seeded:
            body["seeded"] = True
        if self.children:
            body["children"] = list(self.children)
        if self.flow is not None:
            body["flow"] = self.flow
        return json.dumps(body, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> ShardOwnership:
        body = json.loads(data.decode())
        return cls(
            shard=body["shard"],
            owner=body.get("owner"),
            epoch=int(body["epoch"]),
            state=ShardState(body["state"]),
            history=tuple(HistoryEntry.from_dict(entry) for entry in body.get("history", ())),
            source=SliceSource(**body["source"]) if body.get("source") else None,
            seeded=bool(body.get("seeded", False)),
            children=tuple(body.get("children", ())),
            flow=body.get("flow"),
        )


@dataclass(frozen=True)
class Refusal:
    """A transition that must not happen. `stale` is True when the caller is a dead
    incarnation (or acts on an old epoch): it must stop touching the shard."""

    shard: str
    reason: str
    owner: str | None
    epoch: int
    stale: bool = field(default=False)

    def __str__(self) -> str:
        return f"shard {self.shard} (owner {self.owner}, epoch {self.epoch}): {self.reason}"


def _needs(action: str, current: ShardOwnership) -> Refusal:
    wanted = " or ".join(state.value for state in sources(action))
    return Refusal(
        current.shard, f"{action}() needs state {wanted}, not {current.state.value}", current.owner, current.epoch
    )


def _advance(
    current: ShardOwnership, *, at: float, reason: str, step: str | None = None, **changes: Any
) -> ShardOwnership:
    moved = replace(current, **changes)
    entry = HistoryEntry(moved.epoch, moved.owner, moved.state, at, _with_step(reason, step), step)
    return replace(moved, history=(current.history + (entry,))[-HISTORY_LIMIT:])


def _with_step(reason: str, step: str | None) -> str:
    """A history entry's reason: ending in its step's tag when it has one."""
    return f"{reason} {tag(step)}" if step else reason


def new_shard(shard: str, owner: str, epoch: int, *, at: float, flow: str | None = None) -> ShardOwnership:
    """A node's home shard, created by the node itself at start with its incarnation
    epoch, and the version of the flow it runs."""
    base = ShardOwnership(shard, owner, epoch, ShardState.ACTIVE, flow=flow)
    return _advance(base, at=at, reason="created by its node at start")


def earlier_owners(current: ShardOwnership, limit: int = 2) -> list[str]:
    """The incarnations that owned the shard at its latest earlier epochs, newest first,
    at most `limit` of them (not its owner now). Each lost it through a failover plan,
    which moves every shard of an incarnation that died or was offloaded: none of them
    writes again, so an adopter may close the files they left open."""
    found: list[str] = []
    for entry in reversed(current.history):
        if len(found) >= limit:
            break
        if entry.epoch < current.epoch and entry.owner not in (None, current.owner) and entry.owner not in found:
            found.append(entry.owner)
    return found


def check_claim(current: ShardOwnership, incarnation: str, epoch: int) -> Refusal | None:
    """None when `incarnation` at `epoch` is the shard's owner now; otherwise the
    "you are dead" refusal the claimant must stop on."""
    if current.owner == incarnation and current.epoch == epoch and current.state is not ShardState.RETIRED:
        return None
    if current.state is ShardState.RETIRED:
        reason = "the shard is retired"
    elif current.owner != incarnation:
        reason = f"{incarnation} is not the owner (you are dead)"
    else:
        reason = f"epoch {epoch} is stale (you are dead)"
    return Refusal(current.shard, reason, current.owner, current.epoch, stale=True)


def reassign(
    current: ShardOwnership, to_owner: str, *, expected_epoch: int, at: float, reason: str = "", step: str | None = None
) -> ShardOwnership | Refusal:
    """Move the shard to `to_owner` at epoch + 1, state ADOPTING (the leader's reassignment,
    its decision `step`). `expected_epoch` is the epoch the plan saw: a move planned on an
    older view is refused."""
    if current.state not in sources("reassign"):
        return Refusal(current.shard, f"cannot reassign a {current.state.value} shard", current.owner, current.epoch)
    if current.epoch != expected_epoch:
        return Refusal(
            current.shard,
            f"planned at epoch {expected_epoch}, now at {current.epoch}",
            current.owner,
            current.epoch,
            stale=True,
        )
    if current.owner == to_owner:
        return Refusal(current.shard, f"{to_owner} already owns it", current.owner, current.epoch)
    return _advance(
        current,
        at=at,
        reason=reason or f"reassigned from {current.owner}",
        step=step,
        owner=to_owner,
        epoch=current.epoch + 1,
        state=ShardState.ADOPTING,
    )


def adopted(current: ShardOwnership, by: str, epoch: int, *, at: float) -> ShardOwnership | Refusal:
    """The adopter fenced the shard and recovered its WAL: its queues now drain (no new
    input goes to an adopted shard). For a divvy child this also marks it seeded."""
    refusal = check_claim(current, by, epoch)
    if refusal is not None:
        return refusal
    if current.state not in sources("adopted"):
        return _needs("adopted", current)
    reason = f"adopted by {by}" + (" once it could be opened" if current.state is ShardState.HELD else "")
    return _advance(
        current, at=at, reason=reason, state=ShardState.DRAINING, seeded=current.seeded or current.source is not None
    )


def hold(
    current: ShardOwnership, by: str, epoch: int, *, at: float, reason: str, step: str | None = None
) -> ShardOwnership | Refusal:
    """The adopter fenced the shard but cannot open it as it is, and no retry would
    change that (`reason` says why, for the operator): it stops adopting it and keeps
    it as it is. Its epoch and owner stay; `adopted` takes it from here once it opens.
    `step` is the decision the adopter acts on (the move that gave it the shard).

    A HELD shard whose recheck failed is held again with the reason of that recheck:
    a new history entry when the reason changed (the operator reads the newest), and
    `current` itself, nothing to write, when it did not (a recheck every few minutes
    must not push the shard's earlier epochs out of its bounded history)."""
    refusal = check_claim(current, by, epoch)
    if refusal is not None:
        return refusal
    if current.state not in sources("hold"):
        return _needs("hold", current)
    text = f"held by {by}: {reason}"
    if current.state is ShardState.HELD and current.history and current.history[-1].reason == _with_step(text, step):
        return current
    return _advance(current, at=at, reason=text, step=step, state=ShardState.HELD)


def retire(current: ShardOwnership, by: str, epoch: int, *, at: float) -> ShardOwnership | Refusal:
    """The owner drained the shard: nothing of it is left to process."""
    refusal = check_claim(current, by, epoch)
    if refusal is not None:
        return refusal
    if current.state not in sources("retire"):
        return _needs("retire", current)
    return _advance(current, at=at, reason=f"drained by {by}", state=ShardState.RETIRED)


def split(
    current: ShardOwnership,
    slices: list[tuple[str, str, int, int]],
    *,
    expected_epoch: int,
    at: float,
    reason: str = "",
    step: str | None = None,
) -> tuple[ShardOwnership, list[ShardOwnership]] | Refusal:
    """Divvy: `slices` are (child shard id, owner, low, high) covering [0, HASH_SPACE)
    exactly, without overlap. Returns the parent at epoch + 1 in state SPLIT and the
    children, each ADOPTING at the parent's new epoch. One ZooKeeper transaction
    must write all of them, or none. `reason` and `step` go into every history entry."""
    if current.state not in sources("split"):
        return Refusal(current.shard, f"cannot split a {current.state.value} shard", current.owner, current.epoch)
    if current.epoch != expected_epoch:
        return Refusal(
            current.shard,
            f"planned at epoch {expected_epoch}, now at {current.epoch}",
            current.owner,
            current.epoch,
            stale=True,
        )
    ordered = sorted(slices, key=lambda s: s[2])
    edges = [0] + [edge for s in ordered for edge in (s[2], s[3])] + [HASH_SPACE]
    if (
        not ordered
        or any(edges[i] != edges[i + 1] for i in range(0, len(edges), 2))
        or any(s[2] >= s[3] for s in ordered)
    ):
        return Refusal(
            current.shard,
            f"slices {[(s[2], s[3]) for s in ordered]} do not cover the hash space exactly once",
            current.owner,
            current.epoch,
        )
    epoch = current.epoch + 1
    why = f" ({reason})" if reason else ""
    parent = _advance(
        current,
        at=at,
        reason=f"split into {len(ordered)} slices{why}",
        step=step,
        owner=None,
        epoch=epoch,
        state=ShardState.SPLIT,
        children=tuple(s[0] for s in ordered),
    )
    children = [
        _advance(
            ShardOwnership(
                child,
                owner,
                epoch,
                ShardState.ADOPTING,
                source=SliceSource(current.shard, epoch, low, high),
                flow=current.flow,
            ),
            at=at,
            reason=f"slice [{low}, {high}) of {current.shard}{why}",
            step=step,
        )
        for child, owner, low, high in ordered
    ]
    return parent, children


def retire_split_parent(
    parent: ShardOwnership, children: dict[str, ShardOwnership], *, at: float
) -> ShardOwnership | Refusal:
    """A SPLIT parent retires once every child is seeded (its copy is durable in the
    child's own WAL); until then a crashed child adopter re-copies from the parent."""
    if parent.state not in sources("retire_split_parent"):
        return Refusal(parent.shard, f"not a split shard ({parent.state.value})", parent.owner, parent.epoch)
    missing = [child for child in parent.children if child not in children or not children[child].seeded]
    if missing:
        return Refusal(parent.shard, f"children not seeded yet: {missing}", parent.owner, parent.epoch)
    return _advance(parent, at=at, reason="every slice seeded", state=ShardState.RETIRED)
