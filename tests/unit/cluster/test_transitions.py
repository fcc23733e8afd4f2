"""The ownership transition table: what it allows, what `check_transition` reports,
that `ownership` refuses exactly what the table leaves out, and its Markdown."""

from __future__ import annotations

import pytest

from cluster.core import ownership as own
from cluster.core.ownership import HistoryEntry, ShardOwnership
from cluster.core.transitions import (
    TRANSITIONS,
    EpochRule,
    ShardState,
    check_transition,
    sources,
    transition,
    transition_table_markdown,
)

S = ShardState


def entry(state, epoch, owner):
    return HistoryEntry(epoch, owner, state, 0.0)


@pytest.mark.parametrize(
    "before, after",
    [
        (None, entry(S.ACTIVE, 3, "n1-3")),
        (entry(S.ACTIVE, 3, "n1-3"), entry(S.ADOPTING, 4, "n2-5")),
        (entry(S.ADOPTING, 4, "n2-5"), entry(S.ADOPTING, 5, "n3-6")),
        (entry(S.ADOPTING, 4, "n2-5"), entry(S.DRAINING, 4, "n2-5")),
        (entry(S.ADOPTING, 4, "n2-5"), entry(S.HELD, 4, "n2-5")),
        (entry(S.HELD, 4, "n2-5"), entry(S.DRAINING, 4, "n2-5")),
        (entry(S.HELD, 4, "n2-5"), entry(S.HELD, 4, "n2-5")),
        (entry(S.DRAINING, 4, "n2-5"), entry(S.RETIRED, 4, "n2-5")),
        (entry(S.ACTIVE, 3, "n1-3"), entry(S.SPLIT, 4, None)),
        (entry(S.SPLIT, 4, None), entry(S.RETIRED, 4, None)),
    ],
)
def test_the_protocols_transitions_are_allowed(before, after):
    assert check_transition(before, after) is None


@pytest.mark.parametrize(
    "before, after, rule",
    [
        (entry(S.ADOPTING, 5, "n2-5"), entry(S.DRAINING, 4, "n2-5"), "epoch-fell"),
        (entry(S.ACTIVE, 3, "n1-3"), entry(S.ADOPTING, 3, "n2-5"), "two-owners"),
        (entry(S.RETIRED, 3, "n1-3"), entry(S.ADOPTING, 4, "n2-5"), "transition"),
        (entry(S.ACTIVE, 3, "n1-3"), entry(S.DRAINING, 3, "n1-3"), "transition"),
        (None, entry(S.DRAINING, 3, "n1-3"), "transition"),
        (entry(S.ACTIVE, 3, "n1-3"), entry(S.ADOPTING, 5, "n2-5"), "epoch"),
        (entry(S.ADOPTING, 4, "n2-5"), entry(S.DRAINING, 5, "n2-5"), "epoch"),
        (entry(S.ACTIVE, 3, "n1-3"), entry(S.ADOPTING, 4, "n1-3"), "owner"),
        (entry(S.ACTIVE, 3, "n1-3"), entry(S.SPLIT, 4, "n1-3"), "owner"),
        (entry(S.HELD, 4, "n2-5"), entry(S.HELD, 5, "n2-5"), "epoch"),
        (entry(S.HELD, 4, "n2-5"), entry(S.HELD, 4, "n3-6"), "two-owners"),
        (None, entry(S.ACTIVE, 3, None), "owner"),
    ],
)
def test_a_transition_outside_the_table_or_its_rules_is_a_violation_named_for_the_rule(before, after, rule):
    found = check_transition(before, after, subject="shard s")
    assert found is not None and found.rule == rule and found.subject == "shard s"


def test_the_table_has_one_row_per_pair_and_retired_is_final():
    assert len({(row.before, row.after) for row in TRANSITIONS}) == len(TRANSITIONS)
    assert not [row for row in TRANSITIONS if row.before is S.RETIRED]
    assert transition(S.RETIRED, S.ACTIVE) is None
    assert all(row.epoch is EpochRule.STARTS for row in TRANSITIONS if row.before is None)


def record(state: ShardState, owner: str | None = "n1-3", epoch: int = 3) -> ShardOwnership:
    return ShardOwnership("s", owner, epoch, state, (entry(state, epoch, owner),))


@pytest.mark.parametrize("state", list(S))
def test_ownership_refuses_exactly_what_the_table_does_not_allow(state):
    current = record(state, owner=None if state is S.SPLIT else "n1-3")
    outcomes = {
        "reassign": own.reassign(current, "n2-5", expected_epoch=3, at=1.0),
        "split": own.split(current, [("s.e4s0", "n2-5", 0, own.HASH_SPACE)], expected_epoch=3, at=1.0),
        "adopted": own.adopted(current, "n1-3", 3, at=1.0),
        "hold": own.hold(current, "n1-3", 3, at=1.0, reason="damaged"),
        "retire": own.retire(current, "n1-3", 3, at=1.0),
        "retire_split_parent": own.retire_split_parent(current, {}, at=1.0),
    }
    for action, outcome in outcomes.items():
        refused = isinstance(outcome, own.Refusal)
        # A retired shard refuses the claim before the state check; a split one has no owner to claim.
        claims = action in ("adopted", "hold", "retire") and state in (S.RETIRED, S.SPLIT)
        assert refused == (state not in sources(action) or claims), (action, outcome)
        if not refused:
            moved = outcome[0] if isinstance(outcome, tuple) else outcome
            assert check_transition(current, moved) is None, action


def test_the_markdown_table_has_a_row_per_transition_naming_its_function():
    text = transition_table_markdown()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(TRANSITIONS)
    assert "| active | adopting | `ownership.reassign` | raises | moves |" in text
    assert "| (no record) | active | `ownership.new_shard` | starts | new |" in text
