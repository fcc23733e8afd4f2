"""Decommissioning and the retention of kept directories, as pure decisions
(`cluster.core.decommission`): what is kept, what the leader hands over and deletes,
and when; no ZooKeeper, no HDFS, no clock."""

from dataclasses import replace

import pytest

from cluster.core import ownership as own
from cluster.core.decommission import (
    NOTES_LIMIT,
    Collect,
    Decommission,
    DecommissionSteps,
    KeptDirectory,
    KeptView,
    decommission_refusal,
    draining,
    finished,
    kept_directories,
    known_node,
    name_refusal,
    node_of,
    origin_of,
    plan_kept,
    with_notes,
)
from cluster.core.heartbeat import Heartbeat
from cluster.core.plans import FailoverPlan, Move
from cluster.core.reassignment import ExecuteMove, LeaderView, WritePlan, decide
from cluster.failover.decommission import NodeDecommissioned

DAY = 86400.0
RETENTION = 7 * DAY


def beat(incarnation: str) -> Heartbeat:
    node, _, epoch = incarnation.rpartition("-")
    return Heartbeat(node, incarnation, int(epoch), free_disk=100 << 30, max_threads=4)


def retired(shard: str, adopter: str, epoch: int) -> own.ShardOwnership:
    """`shard` (a home shard at `epoch`) adopted by `adopter`, drained and retired."""
    moved = own.reassign(own.new_shard(shard, shard, epoch, at=0), adopter, expected_epoch=epoch, at=1)
    return own.retire(own.adopted(moved, adopter, epoch + 1, at=2), adopter, epoch + 1, at=3)


def draining_at(shard: str, adopter: str, epoch: int) -> own.ShardOwnership:
    moved = own.reassign(own.new_shard(shard, shard, epoch, at=0), adopter, expected_epoch=epoch, at=1)
    return own.adopted(moved, adopter, epoch + 1, at=2)


def done_plan(dead: str) -> FailoverPlan:
    return FailoverPlan(
        dead, dead, "n1-1", 1.0, "whole", (Move(dead, dead, 3, "n1-1"),), status="done", finished_at=2.0
    )


def view(
    *, kept=(), modified=None, shards=(), plans=(), live=("n1-20",), decommissions=(), now=10 * DAY, directories=None
):
    directories = tuple(k.name for k in kept) if directories is None else tuple(directories)
    return KeptView(
        directories,
        tuple(kept),
        dict(modified or {}),
        {s.shard: (s, 5) for s in shards},
        {p.plan_id: (p, 7) for p in plans},
        frozenset(live),
        {d.node: (d, 1) for d in decommissions},
        now,
    )


# -- the record and names -------------------------------------------------------------------------
def test_a_record_reads_back_as_written_and_says_its_state():
    record = Decommission("n3", 100.5, "custody node decommission on ops1")
    assert Decommission.from_json(record.to_json()) == record
    assert record.state == "decommissioning"
    done = finished(with_notes(record, ["n3-17: dropped ..."]), 200.0)
    assert (done.state, done.finished_at, done.notes) == ("decommissioned", 200.0, ("n3-17: dropped ...",))
    assert finished(done, 300.0) is done  # the first finish stands
    assert Decommission.from_json(done.to_json()) == done


def test_a_record_keeps_its_newest_notes_only():
    record = with_notes(Decommission("n3", 1.0), [f"note {i}" for i in range(NOTES_LIMIT + 5)])
    assert record.notes == tuple(f"note {i}" for i in range(5, NOTES_LIMIT + 5))
    assert with_notes(record, []) is record


@pytest.mark.parametrize(
    "name, origin",
    [
        ("n3-17", ("n3-17", "n3")),
        ("n3-17-fenced-18", ("n3-17", "n3")),
        ("n3-17.e18s1", ("n3-17.e18s1", "n3")),
        ("n3-17.e18s1-fenced-20", ("n3-17.e18s1", "n3")),
        ("my_node-2-7", ("my_node-2-7", "my_node-2")),
    ],
)
def test_every_name_a_shard_directory_has_leads_to_the_node_it_was_kept_for(name, origin):
    shard, incarnation = origin_of(name)
    assert (shard, incarnation.node) == origin
    assert node_of(name) == origin[1]


@pytest.mark.parametrize("name", ["probes", "n3", "spark", "n3-x", ""])
def test_a_name_no_incarnation_gave_belongs_to_no_node(name):
    assert origin_of(name) is None and node_of(name) is None


def test_a_node_is_known_by_anything_that_names_it_and_a_kept_directory_outlives_every_znode():
    assert known_node("n3", ["n3-21"], [], [], [], [])
    assert known_node("n3", [], ["n3-17"], [], [], [])
    assert known_node("n3", [], ["n1-4"], ["n3-17"], [], [])
    assert known_node("n3", [], [], [], ["n3-17"], [])
    assert known_node("n3", [], [], [], [], ["n3-17-fenced-18"])
    assert not known_node("n3", ["n1-20", "n33-4"], ["n1-20"], ["n1-20", None], ["n2-9"], ["n1-20", "probes"])


def test_a_name_no_node_can_have_is_refused_by_what_is_wrong_with_it():
    assert name_refusal("n3") is None
    assert "no node can be called 'n3-17'" in name_refusal("n3-17")
    assert "no node can be called 'a b'" in name_refusal("a b")


def test_the_only_member_cannot_be_decommissioned_while_it_is_up():
    assert "only member" in decommission_refusal("n1", [beat("n1-20")])
    assert decommission_refusal("n1", [beat("n1-20"), beat("n2-21")]) is None
    assert decommission_refusal("n3", [beat("n1-20")]) is None  # down: its shards went to n1 already
    assert "only member" in decommission_refusal("n1", [beat("n1-20"), beat("n2-21")], decommissioned=["n2"])


def test_a_decommissioned_node_that_is_up_drains_and_the_leader_gives_it_nothing():
    live = {"n1-20": beat("n1-20"), "n2-21": beat("n2-21")}
    assert draining({"n2", "n9"}, live) == frozenset({"n2-21"})
    shards = {
        s.shard: s
        for s in (
            own.new_shard("n1-20", "n1-20", 20, at=0),
            own.new_shard("n2-21", "n2-21", 21, at=0),
            own.new_shard("n3-17", "n3-17", 17, at=0),
        )
    }
    plain = LeaderView("n1-20", 5.0, live, shards, {}, {}, "whole")
    moves = [i.move.to for i in decide(plain) if isinstance(i, ExecuteMove)]
    assert moves == ["n1-20"] or moves == ["n2-21"]
    for leaving in ("n1-20", "n2-21"):
        out = decide(replace(plain, draining=frozenset({leaving})))
        assert [i.move.to for i in out if isinstance(i, ExecuteMove)] == [({"n1-20", "n2-21"} - {leaving}).pop()]
    assert not any(isinstance(i, WritePlan) for i in decide(replace(plain, draining=frozenset(live))))
    # A draining node's own shards stay its own while it is up: they are not orphans.
    assert (
        decide(replace(plain, shards={k: v for k, v in shards.items() if k != "n3-17"}, draining=frozenset({"n2-21"})))
        == []
    )


def test_a_node_refused_for_being_decommissioned_is_told_to_run_connect():
    message = str(NodeDecommissioned("c1", Decommission("n3", 1_700_000_000.0, "the admin API of n1")))
    assert "node n3 was decommissioned from cluster c1" in message and "by the admin API of n1" in message
    assert "custody node connect n3 --config NODE.toml" in message
    assert "/api/v1/cluster/nodes/n3/connect" in message


# -- what is kept ---------------------------------------------------------------------------------
def test_a_retired_shards_directory_of_a_node_that_is_away_is_kept_for_it():
    shards = {s.shard: s for s in (retired("n3-17", "n1-20", 17), own.new_shard("n1-20", "n1-20", 20, at=0))}
    found = kept_directories(["n3-17-fenced-18", "n1-20"], shards, ["n1-20"])
    assert found == [KeptDirectory("n3-17-fenced-18", "n3-17", "n3")]


def test_a_directory_whose_znode_was_collected_is_kept_whatever_its_epoch():
    # Listed before the znodes were read, so its znode was there: gone since, it was
    # retired and collected (even if its incarnation was the newest drawn).
    assert kept_directories(["n3-17-fenced-18", "n3-21"], {}, ["n1-20"]) == [
        KeptDirectory("n3-17-fenced-18", "n3-17", "n3"),
        KeptDirectory("n3-21", "n3-21", "n3"),
    ]


@pytest.mark.parametrize("state", ["draining", "adopting", "active", "held"])
def test_a_shard_still_being_run_or_adopted_keeps_its_directory_out_of_it(state):
    shard = draining_at("n3-17", "n1-20", 17)
    if state == "adopting":
        shard = own.reassign(own.new_shard("n3-17", "n3-17", 17, at=0), "n1-20", expected_epoch=17, at=1)
    elif state == "active":
        shard = own.new_shard("n3-17", "n3-17", 17, at=0)
    elif state == "held":
        shard = replace(shard, state=own.ShardState.HELD)
    assert kept_directories(["n3-17-fenced-18"], {"n3-17": shard}, ["n1-20"]) == []


def test_a_node_that_is_a_member_again_reads_and_deletes_its_own():
    shards = {"n3-17": retired("n3-17", "n1-20", 17)}
    assert kept_directories(["n3-17-fenced-18"], shards, ["n1-20", "n3-25"]) == []


def test_a_divvy_slice_and_names_that_are_no_shards_directory():
    found = kept_directories(["n3-17.e18s0-fenced-19", "probes", "tmp.x", "n3"], {}, ["n1-20"])
    assert found == [KeptDirectory("n3-17.e18s0-fenced-19", "n3-17.e18s0", "n3")]


# -- the leader's plan ----------------------------------------------------------------------------
KEPT = KeptDirectory("n3-17-fenced-18", "n3-17", "n3")
N3 = Decommission("n3", 5 * DAY, "ops")


def test_a_decommissioned_node_that_is_up_is_waited_for_while_it_leaves():
    plan = plan_kept(
        view(live=("n1-20", "n3-25"), decommissions=[N3], shards=[own.new_shard("n3-25", "n3-25", 25, at=0)]), RETENTION
    )
    assert plan.decommissions == () and "n3-25 still a member" in plan.waiting["n3"] and plan.busy


def test_a_gone_node_is_handed_over_then_its_records_deleted_then_it_is_finished():
    shards = [retired("n3-17", "n1-20", 17), own.new_shard("n1-20", "n1-20", 20, at=0)]
    plan = plan_kept(view(kept=[KEPT], shards=shards, plans=[done_plan("n3-17")], decommissions=[N3]), RETENTION)
    assert plan.decommissions == (DecommissionSteps("n3", (KEPT,), (("n3-17", 5),), (("n3-17", 7),), True),)
    assert plan.collect == () and plan.waiting == {} and plan.busy


def test_its_shards_still_draining_are_waited_for_and_what_is_kept_already_is_handed_over_meanwhile():
    older = KeptDirectory("n3-12-fenced-13", "n3-12", "n3")
    shards = [draining_at("n3-17", "n1-20", 17), retired("n3-12", "n2-14", 12)]
    plan = plan_kept(view(kept=[older], shards=shards, plans=[done_plan("n3-17")], decommissions=[N3]), RETENTION)
    assert plan.decommissions == (DecommissionSteps("n3", (older,), (), (), False),)
    assert "shard n3-17 (draining, owner n1-20)" in plan.waiting["n3"]


def test_an_open_plan_of_the_node_and_a_shard_it_had_adopted_are_waited_for():
    open_plan = replace(done_plan("n3-17"), status="open", finished_at=None)
    adopted_by_it = draining_at("n2-9", "n3-17", 9)
    plan = plan_kept(view(shards=[adopted_by_it], plans=[open_plan], decommissions=[N3]), RETENTION)
    assert plan.decommissions == ()
    assert "shard n2-9 (draining, owner n3-17)" in plan.waiting["n3"] and "plan n3-17 (open)" in plan.waiting["n3"]


def test_a_retired_parent_goes_only_with_its_slices():
    parent = retired("n3-17", "n1-20", 17)
    child = replace(
        draining_at("n3-17.e18s0", "n1-20", 18), source=own.SliceSource("n3-17", 18, 0, own.HASH_SPACE)
    )  # an n3 slice, still draining at n1
    plan = plan_kept(view(shards=[parent, child], decommissions=[N3]), RETENTION)
    assert plan.decommissions == () and "n3-17.e18s0 (draining" in plan.waiting["n3"]
    child = own.retire(child, "n1-20", 19, at=4)
    plan = plan_kept(view(shards=[parent, child], decommissions=[N3]), RETENTION)
    assert plan.decommissions[0].shards == (("n3-17", 5), ("n3-17.e18s0", 5))


def test_a_decommission_is_not_finished_while_a_directory_of_the_node_is_left_unjudged():
    unjudged = "n3-25-fenced-26"  # listed, but not judged kept by this round's view
    plan = plan_kept(view(kept=[KEPT], directories=[KEPT.name, unjudged], decommissions=[N3]), RETENTION)
    assert plan.decommissions == (DecommissionSteps("n3", (KEPT,), (), (), False),)
    assert "directory n3-25-fenced-26 (its shard not settled yet)" in plan.waiting["n3"]


def test_a_finished_decommission_with_nothing_left_is_left_alone():
    plan = plan_kept(view(decommissions=[finished(N3, 6 * DAY)]), RETENTION)
    assert plan == plan_kept(view(), RETENTION) and not plan.busy
    # One that is not marked finished yet is, even with nothing to delete.
    assert plan_kept(view(decommissions=[N3]), RETENTION).decommissions == (DecommissionSteps("n3", (), (), (), True),)


def test_the_retention_collects_what_was_kept_for_a_node_away_longer_and_nothing_sooner():
    now = 10 * DAY
    for away, collected in ((RETENTION - 1, False), (RETENTION, True), (RETENTION + DAY, True)):
        plan = plan_kept(view(kept=[KEPT], modified={KEPT.name: now - away}, now=now), RETENTION)
        assert plan.collect == ((Collect(KEPT, away),) if collected else ()), away
        assert plan.decommissions == () and not plan.busy
    # A directory whose times could not be read is decided on a later round.
    assert plan_kept(view(kept=[KEPT], now=now), RETENTION).collect == ()


def test_a_decommissioned_nodes_directories_are_handed_over_whatever_their_age_never_collected():
    plan = plan_kept(view(kept=[KEPT], modified={KEPT.name: 0.0}, decommissions=[N3]), RETENTION)
    assert plan.collect == () and plan.decommissions[0].hand_over == (KEPT,)
