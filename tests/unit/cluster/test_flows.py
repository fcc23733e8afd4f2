"""A shard records the flow it was written under: the snapshot's version is a function
of the flow alone, and a shard znode written before shards recorded it still reads."""

import json

from cluster.core import ownership as own
from cluster.core.flows import FlowSnapshot
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
    written_before = {"shard": "n1-3", "owner": "n1-3", "epoch": 3, "state": "active",
                      "history": [{"epoch": 3, "owner": "n1-3", "state": "active", "at": 1.0, "reason": "created"}]}
    shard = ShardOwnership.from_json(json.dumps(written_before).encode())
    assert shard.flow is None and "flow" not in json.loads(shard.to_json())
