"""Properties of the planner, the ownership state machine and the leader's decisions,
over clusters and operation sequences Hypothesis makes up (the profile's
max_examples: 30 on a developer's machine, 60 in CI; deadline off)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from cluster.core import ownership as own
from cluster.core.heartbeat import Heartbeat, QueueLoad
from cluster.core.ownership import HASH_SPACE, Refusal, ShardState
from cluster.core.planner import MIN_FREE_DISK, plan_failover, rank
from cluster.core.reassignment import ExecuteMove, LeaderView, WritePlan, decide
from cluster.core.transitions import check_transition
from cluster.core.validation import ClusterView, validate_cluster

GIB = 1 << 30


@st.composite
def heartbeats(draw, names):
    """A live member's heartbeat for each name, some of them not eligible (no disk, no weight)."""
    return [
        Heartbeat(
            name.rpartition("-")[0],
            name,
            int(name.rpartition("-")[2]),
            queues={"q": QueueLoad(draw(st.integers(0, 50_000)), draw(st.integers(0, 4 * GIB)))},
            active_threads=draw(st.integers(0, 8)),
            max_threads=8,
            cpu=draw(st.floats(0, 1)),
            free_disk=draw(st.sampled_from([0, MIN_FREE_DISK - 1, MIN_FREE_DISK, 5 * GIB, 500 * GIB])),
            capacity_weight=draw(st.sampled_from([0.0, 0.5, 1.0, 3.0])),
        )
        for name in names
    ]


@st.composite
def clusters(draw):
    """(live heartbeats, dead incarnations, shards): each node's home shard, its own
    incarnation's; some dead ones' shards already retired; a few nodes draining."""
    count = draw(st.integers(2, 7))
    names = [f"n{i}-{i + 10}" for i in range(count)]
    dead = draw(st.lists(st.sampled_from(names), min_size=1, max_size=count - 1, unique=True))
    live = draw(heartbeats([name for name in names if name not in dead]))
    shards = {}
    for name in names:
        shard = own.new_shard(name, name, int(name.rpartition("-")[2]), at=1.0)
        if name in dead and draw(st.booleans()) and draw(st.booleans()):
            shard = own.retire(shard, name, shard.epoch, at=2.0)
        shards[name] = shard
    draining = frozenset(draw(st.lists(st.sampled_from([beat.incarnation for beat in live]), unique=True)))
    return live, dead, shards, draining


def view_of(live, shards, draining=frozenset(), policy="whole") -> LeaderView:
    return LeaderView(
        "leader-1", 100.0, {beat.incarnation: beat for beat in live}, dict(shards), {}, {}, policy, draining
    )


@given(clusters(), st.sampled_from(["whole", "divvy"]))
def test_every_shard_of_a_dead_member_goes_to_exactly_one_eligible_live_member(cluster, policy):
    live, dead, shards, _ = cluster
    eligible = {candidate.incarnation for candidate in rank(live)}
    for name in dead:
        plan = plan_failover(name, list(shards.values()), live, plan_id=name, leader="leader-1", at=5.0, policy=policy)
        owned = sorted(s.shard for s in shards.values() if s.owner == name and s.state is not ShardState.RETIRED)
        moved = sorted(move.shard for move in plan.moves)
        assert moved == (owned if eligible else [])  # each shard in one move, or none while nobody is eligible
        for move in plan.moves:
            assert set(move.targets) <= eligible and name not in move.targets
            if move.slices:  # a divvy covers the hash space once, over distinct survivors
                edges = sorted((s.low, s.high) for s in move.slices)
                assert edges[0][0] == 0 and edges[-1][1] == HASH_SPACE
                assert all(a[1] == b[0] for a, b in zip(edges, edges[1:], strict=False))
                assert len(set(move.targets)) == len(move.targets)


@given(clusters(), st.randoms(use_true_random=False))
def test_planning_is_deterministic_whatever_order_the_heartbeats_come_in(cluster, shuffler: random.Random):
    live, dead, shards, draining = cluster
    shuffled = list(live)
    shuffler.shuffle(shuffled)
    assert decide(view_of(live, shards, draining)) == decide(view_of(shuffled, shards, draining))
    assert decide(view_of(live, shards, draining)) == decide(view_of(live, shards, draining))


@given(clusters(), st.sampled_from(["whole", "divvy"]))
def test_the_leader_never_hands_a_shard_to_a_dead_or_decommissioned_member_and_its_moves_keep_the_protocol(
    cluster, policy
):
    live, dead, shards, draining = cluster
    view = view_of(live, shards, draining, policy)
    instructions = decide(view)
    written = {i.plan.plan_id for i in instructions if isinstance(i, WritePlan)}
    after = dict(shards)
    for instruction in instructions:
        if not isinstance(instruction, ExecuteMove):
            continue
        move = instruction.move
        assert instruction.plan_id in written and move.from_owner in dead
        assert all(target in view.live and target not in draining for target in move.targets)
        current = after[move.shard]
        if move.slices:
            parent, children = own.split(
                current,
                [(s.child, s.owner, s.low, s.high) for s in move.slices],
                expected_epoch=move.from_epoch,
                at=6.0,
            )
            after.update({shard.shard: shard for shard in (parent, *children)})
        else:
            after[move.shard] = own.reassign(current, move.to, expected_epoch=move.from_epoch, at=6.0)
    members = {beat.incarnation: beat for beat in live}
    # Whatever the leader did, the cluster it leaves breaks no rule of the protocol.
    assert validate_cluster(ClusterView("c1", shards=after, members=members)) == []
    if any(name not in draining for name in members) and rank([b for b in live if b.incarnation not in draining]):
        orphaned = [s for s in after.values() if s.owner in dead and s.state is not ShardState.RETIRED]
        assert orphaned == []


OWNERS = ["n1-1", "n2-2", "n3-3", "n4-4"]
operations = st.lists(
    st.tuples(
        st.sampled_from(["reassign", "adopted", "hold", "retire", "split"]),
        st.sampled_from(OWNERS),
        st.sampled_from([0, 0, 0, -1, 1]),  # the epoch the caller acts on: mostly the current one
    ),
    max_size=25,
)


@given(operations)
def test_any_sequence_of_ownership_transitions_follows_the_table_and_epochs_only_rise(steps):
    shard = own.new_shard("n1-1", "n1-1", 1, at=0.0)
    assert check_transition(None, shard) is None
    slices = {}  # what a split made, for the view at the end
    for at, (action, who, skew) in enumerate(steps, 1):
        epoch = shard.epoch + skew
        outcome = {
            "reassign": lambda: own.reassign(shard, who, expected_epoch=epoch, at=at),  # noqa: B023
            "adopted": lambda: own.adopted(shard, who, epoch, at=at),  # noqa: B023
            "hold": lambda: own.hold(shard, who, epoch, at=at, reason="damaged"),  # noqa: B023
            "retire": lambda: own.retire(shard, who, epoch, at=at),  # noqa: B023
            "split": lambda: own.split(shard, [(f"child{at}", who, 0, HASH_SPACE)], expected_epoch=epoch, at=at),  # noqa: B023
        }[action]()
        if isinstance(outcome, Refusal):
            continue
        assert skew == 0  # nothing acting on another epoch than the current one gets through
        if isinstance(outcome, tuple):
            outcome, children = outcome
            slices.update({child.shard: child for child in children})
            assert all(check_transition(None, child) is None and child.epoch == outcome.epoch for child in children)
        assert check_transition(shard, outcome) is None
        assert outcome.epoch >= shard.epoch
        shard = outcome
    assert validate_cluster(ClusterView("c1", shards={shard.shard: shard, **slices})) == []
