"""Processors' run states (`cluster.core.run_states`): the scope (a shard's node),
the record, and what makes an engine match it; and the standalone node's file."""

import pytest

from cluster.core.run_states import (
    RUNNING,
    STOPPED,
    NodeRunStates,
    ProcessorRunState,
    origin_node,
    reconcile,
)
from cluster.node.run_states import LocalRunStates, RunStatesUnreadable


def test_a_shard_follows_the_run_states_of_the_node_it_is_named_after():
    assert origin_node("n1-5") == origin_node("n1-7") == "n1"
    assert origin_node("edge-a-12") == "edge-a"
    assert origin_node("local") == "local"


def test_a_record_changes_only_when_the_state_does_and_round_trips():
    empty = NodeRunStates("n1")
    assert empty.with_state("put", ProcessorRunState(RUNNING, 1.0)) is empty  # nothing to keep
    stopped = empty.with_state("put", ProcessorRunState(STOPPED, 2.0, "n1-5", "n1-5"))
    assert stopped.stopped() == {"put"}
    assert stopped.with_state("put", ProcessorRunState(STOPPED, 3.0)) is stopped
    started = stopped.with_state("put", ProcessorRunState(RUNNING, 4.0, "n2-6", "n1-5"))
    assert started.stopped() == frozenset() and started.processors["put"].by == "n2-6"
    assert NodeRunStates.from_json(stopped.to_json()) == stopped
    with pytest.raises(ValueError):
        ProcessorRunState("PAUSED", 1.0)
    with pytest.raises(ValueError):
        NodeRunStates.from_json(b'{"node": "n1", "processors": []}')


def test_reconcile_stops_and_starts_only_what_runs_on_the_shard():
    states = {"generate": "STOPPED", "put": "RUNNING", "rewrite": "STOPPED", "log": "STOPPING"}
    runs = frozenset({"put", "rewrite", "log"})  # an adopted shard: its source never runs
    plan = reconcile(frozenset({"put", "gone"}), states, runs)
    assert (plan.stop, plan.start, plan.waiting) == (("put",), ("rewrite",), ("log",))
    assert not reconcile(frozenset({"rewrite"}), {"rewrite": "STOPPED", "put": "RUNNING"}, runs)


def test_the_standalone_file_keeps_a_stop_and_refuses_to_start_on_a_damaged_one(tmp_path):
    keeper = LocalRunStates(str(tmp_path), "standalone")
    assert keeper.stopped("local") == frozenset()
    keeper.record("local", "hold", STOPPED, by="standalone")
    assert LocalRunStates(str(tmp_path)).stopped("local") == {"hold"}
    assert not (tmp_path / "run-states.json.partial").exists()
    keeper.record("local", "hold", RUNNING, by="standalone")
    assert LocalRunStates(str(tmp_path)).stopped("local") == frozenset()
    (tmp_path / "run-states.json").write_text("{not json")
    with pytest.raises(RunStatesUnreadable, match="delete it to start every processor"):
        keeper.stopped("local")
