"""Every transition a shard's ownership record may make, as data (dask's worker state
machine keeps its allowed transitions in one table for the same reason: the code that
moves a record and the checks that audit it read the same rules).

A record is `shards/<shard-id>`: an owner, an epoch and a state (`ShardState`). Each
row of `TRANSITIONS` names the `ownership` function that makes it, and what it does to
the epoch (Kafka's leader epoch: a new owner always comes with a higher one) and to the
owner. `ownership` refuses what the table does not allow (`sources`), and
`check_transition` audits any pair of records, such as two successive entries of a
shard's history (`validation`):

    check_transition(before, after)   # None, or the `Violation`
    transition_table_markdown()       # the table, for the docs (`cluster.reference.ownership`)

`before` is None for a record being created: a node's home shard, or a divvy slice.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class ShardState(str, enum.Enum):
    """What a shard is now: `MEANINGS` says it in words."""

    ACTIVE = "active"
    ADOPTING = "adopting"
    DRAINING = "draining"
    SPLIT = "split"
    HELD = "held"
    RETIRED = "retired"


class EpochRule(str, enum.Enum):
    """What a transition does to the epoch (`MEANINGS`)."""

    STARTS = "starts"
    RAISES = "raises"
    KEEPS = "keeps"


class OwnerRule(str, enum.Enum):
    """What a transition does to the owner (`MEANINGS`)."""

    NEW = "new"
    MOVES = "moves"
    KEEPS = "keeps"
    NONE = "none"


# Each state and rule in words: for the code's readers and for the reference page.
MEANINGS: dict[enum.Enum, str] = {
    ShardState.ACTIVE: "a live node's home shard, taking new input",
    ShardState.ADOPTING: "moved to a new owner that has not finished fencing and recovering it",
    ShardState.DRAINING: "adopted: its queues run at the new epoch, and it takes no new input",
    ShardState.SPLIT: "divvied: its FlowFiles are being copied into child shards",
    ShardState.HELD: "fenced, but it cannot be opened as it is: kept untouched for an operator, and tried again",
    ShardState.RETIRED: "empty; its files may be collected. Final",
    EpochRule.STARTS: "a new record: the creating incarnation's epoch, or the split parent's new one",
    EpochRule.RAISES: "exactly one more than before",
    EpochRule.KEEPS: "the same as before",
    OwnerRule.NEW: "a new record: an owner",
    OwnerRule.MOVES: "another incarnation than before",
    OwnerRule.KEEPS: "the same as before",
    OwnerRule.NONE: "no owner (a split parent: its FlowFiles belong to its slices)",
}


@dataclass(frozen=True)
class Transition:
    before: ShardState | None
    after: ShardState
    action: str  # the `ownership` function that makes it
    epoch: EpochRule
    owner: OwnerRule
    why: str


_S = ShardState
TRANSITIONS: tuple[Transition, ...] = (
    Transition(
        None,
        _S.ACTIVE,
        "new_shard",
        EpochRule.STARTS,
        OwnerRule.NEW,
        "a node starts an incarnation and creates its home shard",
    ),
    Transition(
        None, _S.ADOPTING, "split", EpochRule.STARTS, OwnerRule.NEW, "a divvy slice is born at its parent's new epoch"
    ),
    *(
        Transition(state, _S.ADOPTING, "reassign", EpochRule.RAISES, OwnerRule.MOVES, why)
        for state, why in (
            (_S.ACTIVE, "the leader moves a dead (or offloaded) node's home shard"),
            (_S.ADOPTING, "its adopter died before it adopted it"),
            (_S.DRAINING, "its adopter died while it drained"),
            (_S.HELD, "its holder died"),
        )
    ),
    *(
        Transition(
            state,
            _S.SPLIT,
            "split",
            EpochRule.RAISES,
            OwnerRule.NONE,
            "policy divvy: the leader splits it over survivors",
        )
        for state in (_S.ACTIVE, _S.ADOPTING, _S.DRAINING, _S.HELD)
    ),
    # The owner at the epoch it was given acts on its own shard: neither changes.
    *(
        Transition(before, after, action, EpochRule.KEEPS, OwnerRule.KEEPS, why)
        for before, after, action, why in (
            (_S.ADOPTING, _S.DRAINING, "adopted", "its adopter fenced it and recovered its WAL"),
            (_S.HELD, _S.DRAINING, "adopted", "its holder could open it at last"),
            (_S.ADOPTING, _S.HELD, "hold", "its adopter fenced it but cannot open it as it is"),
            (
                _S.HELD,
                _S.HELD,
                "hold",
                "a recheck by its holder failed for another reason: held again, with that reason",
            ),
            (
                _S.DRAINING,
                _S.HELD,
                "hold",
                "its owner cannot open it again as it is (adopted, then its runtime failed to start)",
            ),
            (_S.ACTIVE, _S.RETIRED, "retire", "its owner drained it"),
            (_S.DRAINING, _S.RETIRED, "retire", "its adopter drained it"),
            (_S.SPLIT, _S.RETIRED, "retire_split_parent", "every slice is seeded"),
        )
    ),
)
_BY_PAIR: dict[tuple[ShardState | None, ShardState], Transition] = {(t.before, t.after): t for t in TRANSITIONS}


class OwnershipRecord(Protocol):
    """What the rules read of a record: a `ShardOwnership` or one of its history entries."""

    @property
    def owner(self) -> str | None: ...

    @property
    def epoch(self) -> int: ...

    @property
    def state(self) -> ShardState: ...


@dataclass(frozen=True)
class Violation:
    """A broken protocol rule: `rule` names it, `subject` is what breaks it (a shard, a
    plan, a member), `detail` says how, for the operator."""

    rule: str
    subject: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.subject}: {self.detail}"


def transition(before: ShardState | None, after: ShardState) -> Transition | None:
    return _BY_PAIR.get((before, after))


def sources(action: str) -> tuple[ShardState, ...]:
    """The states an existing record may be in for `ownership.<action>` to move it."""
    return tuple(t.before for t in TRANSITIONS if t.action == action and t.before is not None)


def check_transition(
    before: OwnershipRecord | None, after: OwnershipRecord, *, subject: str = "shard"
) -> Violation | None:
    """None when `before -> after` is a row of the table and keeps its epoch and owner
    rules; otherwise the first rule it breaks: `epoch-fell`, `two-owners` (one epoch,
    two owners), `transition` (no such row), `epoch` or `owner`."""

    def broken(rule: str, detail: str) -> Violation:
        return Violation(rule, subject, f"{_describe(before)} -> {_describe(after)}: {detail}")

    if before is not None:
        if after.epoch < before.epoch:
            return broken("epoch-fell", "an epoch never goes back")
        if after.epoch == before.epoch and None not in (before.owner, after.owner) and before.owner != after.owner:
            return broken("two-owners", f"epoch {after.epoch} has two owners")
    row = transition(before.state if before is not None else None, after.state)
    if row is None:
        return broken("transition", "not a transition of the table")
    if before is not None:
        wanted = {EpochRule.RAISES: before.epoch + 1, EpochRule.KEEPS: before.epoch}.get(row.epoch, after.epoch)
        if after.epoch != wanted:
            return broken("epoch", f"{row.action} {row.epoch.value} the epoch: {wanted}, not {after.epoch}")
    owner_kept = {
        OwnerRule.NEW: after.owner is not None,
        OwnerRule.MOVES: after.owner is not None and before is not None and after.owner != before.owner,
        OwnerRule.KEEPS: before is not None and after.owner == before.owner,
        OwnerRule.NONE: after.owner is None,
    }[row.owner]
    if not owner_kept:
        return broken("owner", f"{row.action}: the owner {row.owner.value}")
    return None


def _describe(record: OwnershipRecord | None) -> str:
    if record is None:
        return "(none)"
    return f"{record.state.value}@{record.epoch} ({record.owner or 'no owner'})"


def transition_table_markdown() -> str:
    """The table as Markdown, one row per transition, in the order above."""
    lines = ["| from | to | made by | epoch | owner | when |", "| --- | --- | --- | --- | --- | --- |"]
    for row in TRANSITIONS:
        before = row.before.value if row.before is not None else "(no record)"
        lines.append(
            f"| {before} | {row.after.value} | `ownership.{row.action}` | {row.epoch.value} "
            f"| {row.owner.value} | {row.why} |"
        )
    return "\n".join(lines) + "\n"
