"""The failover timeline the admin API shows, read from plans and shard histories."""

import json

from cluster.core.failovers import failover_timelines
from cluster.core.ownership import HistoryEntry, ShardOwnership, ShardState
from cluster.core.plans import FailoverPlan, Move, with_resumed


def shard(name, owner, epoch, state, *history):
    return ShardOwnership(name, owner, epoch, state, history=tuple(HistoryEntry(*h) for h in history))


def plan(plan_id, dead, created_at, *moves, finished_at=None):
    return FailoverPlan(
        plan_id,
        dead,
        "n3-1",
        created_at,
        "whole",
        tuple(Move(s, dead, e, to) for s, e, to in moves),
        finished_at=finished_at,
    )


def test_a_plan_is_taken_over_when_its_last_shard_runs_past_adopting():
    plans = {"p1": plan("p1", "n1-1", 100.0, ("n1-1", 1, "n2-1"), ("n1-1b", 1, "n3-1"), finished_at=109.0)}
    shards = {
        "n1-1": shard(
            "n1-1",
            "n2-1",
            2,
            ShardState.DRAINING,
            (1, "n1-1", ShardState.ACTIVE, 10.0),
            (2, "n2-1", ShardState.ADOPTING, 100.5),
            (2, "n2-1", ShardState.DRAINING, 103.0),
        ),
        "n1-1b": shard(
            "n1-1b",
            "n3-1",
            2,
            ShardState.DRAINING,
            (2, "n3-1", ShardState.ADOPTING, 100.5),
            (2, "n3-1", ShardState.DRAINING, 105.5),
        ),
    }
    [timeline] = failover_timelines(plans, shards)
    assert (timeline.detected_at, timeline.taken_over_at, timeline.finished_at) == (100.0, 105.5, 109.0)
    assert (timeline.takeover_s, timeline.finish_s) == (5.5, 9.0)
    assert timeline.shards == ("n1-1", "n1-1b")


def test_a_shard_still_adopting_leaves_the_takeover_open():
    plans = {"p1": plan("p1", "n1-1", 100.0, ("n1-1", 1, "n2-1"))}
    shards = {"n1-1": shard("n1-1", "n2-1", 2, ShardState.ADOPTING, (2, "n2-1", ShardState.ADOPTING, 100.5))}
    [timeline] = failover_timelines(plans, shards)
    assert timeline.taken_over_at is None and timeline.takeover_s is None and timeline.finish_s is None


def test_the_newest_failovers_come_first_and_the_list_is_bounded():
    plans = {f"p{i}": plan(f"p{i}", f"n{i}-1", float(i)) for i in range(30)}
    timelines = failover_timelines(plans, {}, limit=5)
    assert [t.plan for t in timelines] == ["p29", "p28", "p27", "p26", "p25"]
    assert all(t.taken_over_at is None for t in timelines)  # no moves: nothing was taken over


def test_a_failover_resumes_when_its_last_shard_first_delivered_at_its_new_owner():
    base = plan("p1", "n1-1", 100.0, ("n1-1", 1, "n2-1"), ("n1-1b", 1, "n3-1"))
    shards = {
        name: shard(name, owner, 2, ShardState.DRAINING, (2, owner, ShardState.DRAINING, 103.0))
        for name, owner in (("n1-1", "n2-1"), ("n1-1b", "n3-1"))
    }
    half = with_resumed(base, "n1-1", 2, 104.0)
    assert failover_timelines({"p1": half}, shards)[0].resumed_at is None  # one shard still silent
    both = with_resumed(with_resumed(half, "n1-1b", 2, 106.5), "n1-1", 2, 999.0)  # the first record stands
    [timeline] = failover_timelines({"p1": both}, shards)
    assert (timeline.resumed_at, timeline.resume_s) == (106.5, 6.5)
    assert FailoverPlan.from_json(both.to_json()).resumed == {"n1-1@2": 104.0, "n1-1b@2": 106.5}
    stale = with_resumed(base, "n1-1", 1, 50.0)  # a record of the epoch the move left is not its resume
    assert failover_timelines({"p1": stale}, shards)[0].resumed_at is None


def test_a_plan_written_before_resume_times_were_recorded_reads_with_none():
    body = json.loads(plan("p1", "n1-1", 100.0, ("n1-1", 1, "n2-1")).to_json())
    del body["resumed"]  # as the release before resume times wrote it
    assert FailoverPlan.from_json(json.dumps(body).encode()).resumed == {}
