"""NodeControl: the narrow facade over a node, against a recording fake node, and the
standalone node's refusal to offload."""

import os

import pytest

from cluster.node.control import NodeControl, NotFound, OffloadRefused
from cluster.node.standalone import StandaloneNode

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class FakeNode:
    def __init__(self):
        self.offloaded = 0
        self.statuses = {
            "n1-3": {
                "epoch": 3,
                "home": True,
                "recovery": {"flowfiles": 2},
                "queues": {"a": {"count": 2, "size": 20, "swapped_count": 0}, "b": {"count": 5, "size": 7}},
                "processors": {"gen": {"running": 1, "tasks": 9, "last_error": None}},
            },
            "n2-1": {
                "epoch": 2,
                "home": False,
                "queues": {"a": {"count": 1, "size": 3}},
                "processors": {"gen": {"running": 0, "tasks": 0}},
            },
        }

        self.owned = True
        self.sizes_walked = 0

    def identity(self):
        return {"node": "n1", "kind": "clustered", "incarnation": "n1-3"}

    def node_state(self):
        return "OFFLOADING" if self.offloaded and self.owned else ("OFFLOADED" if self.offloaded else "RUNNING")

    def readiness(self):
        return []

    def repository_directories(self):
        self.sizes_walked += 1
        return {"content": self.directory}

    def owns_nothing(self):
        return not self.owned

    def connect(self):
        self.offloaded = 0

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
    assert status["shards"]["n1-3"] == {
        "epoch": 3,
        "home": True,
        "flow_version": None,
        "queued": 7,
        "queued_bytes": 27,
        "running_tasks": 1,
        "recovery": {"flowfiles": 2},
    }
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


def test_offload_waits_until_the_node_owns_nothing_within_the_deadline():
    node = FakeNode()
    ticks = iter(range(0, 10_000))  # each look at the clock is a second later
    control = NodeControl(node, clock=lambda: float(next(ticks)))
    assert control.offload() == "OFFLOADING"  # no wait: answers at once
    assert control.offload(wait_s=3.0) == "OFFLOADING"  # the deadline passes; the shards never moved
    node.owned = False
    assert control.offload(wait_s=5.0) == "OFFLOADED"
    assert control.connect() == "RUNNING"


def test_repository_sizes_are_walked_at_most_once_per_ttl(tmp_path):
    node = FakeNode()
    node.directory = str(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "claim").write_bytes(b"x" * 1000)
    now = [0.0]
    control = NodeControl(node, clock=lambda: now[0])
    assert control.repository_sizes() == {"content": 1000}
    (tmp_path / "b").write_bytes(b"y" * 24)
    assert control.repository_sizes() == {"content": 1000} and node.sizes_walked == 1
    now[0] = 10.0
    assert control.repository_sizes() == {"content": 1024} and node.sizes_walked == 2


def test_a_standalone_node_refuses_to_offload_and_says_why(tmp_path):
    node = StandaloneNode.from_file(os.path.join(REPO, "examples", "hello.yaml"), str(tmp_path))
    control = node.control()
    assert control.shards() == {}  # not started: nothing runs
    with pytest.raises(OffloadRefused, match="no cluster to hand its FlowFiles to"):
        control.offload()


def test_queue_flowfile_event_and_processor_ids_the_node_does_not_know_are_named(tmp_path):
    node = StandaloneNode.from_file(os.path.join(REPO, "examples", "hello.yaml"), str(tmp_path))
    control = node.control()
    with pytest.raises(NotFound, match=r"shard 'local' does not run on this node \(it runs: none\)"):
        control.list_queue("local", "generate/success/tag")
    node.start(paused=True)
    try:
        with pytest.raises(NotFound, match=r"shard 'n1-3' does not run on this node \(it runs: local\)"):
            control.drop_queue("n1-3", "generate/success/tag")
        with pytest.raises(NotFound, match=r"shard 'local' has no queue 'generate/tag' \(its queues: .*success/tag"):
            control.list_queue("local", "generate/tag")
        with pytest.raises(NotFound, match="FlowFile 0000-x is in no queue of the shards of this node"):
            control.flowfile("0000-x")
        with pytest.raises(NotFound, match="shard 'local' has no processor 'nope'"):
            control.stop_processor("local", "nope")
        with pytest.raises(NotFound, match="event 7"):
            control.replay(7)
        assert control.list_queue("local", "generate/success/tag")["count"] == 0
    finally:
        node.stop()
