"""The scoring function and the failover planner, without ZooKeeper."""

import zlib

import pytest

from cluster.core import ownership as own
from cluster.core.heartbeat import Heartbeat, QueueLoad
from cluster.core.ownership import HASH_SPACE
from cluster.core.planner import DISK_UNIT, MIN_FREE_DISK, QUEUE_UNIT, in_flight, plan_failover, rank, score

GIB = 1 << 30


def beat(name, *, weight=1.0, cpu=0.0, threads=0, max_threads=4, queued=0, queued_bytes=0, disk=100 * GIB, shards=()):
    return Heartbeat(
        name.split("-")[0],
        name,
        int(name.split("-")[1]),
        queues={"q": QueueLoad(queued, queued_bytes)},
        active_threads=threads,
        max_threads=max_threads,
        cpu=cpu,
        free_disk=disk,
        capacity_weight=weight,
        owned_shards=tuple(shards),
    )


def test_score_matches_its_documented_formula():
    b = beat("a-1", weight=2.0, cpu=0.5, threads=1, max_threads=4, queued=QUEUE_UNIT, queued_bytes=0, disk=DISK_UNIT)
    headroom = ((1 - 1 / 4) + (1 - 0.5)) / 2
    assert score(b) == pytest.approx(2.0 * headroom * (1 / 2) * (1 / 2))
    assert score(b, adopting=2) == pytest.approx(score(b) / 3)


@pytest.mark.parametrize(
    "better, worse",
    [
        (dict(weight=2.0), dict(weight=1.0)),
        (dict(cpu=0.1), dict(cpu=0.9)),
        (dict(threads=0), dict(threads=4)),
        (dict(queued=10), dict(queued=50_000)),
        (dict(queued_bytes=0), dict(queued_bytes=5 * GIB)),
        (dict(disk=500 * GIB), dict(disk=2 * GIB)),
    ],
)
def test_each_factor_moves_the_score_the_documented_way(better, worse):
    assert score(beat("a-1", **better)) > score(beat("a-1", **worse))


def test_a_saturated_node_stays_eligible_but_a_full_disk_does_not():
    assert score(beat("a-1", cpu=1.0, threads=4)) > 0
    assert score(beat("a-1", disk=MIN_FREE_DISK - 1)) == 0.0
    assert score(beat("a-1", weight=0)) == 0.0


def test_ties_are_broken_by_queue_depth_then_incarnation_id():
    same = [beat("c-3"), beat("a-1"), beat("b-2")]
    assert [c.incarnation for c in rank(same)] == ["a-1", "b-2", "c-3"]
    assert [c.incarnation for c in rank(list(reversed(same)))] == ["a-1", "b-2", "c-3"]


def test_rank_is_independent_of_input_order_and_excludes():
    beats = [beat("a-1", weight=1), beat("b-2", weight=3), beat("c-3", weight=2)]
    assert [c.incarnation for c in rank(beats)] == ["b-2", "c-3", "a-1"]
    assert [c.incarnation for c in rank(beats, exclude={"b-2"})] == ["c-3", "a-1"]


def dead_shards(dead="d-9", count=1):
    shards = [own.new_shard(dead, dead, 9, at=0.0)]
    for index in range(1, count):
        adopted = own.adopted(
            own.reassign(own.new_shard(f"x-{index}", f"x-{index}", index, at=0), dead, expected_epoch=index, at=1),
            dead,
            index + 1,
            at=2,
        )
        shards.append(adopted)
    return shards


def test_whole_gives_the_dead_nodes_shard_to_the_best_survivor():
    plan = plan_failover(
        "d-9", dead_shards(), [beat("a-1", weight=1), beat("b-2", weight=3)], plan_id="d-9", leader="a-1", at=5.0
    )
    assert [(m.shard, m.from_owner, m.from_epoch, m.to) for m in plan.moves] == [("d-9", "d-9", 9, "b-2")]


def test_whole_spreads_several_shards_over_equal_survivors():
    plan = plan_failover(
        "d-9",
        dead_shards(count=2),
        [beat("a-1"), beat("b-2")],
        plan_id="d-9",
        leader="a-1",
        at=5.0,
        last_beat=beat("d-9", queued=5000, shards=("d-9", "x-1")),
    )
    assert sorted(m.to for m in plan.moves) == ["a-1", "b-2"]


def test_a_rack_lost_at_once_spreads_over_the_survivors_even_when_one_scores_far_higher():
    """Three nodes die together; the leader plans each in turn, handing on what it
    gave. A node that has just started (idle threads, no backlog) scores ten times its
    busy peers on a loaded machine, yet takes one shard, not all three: the adoptions
    then run in three processes side by side."""
    fresh = beat("n4-10", cpu=1.0, threads=0)
    busy = [beat(f"n{i}-{i}", cpu=1.0, threads=4, queued=300) for i in (6, 7, 8)]
    assert score(fresh) > 3 * 3 * score(busy[0])  # more than enough to outweigh 1 / (1 + adopting)
    adopting: dict[str, int] = {}
    chosen = []
    for dead in ("n1-1", "n3-4", "n5-3"):
        plan = plan_failover(
            dead, dead_shards(dead), [fresh, *busy], plan_id=dead, leader="n6-6", at=5.0, adopting=adopting
        )
        chosen += [move.to for move in plan.moves]
    assert chosen[0] == "n4-10" and len(set(chosen)) == 3


def test_the_dead_nodes_own_shard_goes_first_to_the_best_survivor_before_those_it_had_adopted():
    """Its earlier incarnation's shard sorts before its own by name (n1-65 before n1-68):
    the home shard, which held the sources and the newest intake, still goes to the
    best survivor, the shards it had adopted to the next."""
    earlier = own.adopted(
        own.reassign(own.new_shard("n1-65", "n1-65", 65, at=0), "n1-68", expected_epoch=65, at=1), "n1-68", 66, at=2
    )
    shards = [earlier, own.new_shard("n1-68", "n1-68", 68, at=0.0)]
    survivors = [beat("n2-62"), beat("n3-69", weight=3)]
    plan = plan_failover("n1-68", shards, survivors, plan_id="n1-68", leader="n2-62", at=5.0)
    assert [(m.shard, m.to) for m in plan.moves] == [("n1-68", "n3-69"), ("n1-65", "n2-62")]


def test_a_shard_the_dead_node_was_still_adopting_goes_first_its_outage_began_earlier():
    """The victim's shard was given to n3-14, which died mid-adoption: it goes to the
    best survivor before n3-14's own shard and before the shards it had adopted."""
    drained = own.adopted(
        own.reassign(own.new_shard("n1-15", "n1-15", 15, at=0), "n3-14", expected_epoch=15, at=1), "n3-14", 16, at=2
    )
    adopting = own.reassign(own.new_shard("n2-16", "n2-16", 16, at=0), "n3-14", expected_epoch=16, at=3)
    shards = [drained, adopting, own.new_shard("n3-14", "n3-14", 14, at=0.0)]
    survivors = [beat("n1-17", weight=3), beat("n2-18"), beat("n4-19")]
    plan = plan_failover("n3-14", shards, survivors, plan_id="n3-14", leader="n1-17", at=5.0)
    assert [(m.shard, m.to) for m in plan.moves] == [("n2-16", "n1-17"), ("n3-14", "n2-18"), ("n1-15", "n4-19")]


def test_with_more_shards_than_survivors_the_score_decides_who_takes_a_second():
    adopting: dict[str, int] = {}
    survivors = [beat("a-1", weight=3), beat("b-2")]
    chosen = []
    for dead in ("d-7", "e-8", "f-9"):
        plan = plan_failover(dead, dead_shards(dead), survivors, plan_id=dead, leader="a-1", at=5.0, adopting=adopting)
        chosen += [move.to for move in plan.moves]
    assert chosen == ["a-1", "b-2", "a-1"] and adopting == {"a-1": 2, "b-2": 1}


def test_plan_skips_shards_of_others_retired_ones_and_the_dead_itself():
    retired = own.retire(own.new_shard("d-9", "d-9", 9, at=0), "d-9", 9, at=1)
    other = own.new_shard("a-1", "a-1", 1, at=0)
    plan = plan_failover("d-9", [retired, other], [beat("a-1"), beat("d-9")], plan_id="p", leader="a-1", at=1.0)
    assert plan.moves == ()


def test_no_eligible_survivor_means_no_move():
    plan = plan_failover("d-9", dead_shards(), [beat("a-1", disk=0)], plan_id="p", leader="a-1", at=1.0)
    assert plan.moves == ()


def test_unknown_policy_is_an_error():
    with pytest.raises(ValueError, match="unknown failover policy"):
        plan_failover("d-9", dead_shards(), [beat("a-1")], plan_id="p", leader="a-1", at=1.0, policy="spread")


def test_divvy_splits_in_proportion_to_score_and_covers_the_hash_space():
    survivors = [beat("a-1", weight=1), beat("b-2", weight=3), beat("c-3", weight=0, disk=0)]
    plan = plan_failover("d-9", dead_shards(), survivors, plan_id="d-9", leader="a-1", at=5.0, policy="divvy")
    (move,) = plan.moves
    assert move.to is None and [s.owner for s in move.slices] == ["b-2", "a-1"]
    assert move.slices[0].low == 0 and move.slices[-1].high == HASH_SPACE
    assert all(a.high == b.low for a, b in zip(move.slices, move.slices[1:], strict=False))
    widths = [s.high - s.low for s in move.slices]
    assert widths[0] / HASH_SPACE == pytest.approx(0.75, abs=1e-6)
    assert len({s.child for s in move.slices}) == 2 and all(s.child.startswith("d-9.e10s") for s in move.slices)


def test_divvy_assigns_every_flowfile_id_to_exactly_one_slice():
    survivors = [beat(f"n{i}-{i}", weight=w) for i, w in enumerate([1, 2, 3, 5], start=1)]
    (move,) = plan_failover(
        "d-9", dead_shards(), survivors, plan_id="p", leader="n1-1", at=1.0, policy="divvy", max_slices=4
    ).moves
    for index in range(2000):
        h = zlib.crc32(f"flowfile-{index}".encode())
        assert sum(1 for s in move.slices if s.low <= h < s.high) == 1


def test_divvy_with_one_survivor_or_of_a_child_moves_whole():
    plan = plan_failover("d-9", dead_shards(), [beat("a-1")], plan_id="p", leader="a-1", at=1.0, policy="divvy")
    assert plan.moves[0].to == "a-1" and plan.moves[0].slices == ()
    _, (child, _) = own.split(
        own.new_shard("x-1", "x-1", 1, at=0),
        [("x-1.e2s0", "d-9", 0, 5), ("x-1.e2s1", "b-2", 5, HASH_SPACE)],
        expected_epoch=1,
        at=1,
    )
    plan = plan_failover("d-9", [child], [beat("a-1"), beat("b-2")], plan_id="p", leader="a-1", at=1.0, policy="divvy")
    assert plan.moves[0].to is not None and plan.moves[0].slices == ()


def test_shards_in_flight_are_those_adopting_or_adopted_since_the_owners_last_beat():
    live = {"a-1": beat("a-1", shards=("a-1", "y-5")), "b-2": beat("b-2")}
    adopting = own.reassign(own.new_shard("x-4", "x-4", 4, at=0), "a-1", expected_epoch=4, at=1)
    seen = own.adopted(
        own.reassign(own.new_shard("y-5", "y-5", 5, at=0), "a-1", expected_epoch=5, at=1), "a-1", 6, at=2
    )
    unseen = own.adopted(
        own.reassign(own.new_shard("z-6", "z-6", 6, at=0), "b-2", expected_epoch=6, at=1), "b-2", 7, at=2
    )
    gone = own.reassign(own.new_shard("w-3", "w-3", 3, at=0), "d-9", expected_epoch=3, at=1)  # to a dead node
    home = own.new_shard("a-1", "a-1", 1, at=0)
    assert in_flight([adopting, seen, unseen, gone, home], live) == {"a-1": 1, "b-2": 1}


def test_a_plan_adds_what_it_gives_to_the_in_flight_count_it_was_handed():
    adopting = {"a-1": 1}
    plan = plan_failover(
        "d-9", dead_shards(), [beat("a-1"), beat("b-2")], plan_id="d-9", leader="a-1", at=5.0, adopting=adopting
    )
    assert [m.to for m in plan.moves] == ["b-2"] and adopting == {"a-1": 1, "b-2": 1}
