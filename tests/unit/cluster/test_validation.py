"""`validate_cluster` over hand-built views: for each rule, a view of the protocol at
work that breaks nothing, and the same view with one thing planted that breaks it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cluster.core import ownership as own
from cluster.core.decommission import Decommission
from cluster.core.heartbeat import Heartbeat, QueueLoad
from cluster.core.ownership import HISTORY_LIMIT, HistoryEntry, ShardState
from cluster.core.plans import FailoverPlan, Move
from cluster.core.rolls import CONNECTING, DONE, OFFLOADING, WAITING, Roll, RollStep
from cluster.core.validation import ClusterView, validate_cluster


def beat(incarnation: str, *, owned=(), queues=None, sent_at: float = 50.0) -> Heartbeat:
    node, _, epoch = incarnation.rpartition("-")
    return Heartbeat(
        node,
        incarnation,
        int(epoch),
        sent_at=sent_at,
        owned_shards=tuple(owned),
        queues={key: QueueLoad(count) for key, count in (queues or {}).items()},
    )


def failed_over() -> ClusterView:
    """n1-1 died; its home shard went to n2-2 (draining there), n3-3 runs its own; n2-2 leads."""
    moved = own.reassign(own.new_shard("n1-1", "n1-1", 1, at=1.0), "n2-2", expected_epoch=1, at=10.0)
    moved = own.adopted(moved, "n2-2", 2, at=11.0)
    shards = {
        "n1-1": moved,
        "n2-2": own.new_shard("n2-2", "n2-2", 2, at=2.0),
        "n3-3": own.new_shard("n3-3", "n3-3", 3, at=3.0),
    }
    plan = FailoverPlan("n1-1", "n1-1", "n2-2", 9.0, "whole", (Move("n1-1", "n1-1", 1, "n2-2"),), status="done")
    members = {
        "n2-2": beat("n2-2", owned=("n1-1", "n2-2"), queues={"n1-1/rewrite/success/put": 5}),
        "n3-3": beat("n3-3", owned=("n3-3",)),
    }
    return ClusterView("c1", shards=shards, plans={"n1-1": plan}, members=members, contenders=("n2-2", "n3-3"))


def planted(shard, *, at: float, **changes):
    """`shard` changed as no transition of `ownership` would, its history following."""
    moved = replace(shard, **changes)
    return replace(moved, history=shard.history + (HistoryEntry(moved.epoch, moved.owner, moved.state, at),))


def rules(view: ClusterView) -> list[str]:
    return [violation.rule for violation in validate_cluster(view)]


def with_shard(view: ClusterView, shard) -> ClusterView:
    return replace(view, shards={**view.shards, shard.shard: shard})


def test_a_cluster_after_a_failover_breaks_no_rule():
    assert validate_cluster(failed_over()) == []


def test_an_unreadable_znode_is_reported():
    assert rules(replace(failed_over(), unreadable={"shard n4-4": "ValueError: no JSON"})) == ["unreadable"]


def test_a_record_that_is_not_its_newest_history_entry_is_reported():
    view = failed_over()
    assert rules(with_shard(view, replace(view.shards["n1-1"], epoch=7))) == ["record"]


def test_an_epoch_written_backwards_is_reported():
    view = failed_over()
    shard = view.shards["n1-1"]
    back = planted(shard, at=12.0, epoch=0)
    found = validate_cluster(with_shard(view, back))
    assert [v.rule for v in found] == ["epoch-fell"] and found[0].subject == "shard n1-1"
    assert "draining@2 (n2-2) -> draining@0 (n2-2)" in found[0].detail


def test_two_owners_at_one_epoch_are_reported():
    view = failed_over()
    stolen = planted(view.shards["n1-1"], at=12.0, owner="n3-3", state=ShardState.ADOPTING)
    # n2-2 still runs it: while it does, n3-3 owning it is a second violation.
    assert rules(with_shard(view, stolen)) == ["two-owners", "runner-not-owner"]


def test_a_history_step_the_table_lacks_is_reported():
    view = failed_over()
    revived = planted(own.retire(view.shards["n1-1"], "n2-2", 2, at=12.0), at=13.0, state=ShardState.DRAINING)
    assert "transition" in rules(with_shard(view, revived))


def test_a_full_history_is_judged_from_its_first_kept_entry():
    shard = own.new_shard("n1-1", "n1-1", 1, at=1.0)
    for epoch in range(1, HISTORY_LIMIT + 4):  # the creation entry falls out
        shard = own.reassign(shard, f"n{epoch % 3 + 2}-{epoch + 10}", expected_epoch=epoch, at=float(epoch))
    assert len(shard.history) == HISTORY_LIMIT and shard.history[0].state is ShardState.ADOPTING
    assert validate_cluster(ClusterView("c1", shards={shard.shard: shard})) == []


def split_view(*, seeded: bool = True) -> ClusterView:
    parent, children = own.split(
        own.new_shard("n1-1", "n1-1", 1, at=1.0),
        [("n1-1.e2s0", "n2-2", 0, 1 << 31), ("n1-1.e2s1", "n3-3", 1 << 31, 1 << 32)],
        expected_epoch=1,
        at=10.0,
    )
    if seeded:
        children = [own.adopted(child, child.owner, 2, at=11.0) for child in children]
    shards = {shard.shard: shard for shard in [parent, *children]}
    return ClusterView("c1", shards=shards)


def test_a_split_parent_and_its_slices_keep_each_other():
    view = split_view()
    assert validate_cluster(view) == []
    assert rules(replace(view, shards={k: v for k, v in view.shards.items() if k != "n1-1.e2s0"})) == ["split-family"]
    assert rules(replace(view, shards={k: v for k, v in view.shards.items() if k != "n1-1"})) == [
        "split-family",
        "split-family",
    ]


def test_a_split_parent_retired_before_its_slices_were_seeded_is_reported():
    view = split_view()
    retired = own.retire_split_parent(view.shards["n1-1"], view.shards, at=12.0)
    assert validate_cluster(with_shard(view, retired)) == []
    unseeded = split_view(seeded=False)
    early = planted(unseeded.shards["n1-1"], at=12.0, state=ShardState.RETIRED)
    assert rules(with_shard(unseeded, early)) == ["retired-unaccounted"]


def test_a_retired_shard_still_counted_queued_after_its_retirement_is_reported():
    view = failed_over()
    retired = own.retire(view.shards["n1-1"], "n2-2", 2, at=40.0)
    stale = replace(view.members["n2-2"], sent_at=39.0)  # sent before it retired: no evidence
    assert validate_cluster(replace(with_shard(view, retired), members={**view.members, "n2-2": stale})) == []
    found = validate_cluster(with_shard(view, retired))  # the beat of 50.0 still counts 5 queued
    assert [v.rule for v in found] == ["retired-unaccounted"] and "5 FlowFile(s)" in found[0].detail


def test_one_shard_run_by_two_members_or_by_one_that_does_not_own_it_is_reported():
    view = failed_over()
    members = {**view.members, "n3-3": beat("n3-3", owned=("n3-3", "n1-1"))}
    assert rules(replace(view, members=members)) == ["two-runners", "runner-not-owner"]


def test_a_plan_for_a_live_member_or_done_too_early_is_reported():
    view = failed_over()
    assert rules(replace(view, members={**view.members, "n1-1": beat("n1-1")})) == ["plan-for-live"]
    early = replace(view.plans["n1-1"], moves=(Move("n2-2", "n2-2", 2, "n3-3"),), dead="n2-2")
    assert rules(
        replace(view, plans={"n2-2": early}, members={"n3-3": view.members["n3-3"]}, contenders=("n3-3",))
    ) == ["plan-done-early"]


def test_a_node_whose_decommission_finished_owns_nothing_and_is_no_member():
    view = failed_over()
    asked = Decommission("n1", 5.0)
    assert validate_cluster(replace(view, decommissions={"n1": asked, "n3": asked})) == []
    finished = Decommission("n3", 5.0, finished_at=6.0)
    assert rules(replace(view, decommissions={"n3": finished})) == ["decommissioned", "decommissioned"]


def test_the_leader_is_a_live_member_that_campaigns_once():
    view = failed_over()
    assert rules(replace(view, contenders=("n1-1", "n2-2"))) == ["leader"]
    assert rules(replace(view, contenders=("n2-2", "n3-3", "n3-3"))) == ["leader"]
    assert validate_cluster(replace(view, contenders=())) == []


def roll(*states: str, state: str = "running") -> Roll:
    steps = tuple(RollStep(f"n{i}-{i}", f"n{i}", state=step) for i, step in enumerate(states, 1))
    return Roll("v2@1", "v2", "n1-1", 1.0, steps, state=state)


@pytest.mark.parametrize(
    "planted, broken",
    [
        (roll(DONE, OFFLOADING, WAITING), False),
        (roll(DONE, DONE, state=DONE), False),
        (roll(OFFLOADING, CONNECTING), True),
        (roll(DONE, WAITING, state=DONE), True),
    ],
)
def test_a_roll_moves_one_step_at_a_time_and_ends_with_none_left(planted, broken):
    assert rules(replace(failed_over(), roll=planted)) == (["roll"] if broken else [])


def test_a_held_shard_keeps_its_owner_and_epoch():
    view = failed_over()
    held = own.hold(
        own.reassign(view.shards["n1-1"], "n3-3", expected_epoch=2, at=20.0), "n3-3", 3, at=21.0, reason="damaged"
    )
    members = {"n3-3": beat("n3-3", owned=("n3-3",))}
    assert validate_cluster(replace(with_shard(view, held), members=members, contenders=("n3-3",))) == []
    back = planted(held, at=22.0, epoch=2)
    assert rules(replace(with_shard(view, back), members=members, contenders=("n3-3",))) == ["epoch-fell"]
