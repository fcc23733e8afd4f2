"""Step ids: one failover followed across nodes' logs with one grep. Pure, except the
last test, which runs the session guard's runner against a fake client."""

import logging
import threading

from cluster.core import ownership as own
from cluster.core.heartbeat import Heartbeat
from cluster.core.ownership import HASH_SPACE
from cluster.core.plans import FailoverPlan, Move, Slice
from cluster.core.reassignment import (
    ExecuteMove,
    FinishPlan,
    LeaderView,
    RevisePlan,
    WritePlan,
    decide,
)
from cluster.core.reassignment import (
    step_of_instruction as step,
)
from cluster.core.story import step_id, step_of, tag
from cluster.services.process import wait_until
from cluster.zk.session import GuardCallbacks, SessionGuard


def beat(name, weight=1.0):
    return Heartbeat(
        name.split("-")[0], name, int(name.split("-")[1]), free_disk=100 << 30, capacity_weight=weight, max_threads=4
    )


def view(live, shards, plans=()):
    return LeaderView(
        "a-1",
        100.0,
        {b.incarnation: b for b in live},
        {s.shard: s for s in shards},
        {p.plan_id: p for p in plans},
        {},
        "whole",
    )


def test_step_ids_are_tagged_and_found_again():
    step = step_id("n1-7", "failover/move-n1-7@7")
    assert tag(step) == "[n1-7:failover/move-n1-7@7]" and tag(None) == ""
    assert step_of(f"n1-7 died {tag(step)}") == step
    assert step_of("reassigned from n1-7") is None and step_of("[not a step] [x:y] [a:b]") == "a:b"


def test_every_leader_decision_has_a_step_id_derived_from_the_decision_alone():
    shards = [own.new_shard("a-1", "a-1", 1, at=0), own.new_shard("d-3", "d-3", 3, at=0)]
    first = decide(view([beat("a-1"), beat("b-2")], shards))
    again = decide(view([beat("a-1"), beat("b-2")], shards))
    assert [step(i) for i in first] == [step(i) for i in again] == ["d-3:failover/plan", "d-3:failover/move-d-3@3"]
    assert step(FinishPlan("d-3")) == "d-3:failover/done"
    assert step(ExecuteMove("d-3", Move("x-2", "d-3", 5, "b-2"))) == "d-3:failover/move-x-2@5"


def test_a_revised_plan_notes_its_step_and_reason():
    shards = [own.new_shard("d-3", "d-3", 3, at=0)]
    plan = decide(view([beat("a-1"), beat("b-2", weight=5)], shards))[0].plan
    [revise, *_] = decide(view([beat("a-1")], shards, [plan]))
    assert isinstance(revise, RevisePlan) and step(revise) == "d-3:failover/revise-1"
    assert revise.plan.notes[-1].startswith("[d-3:failover/revise-1] targets gone: ['b-2']")


def test_the_adopter_finds_the_moves_step_in_the_shards_history():
    step = "n1-7:failover/move-n1-7@7"
    shard = own.new_shard("n1-7", "n1-7", 7, at=0)
    assert shard.step is None  # a home shard: no failover gave it
    moved = own.reassign(shard, "n2-8", expected_epoch=7, at=1.0, reason="n1-7 died", step=step)
    assert moved.step == step and moved.history[-1].reason == f"n1-7 died {tag(step)}"
    assert own.adopted(moved, "n2-8", 8, at=2.0).step == step  # still the move's step once adopted
    again = own.reassign(own.adopted(moved, "n2-8", 8, at=2.0), "n3-9", expected_epoch=8, at=3.0)
    assert again.step is None  # a later epoch without a tag is not the old move's


def test_divvy_children_carry_the_moves_step():
    step = "n1-7:failover/move-n1-7@7"
    parent, children = own.split(
        own.new_shard("n1-7", "n1-7", 7, at=0),
        [("c0", "n2-8", 0, HASH_SPACE // 2), ("c1", "n3-9", HASH_SPACE // 2, HASH_SPACE)],
        expected_epoch=7,
        at=1.0,
        reason="n1-7 died",
        step=step,
    )
    assert parent.step == step and [c.step for c in children] == [step, step]


def test_the_plan_round_trips_its_notes():
    plan = FailoverPlan(
        "d-3",
        "d-3",
        "a-1",
        1.0,
        "divvy",
        (Move("d-3", "d-3", 3, None, (Slice("c", "b-2", 0, 1),)),),
        notes=("[d-3:failover/plan] written by a-1",),
    )
    assert FailoverPlan.from_json(plan.to_json()).notes == plan.notes
    assert step(WritePlan(plan)) == "d-3:failover/plan"


class FakeClient:
    def __init__(self):
        self.listeners = []

    def add_listener(self, listener):
        self.listeners.append(listener)

    def remove_listener(self, listener):
        self.listeners.remove(listener)

    def exists_async(self, path):
        raise ConnectionError("not connected")  # no proof of life: the deadlines decide


def test_the_guards_decisions_are_logged_and_given_to_a_death_under_their_step_ids(caplog):
    now = [0.0]
    died = threading.Event()
    reasons = []
    callbacks = GuardCallbacks(abort_all=lambda reason: (reasons.append(reason), died.set()))
    guard = SessionGuard(FakeClient(), "/custody/c1/nodes/n1-7", 1.0, callbacks, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="cluster.zk.session"):
        guard.start()
        try:
            now[0] = 0.3  # past a quarter of the timeout: gate closed, open sessions aborted
            wait_until(lambda: any("[n1-7:guard-1]" in r.getMessage() for r in caplog.records), 5, "guard-1")
            now[0] = 1.5  # past the timeout: the session is over
            assert died.wait(5)
        finally:
            guard.stop()
    assert reasons[0].startswith("[n1-7:guard-2] ")
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("[n1-7:guard-1] work gate closed") for line in lines)
    assert any(line.startswith("[n1-7:guard-2] session over") for line in lines)
