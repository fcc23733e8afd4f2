"""The protocol's invariants read from the real ZooKeeper ensemble: a failover the
registries made breaks none, and one shard znode written backwards with kazoo, as no
transition of the protocol writes it, is reported by rule and shard."""

from __future__ import annotations

import json
import time

import pytest

from cluster.core.heartbeat import Heartbeat
from cluster.core.layout import ClusterLayout
from cluster.core.plans import FailoverPlan, Move
from cluster.core.validation import validate_cluster
from cluster.zk.store import ClusterStore
from cluster.zk.view import read_cluster_view

pytestmark = [pytest.mark.zookeeper]


def test_a_shard_epoch_written_backwards_in_zookeeper_is_reported(zk_client):
    layout = ClusterLayout("c1")
    store = ClusterStore(zk_client, layout)
    store.ensure_paths()
    # n1-1 died; the leader moved its home shard to n2-2, which adopted it.
    store.shards.create_home_shard("n1-1", "n1-1", 1)
    store.membership(Heartbeat("n2", "n2-2", 2, owned_shards=("n2-2",))).join()
    store.shards.create_home_shard("n2-2", "n2-2", 2)
    move = Move("n1-1", "n1-1", 1, "n2-2")
    assert store.plans.create(FailoverPlan("n1-1", "n1-1", "n2-2", time.time(), "whole", (move,)))
    store.shards.move(move)
    store.shards.mark_adopted("n1-1", "n2-2", 2)

    started = time.monotonic()
    view = read_cluster_view(store)
    took = time.monotonic() - started
    assert sorted(view.shards) == ["n1-1", "n2-2"] and list(view.members) == ["n2-2"] and list(view.plans) == ["n1-1"]
    assert validate_cluster(view) == []
    assert took < 1.0, f"reading the cluster took {took:.2f}s"

    data, stat = zk_client.get(layout.shard("n1-1"))
    body = json.loads(data)
    body["epoch"] = 0
    body["history"].append({**body["history"][-1], "epoch": 0, "reason": "planted by the test"})
    zk_client.set(layout.shard("n1-1"), json.dumps(body).encode(), version=stat.version)

    found = validate_cluster(read_cluster_view(store))
    assert [(v.rule, v.subject) for v in found] == [("epoch-fell", "shard n1-1")], found
    assert "draining@2 (n2-2) -> draining@0 (n2-2)" in found[0].detail
