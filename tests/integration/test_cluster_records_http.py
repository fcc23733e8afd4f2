"""The record flow fed over HTTP (`test_records_http_flow`: ListenHTTP with idempotency
keys -> ValidateRecord -> QueryRecord -> ConvertRecord -> PutFile) on a clustered node,
SIGKILLed while clients post to it. Each death ends an incarnation: the other node (or
the next incarnation) adopts its shards and finishes their FlowFiles, and the next
incarnation of the node, on the same port, takes over the idempotency keys its
ListenHTTP committed (`cluster.node.hand_over`), so that a client's retry of a request
whose 200 was lost is answered 200 without a second FlowFile. Every node writes to the
cluster's one sink; the checker counts lost, duplicated and unexpected keys in each
output (kept and negative records in Parquet, invalid ones in JSON lines).

CI: 3 kills. CUSTODY_LONG=1: 12."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest

from cluster.drills.checker import check_delivery
from cluster.node.events import NodeEvent
from cluster.services.network import free_ports
from cluster.services.process import wait_until

from .test_records_http_flow import BATCHES, FLOW, _batches, _keys, _post, _send_unanswered

KILLS = 12 if os.environ.get("CUSTODY_LONG") == "1" else 3
assert BATCHES >= 7 * KILLS + 1, "each life acknowledges up to 6 batches and leaves one in flight"
CLUSTER_FLOW = FLOW.replace("#{data_dir}", "#{out}").replace("properties: {port: 0}", 'properties: {port: "#{port}"}')
pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow, pytest.mark.timeout(300 + 60 * KILLS)]


def _post_until_answered(port: int, body: bytes, key: str, seed: int) -> None:
    """POST with `key` until a 200, as a client retries (the node may be joining, or its
    ListenHTTP starting), every 0.2 s for at most 120 s."""
    wait_until(lambda: _post(port, body, key), 120, f"seed {seed}: {key} answered 200", interval=0.2)


def test_records_over_http_on_a_clustered_node_survive_sigkill_exactly_once(flow_cluster, tmp_path):
    seed = int(os.environ.get("CUSTODY_DRILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    bodies, expected = _batches(rng)
    flow = tmp_path / "flow.yaml"
    flow.write_text(CLUSTER_FLOW)
    cluster = flow_cluster
    sink = Path(cluster.sink)
    ports = free_ports(2)
    cluster.start("n2", flow=str(flow), parameters={"port": ports[1]}).wait(NodeEvent.JOINED, timeout=90)
    node = cluster.start("n1", flow=str(flow), parameters={"port": ports[0]})
    acknowledged: set[int] = set()
    for _life in range(KILLS):
        node.wait(NodeEvent.JOINED, timeout=90)
        waiting = [number for number in range(BATCHES) if number not in acknowledged]
        for number in waiting[: rng.randint(2, 6)]:
            _post_until_answered(ports[0], bodies[number], f"batch-{number}", seed)
            acknowledged.add(number)
        # A request in flight when the node dies: all of its body sent, no answer read.
        number = next(number for number in range(BATCHES) if number not in acknowledged)
        _send_unanswered(ports[0], bodies[number], f"batch-{number}", whole=True)
        node.signal(signal.SIGKILL)
        cluster.nodes["n1"].close()
        node = cluster.start("n1")
    node.wait(NodeEvent.JOINED, timeout=90)
    for number, body in enumerate(bodies):
        if number not in acknowledged:
            _post_until_answered(ports[0], body, f"batch-{number}", seed)
    wanted = sum(len(keys) for keys in expected.values())
    wait_until(
        lambda: sum(len(_keys(sink / where)) for where in expected) >= wanted,
        180,
        f"seed {seed}: every record in one of the outputs",
    )
    cluster.wait_settled(timeout=180)
    for where, keys in expected.items():
        delivery = check_delivery(keys, _keys(sink / where))
        assert delivery.ok, f"seed {seed}, {where}: {delivery.summary()}"
    assert not _keys(sink / "failed"), f"seed {seed}: records went to failure"
    adopted = sum(len(n.find(NodeEvent.ADOPTED)) for n in cluster.nodes.values())
    handed = node.find("sources-handed-over")
    assert adopted >= 1 and handed, f"seed {seed}: {adopted} adoptions, hand-overs {handed}"
    print(
        f"records over HTTP on a cluster: {KILLS} kills, each with a request in flight; {adopted} adoptions; "
        + ", ".join(f"{where} {len(keys)}" for where, keys in expected.items())
    )
