"""The clustered node with the flow workload (examples/cluster.yaml), as real
`custody node` processes against the real ZooKeeper ensemble and HDFS: a dead node's
queued and swapped FlowFiles are taken over by a survivor and delivered exactly once.
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from cluster.core.ownership import ShardState
from cluster.drills.faults import lose_quorum, stopped_when_quorum_went
from cluster.drills.flow_cluster import SWAPPED_QUEUE
from cluster.drills.harness import SESSION_TIMEOUT
from cluster.services.process import ServiceError, wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow]


def test_a_killed_nodes_queued_and_swapped_flowfiles_are_delivered_once_by_the_best_survivor(flow_cluster):
    cluster = flow_cluster
    # The survivors join first: a victim started first once delivered all its 1,000
    # FlowFiles (10 s at PutFile's pace) while a loaded machine started the others.
    n2 = cluster.start("n2", count=100, weight=3.0)
    n3 = cluster.start("n3", count=100)
    for node in (n2, n3):
        node.wait("joined", timeout=60)
    n1 = cluster.start("n1", count=1000)
    n1.wait("joined", timeout=60)
    victim = n1.incarnation
    # The victim dies with a backlog past the swap threshold, some of it swapped out to
    # HDFS: two swap files of 50 recorded in its WAL, so that the swap-in of one before
    # the kill leaves some. (Files listed in its swap directory were not enough: a loaded
    # machine writes them late, and one swapped in stays listed until it is deleted.)
    wait_until(
        lambda: cluster.swapped(victim) >= 100,
        60,
        f"{victim} to queue past the swap threshold of {SWAPPED_QUEUE} and swap to HDFS",
    )
    n1.signal(signal.SIGKILL)
    wait_until(
        lambda: (
            (s := cluster.shard(victim)) is not None
            and s.owner != victim
            and s.state in (ShardState.DRAINING, ShardState.RETIRED)
        ),
        60,
        f"{victim}'s shard to be adopted",
    )
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


def test_hdfs_down_commits_roll_back_with_one_line_and_the_nodes_resume_when_it_returns(flow_cluster, hdfs_cluster):
    cluster = flow_cluster
    nodes = [cluster.start(name, count=400) for name in ("n1", "n2")]
    for node in nodes:
        node.wait("joined", timeout=60)
    wait_until(lambda: cluster.delivered() > 50, 60, "delivery to start")
    members = {node.name: node.incarnation for node in nodes}
    hdfs_cluster.stop_namenode()
    try:
        # Commits fail and roll back on both nodes.
        wait_until(
            lambda: all(node.find("rejected write") for node in nodes), 60, "both nodes to see their commits rejected"
        )
        # The outage lasts a while (its length is the fault, not a wait for anything):
        # many retries, and nobody dies or fails over meanwhile.
        outage_ends = time.monotonic() + 8.0
        while time.monotonic() < outage_ends:
            assert not any(node.find("dead") for node in nodes)
            assert all(node.process.poll() is None for node in nodes)
            time.sleep(0.2)
    finally:
        hdfs_cluster.start_namenode()
    for node in nodes:
        node.wait("storage-up", timeout=90)
    # Every FlowFile made and delivered (a generator that failed during the outage
    # yields for a while, and queues can be empty before it has made all of them).
    wait_until(lambda: cluster.delivered() >= 800, 180, "all 800 FlowFiles to be delivered")
    cluster.wait_settled(timeout=180)
    assert {node.name: node.incarnation for node in nodes} == members  # nobody died or failed over
    assert all(not node.find("dead") for node in nodes)
    attempts = lines = 0
    for node in nodes:
        text = _log(node)
        shard = members[node.name]
        # One line when the shard's commits start failing and one when they succeed
        # again, not one per attempt; no stack traces. (A NameNode that has just left
        # safe mode may fail a write or two again: that is a second, short outage with
        # its own pair of lines.)
        failing = text.count(f"shard {shard}: commits fail")
        recovered = re.findall(rf"shard {re.escape(shard)}: commits succeed again after (\d+) failed", text)
        assert failing >= 1 and failing == len(recovered), text[-4000:]
        assert "Traceback" not in text, text[-5000:]
        attempts, lines = attempts + sum(int(n) for n in recovered), lines + failing
    # Each line stood for several failed attempts. (Counted over the cluster: a node
    # whose queues were empty retries only its generator, which yields after each
    # failure, so it may fail just twice in the outage.)
    assert attempts >= 3 * lines, (attempts, lines)
    report = cluster.check()
    assert report.ok, report.summary()
    assert report.created == 800


def _log(node) -> str:
    node.log.flush()
    with open(node.log.name) as log:
        return log.read()


def test_quorum_loss_stops_every_node_and_processing_resumes_when_quorum_returns(flow_cluster, zookeeper_ensemble):
    from cluster.drills.checker import cluster_provenance
    from repositories.provenance import EventType

    cluster = flow_cluster
    nodes = [cluster.start(name, count=600) for name in ("n1", "n2")]
    for node in nodes:
        node.wait("joined", timeout=60)
    wait_until(lambda: cluster.delivered() > 50, 60, "delivery to start")
    lost_at, restored_at = lose_quorum(zookeeper_ensemble, nodes)
    before = cluster.delivered()
    wait_until(lambda: cluster.delivered() > before, 90, "delivery to resume after quorum returned")
    cluster.wait_settled(timeout=180)
    timelines = {node.name: sorted(node.events, key=lambda e: e["at"]) for node in nodes}
    report = cluster.check()
    assert report.ok, report.summary()
    # While a node's gate was closed, none of its shards committed a delivery, beyond a
    # commit already past the gate when it closed (sessions are aborted at 1/4 of the
    # session timeout).
    grace = SESSION_TIMEOUT * 0.25 + 0.5
    for name, timeline in timelines.items():
        closed_since = None
        by_node = [
            e.event_time_ms / 1000
            for e in cluster_provenance([f"{cluster.directories[name]}/provenance"])
            if e.event_type is EventType.SEND
        ]
        for event in timeline:
            if event["event"] == "paused" and closed_since is None:
                closed_since = event["at"]
            elif event["event"] in ("resumed", "dead") and closed_since is not None:
                during = [at for at in by_node if closed_since + grace < at < event["at"]]
                assert during == [], (name, closed_since, event, during[:5])
                closed_since = None
        assert stopped_when_quorum_went(timeline, lost_at), (name, timeline)
    assert restored_at > lost_at


def test_divvy_splits_a_dead_nodes_queues_over_the_survivors_by_capacity_exactly_once(flow_cluster):
    cluster = flow_cluster
    n2 = cluster.start("n2", count=50, policy="divvy")
    n3 = cluster.start("n3", count=50, policy="divvy", weight=2.0)
    for node in (n2, n3):
        node.wait("joined", timeout=60)
    n1 = cluster.start("n1", count=1000, policy="divvy")  # last: it dies with a backlog (see above)
    n1.wait("joined", timeout=60)
    victim = n1.incarnation
    wait_until(
        lambda: cluster.queued(victim) > 300 and cluster.swap_files(victim),
        60,
        f"{victim} to queue past the swap threshold and swap to HDFS",
    )
    n1.signal(signal.SIGKILL)
    wait_until(
        lambda: (s := cluster.shard(victim)) is not None and s.state in (ShardState.SPLIT, ShardState.RETIRED),
        60,
        "the dead node's shard to be split",
    )
    parent = cluster.shard(victim)
    children = {child: cluster.shard(child) for child in parent.children}
    assert {c.owner for c in children.values()} == {n2.incarnation, n3.incarnation}, children
    wait_until(lambda: all(cluster.first_outputs(child) for child in children), 60, "every slice to deliver")
    cluster.wait_settled(timeout=180)
    # Each survivor took a part of the dead node's FlowFiles. (Slices are hash ranges
    # sized by score; a swap file moves whole, so the counts follow the sizes only roughly.)
    recovered = {child: next(e for node in (n2, n3) for e in node.find("recovered", shard=child)) for child in children}
    taken = {children[c].owner: r["flowfiles"] + r["swapped_flowfiles"] for c, r in recovered.items()}
    assert all(count > 0 for count in taken.values()), taken
    report = cluster.check()
    assert report.ok, report.summary()
    print("divvy:", taken, report.summary())


def resource_files(directory) -> list[str]:
    """The content resource files under a container directory (sections of resources)."""
    return [os.path.join(root, name) for root, _, names in os.walk(directory) for name in names]


def test_a_clustered_node_collects_its_content_as_it_runs(flow_cluster):
    """Content nobody references any more is deleted (no archive here), on local disk
    and on HDFS, while the node runs: only the resources still open for appending stay."""
    cluster = flow_cluster
    node = cluster.start("n1", count=2000, put_batch=200, sections={"content": {"archive": False}})
    incarnation = node.wait("joined", timeout=60)["incarnation"]
    wait_until(lambda: cluster.delivered() >= 2000, 120, "every FlowFile to be delivered")
    local = os.path.join(cluster.directories["n1"], "content", incarnation)
    hdfs = cluster.clients.hdfs_storage()
    remote = f"{cluster.layout.hdfs_content}/{incarnation}/{incarnation}"

    def hdfs_resources() -> int:
        return sum(1 for _ in hdfs_walk(hdfs, remote))

    # 4,000 claims of about 100 bytes (each with its checksum file): once the flow is
    # idle, its resources are retired by age (RESOURCE_MAX_AGE_S) whether or not a
    # writer comes back, and collected; at most one (and its checksum file) may still
    # be open for appending when the condition is looked at.
    seen: dict = {}

    def collected() -> bool:
        seen.update(local=sorted(resource_files(local)), hdfs=hdfs_resources())
        return len(seen["local"]) <= 2 and seen["hdfs"] <= 2

    try:
        wait_until(collected, 60, "unreferenced content to be collected locally and on HDFS")
    except ServiceError as error:
        still = f"{len(seen['local'])} files locally {seen['local'][:6]}, {seen['hdfs']} on HDFS"
        raise AssertionError(f"{error}: {still}") from error
    assert node.find("first-output")  # the flow ran while it collected


def hdfs_walk(storage, directory):
    for entry in storage.list(directory):
        if entry.is_dir:
            yield from hdfs_walk(storage, entry.path)
        else:
            yield entry.path


def test_an_adopter_runs_a_dead_nodes_shard_with_the_flow_it_was_written_under(flow_cluster, tmp_path):
    """n1 runs a newer flow than n2 (one more processor before PutFile, so other
    queues): n2 adopts n1's shard and drains it with n1's flow, exactly once, instead
    of stranding FlowFiles in queues its own flow does not have."""
    import yaml

    from cluster.drills.flow_cluster import FLOW

    with open(FLOW) as handle:
        newer = yaml.safe_load(handle)
    newer["processors"].insert(3, {"id": "tag", "type": "UpdateAttribute", "properties": {"custody.flow": "newer"}})
    newer["connections"] = [
        c for c in newer["connections"] if not (c["source"] == "rewrite" and c["destination"] == "put")
    ]
    newer["connections"] += [
        {"source": "rewrite", "relationships": ["success"], "destination": "tag"},
        {"source": "tag", "destination": "put", "swap_threshold": 100, "swap_batch": 50},
    ]
    newer_path = str(tmp_path / "newer.yaml")
    with open(newer_path, "w") as handle:
        yaml.safe_dump(newer, handle)

    cluster = flow_cluster
    # n2 first: n1's 600 FlowFiles drain through PutFile in about 6 s, so n1 must not
    # wait for n2's start (seconds on a loaded machine) before the test can catch them queued.
    n2 = cluster.start("n2", count=100)
    n2.wait("joined", timeout=60)
    n1 = cluster.start("n1", count=600, flow=newer_path)
    victim = n1.wait("joined", timeout=60)["incarnation"]
    shards = {shard.shard: shard for shard in cluster.shards()}
    assert shards[victim].flow != shards[n2.incarnation].flow and shards[victim].flow
    wait_until(lambda: cluster.queued(victim, "tag/success/put") > 100, 60, "n1 to queue FlowFiles before PutFile")
    n1.signal(signal.SIGKILL)
    n2.wait("adopted", timeout=90, shard=f"{victim}@{int(victim.rsplit('-', 1)[1]) + 1}")
    cluster.wait_settled(timeout=180)
    report = cluster.check()
    assert report.ok, report.summary()
