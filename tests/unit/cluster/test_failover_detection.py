"""When the leader last heard from a dead incarnation, kept in its failover plan
(`FailoverPlan.last_seen_at`), and the detection phase it gives the timeline: pure,
no ZooKeeper."""

import json
from types import SimpleNamespace

from cluster.admin.views import cluster_view
from cluster.core.failovers import failover_timelines
from cluster.core.heartbeat import Heartbeat
from cluster.core.ownership import HistoryEntry, ShardOwnership, ShardState
from cluster.core.plans import FailoverPlan, Move
from cluster.core.reassignment import LeaderView, RevisePlan, WritePlan, decide
from cluster.failover.leader import Leader, newest_beats
from cluster.services.process import wait_until
from tests.fakes.cluster_store import join
from tests.fakes.zookeeper import FakeZooKeeper

GIB = 1 << 30


def beat(name, *, sequence=1, sent_at=0.0, shards=()):
    return Heartbeat(
        name.split("-")[0],
        name,
        int(name.split("-")[1]),
        sequence=sequence,
        sent_at=sent_at,
        max_threads=4,
        free_disk=100 * GIB,
        owned_shards=tuple(shards),
    )


def owned(name, owner, epoch=1, *history):
    return ShardOwnership(name, owner, epoch, ShardState.ACTIVE, history=tuple(HistoryEntry(*h) for h in history))


def plan(dead, created_at, last_seen_at):
    moves = (Move(dead, dead, 1, "n2-1"),)
    return FailoverPlan(dead, dead, "n2-1", created_at, "whole", moves, last_seen_at=last_seen_at)


def view(live, shards, *, plans=None, last_beats=None, at=100.0):
    return LeaderView(
        "n2-1",
        at,
        {b.incarnation: b for b in live},
        {s.shard: s for s in shards},
        plans or {},
        last_beats or {},
    )


def test_the_plan_keeps_the_sending_time_of_the_last_heartbeat_the_leader_read_of_the_dead():
    decision = decide(
        view(
            [beat("n2-1")],
            [owned("n1-1", "n1-1")],
            last_beats={"n1-1": beat("n1-1", sequence=41, sent_at=97.5)},
        )
    )
    [write] = [instruction for instruction in decision if isinstance(instruction, WritePlan)]
    assert (write.plan.last_seen_at, write.plan.created_at) == (97.5, 100.0)


def test_a_leader_that_never_read_the_deads_heartbeat_says_it_does_not_know():
    [write] = [i for i in decide(view([beat("n2-1")], [owned("n1-1", "n1-1")])) if isinstance(i, WritePlan)]
    assert write.plan.last_seen_at is None


def test_a_revised_plan_keeps_when_the_dead_was_last_heard_of():
    # The plan sent n1-1's shard to n3-1, which died too: the next leader re-plans it,
    # without the dead's heartbeat (it was elected after the death).
    first = FailoverPlan("n1-1", "n1-1", "n3-1", 90.0, "whole", (Move("n1-1", "n1-1", 1, "n3-1"),), last_seen_at=88.0)
    decision = decide(view([beat("n2-1")], [owned("n1-1", "n1-1")], plans={"n1-1": first}))
    [revise] = [i for i in decision if isinstance(i, RevisePlan)]
    assert (revise.plan.last_seen_at, revise.plan.created_at) == (88.0, 90.0)
    assert revise.plan.moves[0].to == "n2-1"


def test_last_seen_at_survives_the_plans_json():
    written = plan("n1-1", 100.0, 98.25)
    assert FailoverPlan.from_json(written.to_json()) == written


def test_a_plan_written_before_last_seen_at_was_kept_still_reads_and_has_no_detection():
    old = json.dumps(
        {
            "plan_id": "n1-1",
            "dead": "n1-1",
            "leader": "n2-1",
            "created_at": 100.0,
            "policy": "whole",
            "status": "open",
            "revision": 0,
            "notes": [],
            "finished_at": None,
            "resumed": {"n1-1@2": 107.0},
            "moves": [{"shard": "n1-1", "from_owner": "n1-1", "from_epoch": 1, "to": "n2-1", "slices": []}],
        }
    ).encode()
    read = FailoverPlan.from_json(old)
    assert read.last_seen_at is None and read.resumed == {"n1-1@2": 107.0}
    history = ((2, "n2-1", ShardState.ADOPTING, 101.0), (2, "n2-1", ShardState.ACTIVE, 103.0))
    shards = {"n1-1": owned("n1-1", "n2-1", 2, *history)}
    [timeline] = failover_timelines({"n1-1": read}, shards)
    assert timeline.detection_s is None
    assert (timeline.takeover_s, timeline.resume_s) == (3.0, 7.0)


def test_detection_runs_from_last_heard_to_the_plan_and_is_never_negative():
    shards = {"n1-1": owned("n1-1", "n2-1", 2)}
    plans = {
        "n1-1": plan("n1-1", 100.0, 96.5),
        # The dead's clock ran ahead of the leader's: its beat says it was sent after the plan.
        "n3-1": plan("n3-1", 50.0, 50.4),
    }
    first, second = failover_timelines(plans, shards)
    assert (first.last_seen_at, first.detection_s) == (96.5, 3.5)
    assert (second.last_seen_at, second.detection_s) == (50.4, 0.0)


def test_the_cluster_view_answers_last_seen_at_and_detection_s():
    status = SimpleNamespace(
        cluster="c",
        leader="n2-1",
        contenders=["n2-1"],
        members={"n2-1": beat("n2-1", sent_at=120.0)},
        shards={"n1-1": owned("n1-1", "n2-1", 2, (2, "n2-1", ShardState.ADOPTING, 101.0))},
        plans={"n1-1": plan("n1-1", 100.0, 99.0)},
        decommissioned={},
    )
    [failover] = cluster_view(status).failovers
    assert (failover.last_seen_at, failover.detection_s, failover.detected_at) == (99.0, 1.0, 100.0)
    assert failover.takeover_s is None  # still adopting


def test_the_newest_heartbeat_of_each_incarnation_is_kept_and_the_oldest_are_dropped_past_the_limit():
    old, new = beat("n1-1", sequence=3, sent_at=10.0), beat("n1-1", sequence=4, sent_at=11.0)
    assert newest_beats({"n1-1": new}, {"n1-1": old}) == {"n1-1": new}
    assert newest_beats({"n1-1": old}, {"n1-1": new}) == {"n1-1": new}
    beats = {f"n{i}-1": beat(f"n{i}-1", sent_at=float(i)) for i in range(1, 6)}
    assert sorted(newest_beats(beats, limit=2)) == ["n4-1", "n5-1"]


def test_a_contender_hears_the_leader_so_that_its_plan_for_the_dead_leader_says_when_it_was_last_heard_of():
    # On the in-memory ZooKeeper: n1 leads (the fake holds no elections, so the store
    # names the contenders), n2 contends and reads n1's heartbeat; n1's session ends.
    zookeeper = FakeZooKeeper()
    dead_store, dead = join(zookeeper, "n1")
    store, me = join(zookeeper, "n2")
    store.contenders = lambda: [dead, me]  # type: ignore[method-assign]
    leader = Leader(store, me, period=0.02, collect_interval=0, wall_clock=lambda: 1003.5)
    leader.start()
    try:
        # Not read_view() yet: it would read n1's beat itself while n1 lives.
        heard = wait_until(lambda: leader.last_heard(dead), 10.0, "n2 hearing n1's heartbeat")
        dead_store.client.expire()
        wait_until(lambda: dead not in leader.read_view().live, 10.0, "n1 gone")
        [write] = [i for i in decide(leader.read_view()) if isinstance(i, WritePlan)]
    finally:
        leader.stop()
    assert heard.sent_at > 0
    assert (write.plan.dead, write.plan.last_seen_at, write.plan.created_at) == (dead, heard.sent_at, 1003.5)
