"""One damaged znode under `shards/` or `plans/` must not stop the cluster: the
leader skips it (one warning) and goes on deciding for the others; the garbage
collector, which must see every shard, deletes nothing while one is unreadable.
On the real ZooKeeper ensemble."""

from __future__ import annotations

import logging

import pytest

from cluster.core.heartbeat import Heartbeat
from cluster.core.layout import ClusterLayout
from cluster.errors import UnreadableZnode
from cluster.failover.collector import ContentCollector
from cluster.failover.leader import Leader
from cluster.services.process import wait_until
from cluster.zk.membership import new_incarnation
from cluster.zk.store import ClusterStore
from repositories.storage import LocalStorage

pytestmark = [pytest.mark.zookeeper]


def test_an_unreadable_shard_znode_is_skipped_by_the_leader_and_stops_only_the_collector(zk_client, tmp_path, caplog):
    client = zk_client
    layout = ClusterLayout("c1", str(tmp_path / "hdfs"))
    store = ClusterStore(client, layout)
    store.ensure_paths()
    store.shards.create_home_shard("d-1", "d-1", 1)  # left by a dead node
    client.create(layout.shard("broken"), b"{not json")
    incarnation = new_incarnation(client, layout, "a")
    store.membership(Heartbeat("a", incarnation.id, incarnation.epoch, free_disk=100 << 30, max_threads=4)).join()

    with caplog.at_level(logging.WARNING, logger="cluster.zk.znodes"):
        assert sorted(store.shards.all()) == ["d-1"]
        assert sorted(store.shards.all()) == ["d-1"]
    warnings = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert len(warnings) == 1 and "unreadable" in warnings[0]  # once per version, not once per round
    assert "broken" in store.shards.znodes.unreadable
    with pytest.raises(UnreadableZnode, match="broken"):
        store.shards.all(strict=True)
    with pytest.raises(UnreadableZnode, match="broken"):
        store.shards.read("broken")

    # The leader still moves the dead node's shard...
    leader = Leader(store, incarnation.id, period=0.2, collect_interval=0)
    leader.start()
    try:
        wait_until(lambda: store.shards.read("d-1")[0].owner == incarnation.id, 30, "the dead node's shard to move")
    finally:
        leader.stop()
    # ...and the collector, which must see every shard to know what nothing references,
    # deletes nothing this round.
    (tmp_path / "hdfs" / "c1" / "content" / "d-1" / "d-1" / "0").mkdir(parents=True)
    plan = ContentCollector(store, LocalStorage()).collect()
    assert plan.containers == () and (tmp_path / "hdfs" / "c1" / "content" / "d-1").is_dir()
