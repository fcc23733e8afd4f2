"""NodeControl: the narrow facade over a node, against a recording fake node, and the
standalone node's refusal to offload."""

import os

import pytest

from cluster.node.control import NodeControl, OffloadRefused
from cluster.node.standalone import StandaloneNode

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class FakeNode:
    def __init__(self):
        self.offloaded = 0
        self.statuses = {
            "n1-3": {"epoch": 3, "home": True, "recovery": {"flowfiles": 2},
                     "queues": {"a": {"count": 2, "size": 20, "swapped_count": 0}, "b": {"count": 5, "size": 7}},
                     "processors": {"gen": {"running": 1, "tasks": 9, "last_error": None}}},
            "n2-1": {"epoch": 2, "home": False, "queues": {"a": {"count": 1, "size": 3}},
                     "processors": {"gen": {"running": 0, "tasks": 0}}},
        }

    def identity(self):
        return {"node": "n1", "kind": "clustered", "incarnation": "n1-3"}

    def node_state(self):
        return "RUNNING"

    def owns_nothing(self):
        return self.offloaded > 0

    def shard_statuses(self):
        return self.statuses

    def provenance_repository(self):
        return "the repository"

    def offload(self):
        self.offloaded += 1


def test_status_sums_each_shards_queues_and_running_tasks():
    status = NodeControl(FakeNode()).status()
    assert status["incarnation"] == "n1-3"
    assert status["state"] == "RUNNING"
    assert status["shards"]["n1-3"] == {"epoch": 3, "home": True, "flow_version": None, "queued": 7,
                                        "queued_bytes": 27, "running_tasks": 1, "recovery": {"flowfiles": 2}}
    assert status["shards"]["n2-1"]["home"] is False and status["shards"]["n2-1"]["queued"] == 1


def test_figures_are_copies_the_caller_cannot_change_the_node_through():
    node = FakeNode()
    control = NodeControl(node)
    control.queues()["n1-3"]["a"]["count"] = 999
    control.shards()["n1-3"]["recovery"]["flowfiles"] = 999
    assert node.statuses["n1-3"]["queues"]["a"]["count"] == 2
    assert node.statuses["n1-3"]["recovery"]["flowfiles"] == 2
    assert control.processors()["n1-3"]["gen"]["tasks"] == 9


def test_offload_and_provenance_go_to_the_node():
    node = FakeNode()
    control = NodeControl(node)
    control.offload()
    assert node.offloaded == 1 and control.provenance == "the repository"


def test_a_standalone_node_refuses_to_offload_and_says_why(tmp_path):
    node = StandaloneNode.from_file(os.path.join(REPO, "examples", "hello.yaml"), str(tmp_path))
    control = node.control()
    assert control.shards() == {}  # not started: nothing runs
    with pytest.raises(OffloadRefused, match="no cluster to hand its FlowFiles to"):
        control.offload()
