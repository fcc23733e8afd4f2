"""The clustered node with the flow workload (examples/cluster.yaml), as real
`custody node` processes against the real ZooKeeper ensemble and HDFS: a dead node's
queued and swapped FlowFiles are taken over by a survivor and delivered exactly once.
"""

from __future__ import annotations

import signal

import pytest

from cluster.ownership import ShardState
from cluster.services.process import wait_until

from .flow_cluster import SWAPPED_QUEUE, FlowCluster

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow]


@pytest.fixture
def flow_cluster(zk_hosts, hdfs_cluster, hdfs_store, tmp_path):
    made = FlowCluster(zk_hosts, hdfs_cluster.url, hdfs_store.root, tmp_path, hdfs_cluster.client_config)
    yield made
    made.close()
    print(made.tails())


def test_a_killed_nodes_queued_and_swapped_flowfiles_are_delivered_once_by_the_best_survivor(flow_cluster):
    cluster = flow_cluster
    n1 = cluster.start("n1", count=1000)
    n1.wait("joined", timeout=60)
    n2 = cluster.start("n2", count=100, weight=3.0)
    n3 = cluster.start("n3", count=100)
    for node in (n2, n3):
        node.wait("joined", timeout=60)
    victim = n1.incarnation
    # The victim dies with a backlog past the swap threshold, some of it swapped out to HDFS.
    wait_until(lambda: cluster.queued(victim) > 150 and cluster.swap_files(victim), 60,
               f"{victim} to queue past the swap threshold of {SWAPPED_QUEUE} and swap to HDFS")
    n1.signal(signal.SIGKILL)
    wait_until(lambda: (s := cluster.shard(victim)) is not None and s.owner != victim
               and s.state in (ShardState.DRAINING, ShardState.RETIRED), 60, f"{victim}'s shard to be adopted")
    adopter = cluster.shard(victim).owner
    assert adopter == n2.incarnation, cluster.shard(victim)  # the heaviest survivor
    wait_until(lambda: cluster.first_outputs(victim), 60, "the adopter to deliver from the adopted shard")
    wait_until(lambda: cluster.shard(victim).state is ShardState.RETIRED, 120, f"{victim}'s shard to retire")
    cluster.wait_settled()
    report = cluster.check()
    assert report.ok, report.summary()
    assert report.created >= 300, report.summary()
    recovered = [e for e in n2.find("recovered", shard=victim)]
    assert recovered and recovered[-1]["swapped_flowfiles"] > 0, recovered
    print(report.summary())
