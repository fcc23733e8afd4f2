"""/metrics of a running node, scraped over HTTP from its admin API (a real uvicorn on
127.0.0.1): what it counts agrees with what the node did, its names are Prometheus',
and a clustered node on the real ZooKeeper and HDFS publishes its HDFS calls and its
session state."""

from __future__ import annotations

import os
import threading
import time
import urllib.request

import pytest

from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.node.standalone import StandaloneNode
from flow.loading import parse_flow
from tests.prometheus_text import families, naming_problems, value

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLOWFILES = 2000
LOOPBACK = AdminSettings(bind="127.0.0.1", port=0)


def scrape(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
        return families(response.read().decode())


def swapping_flow(out: str):
    """Generate -> tag -> put; the queue in front of PutFile swaps (threshold 100), so
    that the WAL's transactions are commits, swap-outs and swap-ins."""
    return parse_flow({
        "name": "metrics",
        "processors": [
            {"id": "generate", "type": "GenerateFlowFile",
             "properties": {"batch_size": 200, "file_size": 100, "max_count": FLOWFILES}},
            {"id": "tag", "type": "UpdateAttribute", "properties": {"stage": "tagged"}},
            {"id": "put", "type": "PutFile", "properties": {"directory": out, "sync": False, "batch_size": 20},
             "auto_terminate": ["success"]},
        ],
        "connections": [
            {"source": "generate", "destination": "tag"},
            {"source": "tag", "destination": "put", "swap_threshold": 100, "swap_batch": 50},
            {"source": "put", "relationships": ["failure"], "destination": "put"},
        ]})


@pytest.fixture
def standalone(tmp_path):
    out = str(tmp_path / "out")
    node = StandaloneNode(swapping_flow(out), str(tmp_path / "node"))
    node.start(paused=True)
    server = serve(LOOPBACK, node.control())
    node.resume()
    yield node, server.url, out
    server.stop()
    node.stop()


def test_the_commit_counter_and_histogram_match_the_wal_transactions_the_node_made(standalone):
    node, url, out = standalone
    assert node.wait_until(lambda: node.engine.is_idle() and len(os.listdir(out)) == FLOWFILES, 60)
    found = scrape(url)
    assert not naming_problems(found), naming_problems(found)
    committed = value(found, "custody_commits", "_total", shard="local", outcome="committed")
    swaps = (value(found, "custody_swap_outs", "_total", shard="local"),
             value(found, "custody_swap_ins", "_total", shard="local"))
    # Every WAL transaction of this run is a commit, a swap-out or a swap-in (the node
    # started on an empty directory, so transaction ids started at 1).
    assert committed + sum(swaps) == node.shard.wal.max_transaction_id
    assert swaps[0] > 0 and swaps[1] > 0, swaps
    assert committed >= FLOWFILES / 200  # at least one commit per generated batch
    for outcome in ("refused", "failed", "unknown"):
        assert value(found, "custody_commits", "_total", shard="local", outcome=outcome) == 0
    assert value(found, "custody_commit_duration_seconds", "_count", shard="local") == committed
    assert value(found, "custody_commit_duration_seconds", "_bucket", shard="local", le="+Inf") == committed
    assert 0 < value(found, "custody_commit_duration_seconds", "_sum", shard="local") < committed * 5
    # Group commit: one sync serves one or more transactions.
    syncs = value(found, "custody_wal_sync_duration_seconds", "_count", shard="local")
    assert 0 < syncs <= node.shard.wal.max_transaction_id
    # What was there before stays.
    assert value(found, "custody_queue_flowfiles", shard="local", queue="tag/success/put") == 0
    assert value(found, "custody_processor_tasks", "_total", shard="local", processor="put") > 0
    assert value(found, "custody_node_state", state="RUNNING") == 1
    assert "custody_repository_bytes" in found
    assert "custody_hdfs_call_duration_seconds" not in found  # a standalone node has no HDFS


@pytest.mark.zookeeper
@pytest.mark.hdfs
def test_a_clustered_node_publishes_its_hdfs_call_latencies_and_session_state(zk_hosts, hdfs_cluster, hdfs_store,
                                                                               tmp_path):
    from cluster.node.clustered import ClusteredNode
    from cluster.node.config import NodeConfig

    config = NodeConfig(name="n1", flow=os.path.join(REPO, "examples", "cluster.yaml"), directory=str(tmp_path / "n1"),
                        zk_hosts=zk_hosts, cluster="metrics", hdfs_url=hdfs_cluster.url, hdfs_root=hdfs_store.root,
                        hdfs_config=hdfs_cluster.client_config, session_timeout=4.0, threads=2,
                        flow_parameters={"count": "300"}, admin_port=0)
    node = ClusteredNode(config)
    server = serve(LOOPBACK, node.control())
    stop = threading.Event()
    runner = threading.Thread(target=node.run, args=(stop,), name="clustered node", daemon=True)
    runner.start()
    try:
        def home_commits() -> float:
            shards = node.control().measures().shards
            return sum(m.commits["committed"] for m in shards.values())

        deadline = time.monotonic() + 40
        while (node.control().readiness() or home_commits() < 20) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not node.control().readiness() and home_commits() >= 20
        found = scrape(server.url)
    finally:
        stop.set()
        runner.join(30)
        server.stop()
    assert not naming_problems(found), naming_problems(found)
    states = {sample.labels["state"]: sample.value for sample in found["custody_zookeeper_session_state"].samples}
    assert states == {"CONNECTED": 1, "SUSPENDED": 0, "LOST": 0}
    calls = found["custody_hdfs_call_duration_seconds"]
    counts = {s.labels["operation"]: s.value for s in calls.samples if s.name.endswith("_count")}
    sums = {s.labels["operation"]: s.value for s in calls.samples if s.name.endswith("_sum")}
    # The home shard's WAL was created, written and hsynced on HDFS.
    assert counts["create"] > 0 and counts["write"] > 0 and counts["hsync"] >= 20, counts
    for operation, count in counts.items():
        if count:  # a plausible mean: above nothing, below the io timeout
            assert 0 < sums[operation] / count < config.hdfs_io_timeout, (operation, count, sums[operation])
    home = [s.labels["shard"] for s in found["custody_commits"].samples if s.labels["outcome"] == "committed"]
    assert len(home) == 1 and home[0].startswith("n1-"), home  # its home shard, named after its incarnation
    assert value(found, "custody_wal_sync_duration_seconds", "_count", shard=home[0]) > 0
    assert value(found, "custody_failover_plans", "_total") == 0  # nobody died
    assert value(found, "custody_adoptions", "_total", outcome="adopted") == 0
