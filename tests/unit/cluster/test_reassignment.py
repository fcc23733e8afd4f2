"""The leader's decisions and plan resumption, without ZooKeeper."""

from dataclasses import replace

from cluster.core import ownership as own
from cluster.core.heartbeat import Heartbeat
from cluster.core.plans import pending_moves
from cluster.core.reassignment import (
    ExecuteMove,
    FinishPlan,
    LeaderView,
    RetireSplitParent,
    RevisePlan,
    WritePlan,
    decide,
)


def beat(name, weight=1.0):
    return Heartbeat(
        name.split("-")[0], name, int(name.split("-")[1]), free_disk=100 << 30, capacity_weight=weight, max_threads=4
    )


def view(live, shards, plans=(), policy="whole"):
    return LeaderView(
        "a-1",
        100.0,
        {b.incarnation: b for b in live},
        {s.shard: s for s in shards},
        {p.plan_id: p for p in plans},
        {},
        policy,
    )


def apply(shards, move):
    """What the registry's compare-and-set would do, for a whole move."""
    shards = {s.shard: s for s in shards}
    shards[move.shard] = own.reassign(shards[move.shard], move.to, expected_epoch=move.from_epoch, at=1.0)
    return list(shards.values())


def test_nothing_to_do_when_every_owner_is_alive():
    shards = [own.new_shard("a-1", "a-1", 1, at=0), own.new_shard("b-2", "b-2", 2, at=0)]
    assert decide(view([beat("a-1"), beat("b-2")], shards)) == []


def test_a_dead_owner_gets_a_plan_written_before_its_moves():
    shards = [own.new_shard("a-1", "a-1", 1, at=0), own.new_shard("d-3", "d-3", 3, at=0)]
    out = decide(view([beat("a-1"), beat("b-2", weight=2)], shards))
    assert isinstance(out[0], WritePlan) and out[0].plan.plan_id == "d-3"
    assert [(type(i), i.move.shard, i.move.to) for i in out[1:]] == [(ExecuteMove, "d-3", "b-2")]


def test_a_new_leader_finishes_a_half_done_plan_and_moves_nothing_twice():
    shards = [
        own.new_shard("d-3", "d-3", 3, at=0),
        own.adopted(own.reassign(own.new_shard("x-2", "x-2", 2, at=0), "d-3", expected_epoch=2, at=0), "d-3", 3, at=0),
    ]
    live = [beat("a-1"), beat("b-2")]
    first = decide(view(live, shards))
    plan = first[0].plan
    assert len(plan.moves) == 2
    # The old leader made the first move and died; the new one sees the plan open.
    shards = apply(shards, plan.moves[0])
    second = decide(view(live, shards, [plan]))
    assert [i.move for i in second if isinstance(i, ExecuteMove)] == [plan.moves[1]]
    assert not any(isinstance(i, WritePlan) for i in second)
    shards = apply(shards, plan.moves[1])
    assert pending_moves(plan, {s.shard: s for s in shards}) == []
    # The targets now own the shards (alive): the plan is finished.
    assert decide(view(live, shards, [plan])) == [FinishPlan("d-3")]


def test_a_death_already_planned_is_carried_out_before_a_later_one_is_planned():
    """The leader planned the victim's death and died before it moved the shard; the
    next leader moves that shard before it plans the leader's own death, although the
    leader's name sorts first: the victim's shard reaches the adopter's workers first."""
    victim = own.new_shard("n2-10", "n2-10", 10, at=0)
    adopted = own.reassign(own.new_shard("n3-3", "n3-3", 3, at=0), "n1-6", expected_epoch=3, at=0)
    leaders = [own.new_shard("n1-6", "n1-6", 6, at=0), own.adopted(adopted, "n1-6", 4, at=0)]
    live = [beat("n1-6"), beat("n3-11", weight=2)]
    earlier = decide(replace(view(live, [victim, *leaders]), at=90.0))[0].plan
    assert [m.to for m in earlier.moves] == ["n3-11"]
    now = replace(view([beat("n3-11", weight=2)], [victim, *leaders], [earlier]), leader="n3-11")
    moved = [i.move.shard for i in decide(now) if isinstance(i, ExecuteMove)]
    assert moved == ["n2-10", "n1-6", "n3-3"]


def test_a_plan_whose_target_died_is_revised_to_a_live_target():
    shards = [own.new_shard("d-3", "d-3", 3, at=0)]
    plan = decide(view([beat("a-1"), beat("b-2", weight=5)], shards))[0].plan
    assert plan.moves[0].to == "b-2"
    out = decide(view([beat("a-1")], shards, [plan]))
    assert isinstance(out[0], RevisePlan) and "b-2" in out[0].reason
    assert [(i.move.shard, i.move.to) for i in out[1:]] == [("d-3", "a-1")]


def test_a_shard_moved_to_a_target_that_then_died_gets_a_plan_of_its_own():
    first = decide(view([beat("b-2")], [own.new_shard("d-3", "d-3", 3, at=0)]))
    shards = apply([own.new_shard("d-3", "d-3", 3, at=0)], first[1].move)
    assert shards[0].owner == "b-2"
    out = decide(view([beat("a-1")], shards))
    assert isinstance(out[0], WritePlan) and out[0].plan.dead == "b-2"
    assert out[1].move.from_epoch == 4 and out[1].move.to == "a-1"


def test_divvy_moves_and_retires_the_split_parent_once_children_are_seeded():
    shards = [own.new_shard("d-3", "d-3", 3, at=0)]
    out = decide(view([beat("a-1"), beat("b-2")], shards, policy="divvy"))
    move = out[1].move
    assert len(move.slices) == 2
    parent, children = own.split(
        shards[0], [(s.child, s.owner, s.low, s.high) for s in move.slices], expected_epoch=3, at=1
    )
    seeded = [own.adopted(c, c.owner, c.epoch, at=2) for c in children]
    out = decide(view([beat("a-1"), beat("b-2")], [parent, *seeded], [out[0].plan]))
    assert out == [FinishPlan("d-3"), RetireSplitParent("d-3")]
    out = decide(view([beat("a-1"), beat("b-2")], [parent, seeded[0], children[1]]))
    assert RetireSplitParent("d-3") not in out


def test_no_eligible_survivor_writes_no_plan():
    shards = [own.new_shard("d-3", "d-3", 3, at=0)]
    assert decide(view([replace(beat("a-1"), free_disk=0)], shards)) == []


def test_nodes_that_die_together_have_their_shards_spread_over_the_survivors():
    """A rack lost: three dead owners, planned in one decision, and a fourth shard
    already being adopted by the best survivor. Without the in-flight count every plan
    would pick that one survivor (the heartbeats do not change between the plans)."""
    live = [beat("a-1"), beat("b-2"), beat("c-3"), beat("e-5", weight=1.5)]
    adopting = own.reassign(own.new_shard("x-7", "x-7", 7, at=0), "e-5", expected_epoch=7, at=1.0)
    dead = [own.new_shard(name, name, int(name[-1]), at=0) for name in ("d-4", "f-6", "g-8")]
    out = decide(view(live, dead + [adopting]))
    moves = {i.move.shard: i.move.to for i in out if isinstance(i, ExecuteMove)}
    assert sorted(moves) == ["d-4", "f-6", "g-8"]
    assert sorted(moves.values()) == ["a-1", "b-2", "c-3"]  # e-5 scores 1.5 / (1 + 1): last
    # The same decision with nothing in flight gives the strongest survivor the first.
    out = decide(view(live, dead))
    assert [i.move.to for i in out if isinstance(i, ExecuteMove)][0] == "e-5"
