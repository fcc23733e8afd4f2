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
    return parse_flow(
        {
            "name": "metrics",
            "processors": [
                {
                    "id": "generate",
                    "type": "GenerateFlowFile",
                    "properties": {"batch_size": 200, "file_size": 100, "max_count": FLOWFILES},
                },
                {"id": "tag", "type": "UpdateAttribute", "properties": {"stage": "tagged"}},
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": out, "sync": False, "batch_size": 20},
                    "auto_terminate": ["success"],
                },
            ],
            "connections": [
                {"source": "generate", "destination": "tag"},
                {"source": "tag", "destination": "put", "swap_threshold": 100, "swap_batch": 50},
                {"source": "put", "relationships": ["failure"], "destination": "put"},
            ],
        }
    )


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
    swaps = (
        value(found, "custody_swap_outs", "_total", shard="local"),
        value(found, "custody_swap_ins", "_total", shard="local"),
    )
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


class RunningNode:
    """A clustered node in this process, on its own thread, with its admin API."""

    def __init__(self, name: str, zk_hosts: str, hdfs_cluster, root: str, directory):
        from cluster.node.clustered import ClusteredNode
        from cluster.node.config import NodeConfig

        self.config = NodeConfig(
            name=name,
            flow=os.path.join(REPO, "examples", "cluster.yaml"),
            directory=str(directory / name),
            zk_hosts=zk_hosts,
            cluster="metrics",
            hdfs_url=hdfs_cluster.url,
            hdfs_root=root,
            hdfs_config=hdfs_cluster.client_config,
            session_timeout=4.0,
            threads=2,
            flow_parameters={"count": "300"},
            admin_port=0,
        )
        self.node = ClusteredNode(self.config)
        self.control = self.node.control()
        self.server = serve(LOOPBACK, self.control)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.node.run, args=(self._stop,), name=f"node {name}", daemon=True)
        self._thread.start()

    def committed(self) -> float:
        return sum(m.commits["committed"] for m in self.control.measures().shards.values())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.server.stop()


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(0.2)


@pytest.fixture
def clustered(zk_hosts, hdfs_cluster, hdfs_store, tmp_path):
    started = []

    def start(name: str) -> RunningNode:
        started.append(RunningNode(name, zk_hosts, hdfs_cluster, hdfs_store.root, tmp_path))
        return started[-1]

    yield start
    for running in reversed(started):
        running.close()


@pytest.mark.zookeeper
@pytest.mark.hdfs
def test_a_clustered_node_publishes_its_hdfs_call_latencies_and_session_state(clustered):
    n1 = clustered("n1")
    wait_for(lambda: not n1.control.readiness() and n1.committed() >= 20, 40, "n1 to run and commit")
    found = scrape(n1.server.url)
    config = n1.config
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


@pytest.mark.zookeeper
@pytest.mark.hdfs
def test_an_offload_shows_in_plans_adoptions_fencing_and_the_offloaded_nodes_session(clustered):
    n1, n2 = clustered("n1"), clustered("n2")
    wait_for(lambda: not n1.control.readiness() and not n2.control.readiness(), 40, "both nodes to run")
    assert n1.control.offload(wait_s=40) == "OFFLOADED"
    wait_for(lambda: n2.control.measures().failover.adoptions["adopted"] >= 1, 20, "n2 to run n1's shard")
    found = scrape(n2.server.url)
    assert not naming_problems(found), naming_problems(found)
    assert value(found, "custody_adoptions", "_total", outcome="adopted") == 1
    assert value(found, "custody_fencing_duration_seconds", "_count") == 1
    fenced = value(found, "custody_fencing_duration_seconds", "_sum")
    adopted = value(found, "custody_adoption_duration_seconds", "_sum")
    assert value(found, "custody_adoption_duration_seconds", "_count") == 1
    assert 0 < fenced <= adopted < 40  # the fence is part of the adoption
    # Every plan in ZooKeeper was written by one of the two, as its leader.
    plans = len(n2.control.cluster_status().plans)
    led = [running.control.measures().failover.plans_led for running in (n1, n2)]
    assert plans >= 1 and sum(led) == plans, (plans, led)
    # The offloaded node left its session on purpose: no state is 1.
    assert n1.control.measures().session_state is None
    offloaded = scrape(n1.server.url)
    assert {
        value(offloaded, "custody_zookeeper_session_state", state=s) for s in ("CONNECTED", "SUSPENDED", "LOST")
    } == {0}
