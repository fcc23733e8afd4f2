"""A processor an operator stopped stays stopped when its node restarts as a new
incarnation, and in its node's shards wherever they are adopted; started again (on
any node that runs one of them), it runs in all of them. Real `custody node`
processes on the real ZooKeeper ensemble and HDFS, run as an operator runs them."""

from __future__ import annotations

import signal

import pytest

from cluster.core.ownership import ShardState
from cluster.drills.flow_cluster import SWAPPED_QUEUE
from cluster.services.process import wait_until
from tests.integration.test_admin_queues import Api

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow]


def processor_states(cluster, incarnation: str) -> dict[str, dict[str, str]]:
    """shard -> processor -> state, as the admin API of `incarnation`'s node answers."""
    api = Api(cluster.heartbeats()[incarnation].admin, None)
    return {
        shard: {p["processor"]: p["state"] for p in processors}
        for shard, processors in api.json("GET", "/api/v1/node/processors").items()
    }


def put_state(cluster, incarnation: str, shard: str) -> str | None:
    try:
        return processor_states(cluster, incarnation).get(shard, {}).get("put")
    except Exception:  # noqa: BLE001 - not answering yet
        return None


def test_a_stopped_processor_stays_stopped_after_a_restart_and_on_the_adopter_until_started(flow_cluster):
    cluster = flow_cluster
    # `put` delivers one FlowFile every 100 ms: most of each incarnation's 200 are still
    # queued when it is stopped.
    n1 = cluster.start("n1", count=200, put_batch=1)
    n1.wait("joined", timeout=60)
    first = n1.incarnation
    wait_until(lambda: cluster.heartbeats().get(first), 30, f"a heartbeat of {first}")
    api = Api(cluster.heartbeats()[first].admin, None)  # loopback, no token file: every caller is an admin
    stopped = api.json("POST", f"/api/v1/processors/{first}/put/stop?wait_s=10")
    assert stopped["state"] == "STOPPED"
    n2 = cluster.start("n2", count=200, put_batch=1)
    n2.wait("joined", timeout=60)
    wait_until(lambda: cluster.queued(first) >= 100, 30, f"{first}'s FlowFiles to queue before put")
    delivered = cluster.delivered()

    # A restart: a new incarnation, a new home shard, and `put` not scheduled in it.
    n1.signal(signal.SIGTERM)
    n1.process.wait(60)
    n1 = cluster.start("n1")
    n1.wait("joined", timeout=60)
    second = n1.incarnation
    assert second != first
    wait_until(lambda: put_state(cluster, second, second) is not None, 60, f"{second} to answer")
    assert put_state(cluster, second, second) == "STOPPED"
    assert stopped["scope"].startswith("node n1:")  # what the answer to the stop said it would do
    # Its first shard was adopted by n2, and runs there without `put` too.
    wait_until(lambda: put_state(cluster, n2.incarnation, first) is not None, 90, f"n2 to adopt {first}")
    assert put_state(cluster, n2.incarnation, first) == "STOPPED"
    assert processor_states(cluster, n2.incarnation)[n2.incarnation]["put"] == "RUNNING"  # n2's own: not n1's
    wait_until(lambda: cluster.queued(second) >= 100, 60, f"{second}'s FlowFiles to queue before put")

    # Killed: its shard is adopted, and `put` stays stopped on the adopter.
    n1.signal(signal.SIGKILL)
    wait_until(lambda: put_state(cluster, n2.incarnation, second) is not None, 90, f"n2 to adopt {second}")
    assert put_state(cluster, n2.incarnation, second) == "STOPPED"
    assert cluster.shard(second).state is ShardState.DRAINING
    wait_until(
        lambda: cluster.queued(n2.incarnation, SWAPPED_QUEUE, shard=second) > 0,
        30,
        f"n2's heartbeat to show {second}'s queue held before put",
    )
    assert all(put_state(cluster, n2.incarnation, shard) == "STOPPED" for shard in (first, second))
    assert cluster.delivered() >= delivered  # n2's own shard kept delivering meanwhile

    # Started again, on the adopter: both of n1's shards run `put`, drain and retire.
    adopter = Api(cluster.heartbeats()[n2.incarnation].admin, None)
    assert adopter.json("POST", f"/api/v1/processors/{second}/put/start")["state"] == "RUNNING"
    wait_until(lambda: put_state(cluster, n2.incarnation, first) in ("RUNNING", None), 30, f"put to run in {first} too")
    for shard in (first, second):
        wait_until(lambda: cluster.shard(shard).state is ShardState.RETIRED, 120, f"{shard} to drain and retire")  # noqa: B023
    cluster.wait_settled()
    report = cluster.check()
    assert report.ok, report.summary()
