"""A shard records the flow it was written under: the snapshot's version is a function
of the flow alone, and a shard znode written before shards recorded it still reads.
An adopter that cannot use a shard's flow.json decides what it runs with, purely."""

import json

import pytest

from cluster.core import ownership as own
from cluster.core.flows import FlowChoice, FlowSnapshot, UnreadableFlow, flow_without_its_file
from cluster.core.ownership import HASH_SPACE, ShardOwnership

FLOW = {"name": "f", "processors": [{"id": "a", "type": "GenerateFlowFile"}], "connections": []}


def test_the_version_depends_on_the_flow_not_on_how_it_was_written():
    same = json.loads(json.dumps(FLOW))  # another object, same flow
    assert FlowSnapshot(FLOW).version == FlowSnapshot(same).version and len(FlowSnapshot(FLOW).version) == 16
    changed = dict(FLOW, name="g")
    assert FlowSnapshot(changed).version != FlowSnapshot(FLOW).version
    assert FlowSnapshot.decode(FlowSnapshot(FLOW).encoded) == FlowSnapshot(FLOW)


def test_a_shard_keeps_its_flow_through_every_transition_and_its_slices_inherit_it():
    version = FlowSnapshot(FLOW).version
    shard = own.new_shard("n1-3", "n1-3", 3, at=0, flow=version)
    moved = own.adopted(own.reassign(shard, "n2-4", expected_epoch=3, at=1), "n2-4", 4, at=2)
    assert ShardOwnership.from_json(moved.to_json()).flow == version
    _, children = own.split(shard, [("c0", "n2-4", 0, HASH_SPACE)], expected_epoch=3, at=1)
    assert children[0].flow == version


def test_a_shard_znode_from_before_flows_were_recorded_reads_with_no_flow():
    written_before = {
        "shard": "n1-3",
        "owner": "n1-3",
        "epoch": 3,
        "state": "active",
        "history": [{"epoch": 3, "owner": "n1-3", "state": "active", "at": 1.0, "reason": "created"}],
    }
    shard = ShardOwnership.from_json(json.dumps(written_before).encode())
    assert shard.flow is None and "flow" not in json.loads(shard.to_json())


# -- a flow.json that cannot be used -----------------------------------------------------------
OWN, OTHER = "a" * 16, "b" * 16


def test_an_empty_cut_or_foreign_flow_document_is_unreadable_and_says_how():
    encoded = FlowSnapshot(FLOW).encoded
    with pytest.raises(UnreadableFlow, match="it is empty"):
        FlowSnapshot.decode(b"")
    for cut in range(1, len(encoded)):  # every prefix an owner killed before its sync can leave
        with pytest.raises(UnreadableFlow, match=f"not whole JSON .* of {cut}: cut short"):
            FlowSnapshot.decode(encoded[:cut])
    with pytest.raises(UnreadableFlow, match="not UTF-8"):
        FlowSnapshot.decode(b"\xff\xfe{}")
    with pytest.raises(UnreadableFlow, match="JSON object, not list"):
        FlowSnapshot.decode(b"[]")
    assert issubclass(UnreadableFlow, ValueError)  # what readers of the cluster's flow znode catch


def never_counted():
    raise AssertionError("the WAL was read although the decision did not need it")


def test_without_a_file_the_recorded_version_is_used_when_this_node_knows_it():
    assert flow_without_its_file(problem=None, recorded=OWN, own=OWN, known=(), queued=never_counted) == FlowChoice(OWN)
    assert flow_without_its_file(
        problem=None, recorded=OTHER, own=OWN, known={OTHER}, queued=never_counted
    ) == FlowChoice(OTHER)
    choice = flow_without_its_file(problem="it is empty", recorded=OTHER, own=OWN, known={OTHER}, queued=never_counted)
    assert choice.version == OTHER and not choice.warning
    assert choice.note.startswith("flow.json is unreadable: it is empty; it runs with flow version " + OTHER)


def test_a_shard_of_a_release_before_recorded_flows_runs_with_this_nodes_flow_as_it_always_did():
    choice = flow_without_its_file(problem=None, recorded=None, own=OWN, known=(), queued=never_counted)
    assert choice == FlowChoice(OWN)


@pytest.mark.parametrize("problem, recorded", [("it is empty", None), ("it is empty", OTHER), (None, OTHER)])
def test_a_shard_that_never_committed_anything_is_adopted_empty_with_this_nodes_flow(problem, recorded):
    choice = flow_without_its_file(problem=problem, recorded=recorded, own=OWN, known=(), queued=lambda: 0)
    assert choice.version == OWN and not choice.warning
    assert (
        "its WAL holds no FlowFile (nothing of it was ever committed): adopted empty with this node's flow"
        in choice.note
    )


def test_a_shard_holding_flowfiles_under_a_flow_this_node_lacks_runs_with_its_own_flow_with_a_warning():
    choice = flow_without_its_file(problem="it is not whole JSON", recorded=OTHER, own=OWN, known=(), queued=lambda: 42)
    assert choice.version == OWN and choice.warning
    assert f"written under flow version {OTHER}, which this node does not know, and holds 42 FlowFiles" in choice.note
    assert "held for an operator and nothing is dropped" in choice.note
    unrecorded = flow_without_its_file(problem="it is empty", recorded=None, own=OWN, known=(), queued=lambda: 1)
    assert "a flow whose version it never recorded" in unrecorded.note
