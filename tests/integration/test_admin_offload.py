"""Offload through the admin API, as an operator does it: a node under load (the
leader, with a backlog partly swapped out to HDFS) hands every shard to the others
through the failover protocol, at once, and stays up owning nothing; connected again,
it joins as a new incarnation. Nothing is lost or duplicated (the drill checker
counts it at the sink and in provenance)."""

from __future__ import annotations

import httpx
import pytest

from cluster.admin.tokens import add_token
from cluster.core.ownership import ShardState
from cluster.drills.flow_cluster import SWAPPED_QUEUE
from cluster.services.process import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow]


def test_offloading_the_leader_under_load_moves_every_shard_once_and_connect_joins_again(flow_cluster, tmp_path):
    cluster = flow_cluster
    tokens = str(tmp_path / "tokens")
    operator, reader = add_token(tokens, "admin", "ops"), add_token(tokens, "read", "dashboard")
    admin = {"admin": {"tokens": tokens}}
    # The leader starts first and must still hold a backlog once the others have joined:
    # 2,000 FlowFiles take 20 s at PutFile's pace (with 1,000, a loaded machine can take
    # the 10 s they last to start the other two).
    n1 = cluster.start("n1", count=2000, sections=admin)
    n1.wait("leader", timeout=60)
    n2 = cluster.start("n2", count=100, sections=admin)
    n3 = cluster.start("n3", count=100, sections=admin)
    for node in (n2, n3):
        node.wait("joined", timeout=60)
    first = n1.incarnation
    url = cluster.heartbeats()[first].admin
    assert url.startswith("http://127.0.0.1:"), url  # the real address, in the heartbeat
    wait_until(
        lambda: cluster.queued(first) > 150 and cluster.swap_files(first),
        60,
        f"{first} to queue past the swap threshold of {SWAPPED_QUEUE} and swap to HDFS",
    )

    with httpx.Client(base_url=url, timeout=90) as client:
        refused = client.post("/api/v1/node/offload", headers={"Authorization": f"Bearer {reader}"})
        assert refused.status_code == 403, refused.text
        assert client.post("/api/v1/node/offload").status_code == 401
        assert client.get("/ready").status_code == 200
        answer = client.post(
            "/api/v1/node/offload", params={"wait_s": 60}, headers={"Authorization": f"Bearer {operator}"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["state"] == "OFFLOADED", answer.json()
        # It owns nothing: its shard went to another node at a new epoch, without a
        # session timeout (the process is alive and answers).
        shard = cluster.shard(first)
        assert shard.owner not in (None, first) and shard.epoch > 1 and shard.state is not ShardState.ADOPTING, shard
        assert first not in cluster.heartbeats()
        assert n1.process.poll() is None
        not_ready = client.get("/ready")
        assert not_ready.status_code == 503 and "OFFLOADED" in not_ready.json()["reasons"][0], not_ready.text
        view = client.get("/api/v1/cluster", headers={"Authorization": f"Bearer {reader}"}).json()
        assert view["leader"] not in (None, first), view["leader"]  # leadership went with it
        assert {m["incarnation"] for m in view["members"]} == {n2.incarnation, n3.incarnation}
        assert any(f["dead"] == first for f in view["failovers"]), view["failovers"]

        # The cluster's queues and processors from any node (NiFi's request replication):
        # n1, a member no more, asks n2 and n3 over HTTP with the caller's token; n2
        # answers for itself and asks n3. Each shard once, the adopted one included.
        members = {n2.incarnation, n3.incarnation}
        assert client.get("/api/v1/cluster/queues").status_code == 401
        by_member = {
            member["incarnation"]: httpx.get(
                f"{member['admin']}/api/v1/node/queues", headers={"Authorization": f"Bearer {reader}"}, timeout=30
            ).json()
            for member in view["members"]
        }
        moved_to = shard.owner
        assert first in by_member[moved_to], (moved_to, by_member)
        everywhere = client.get("/api/v1/cluster/queues", headers={"Authorization": f"Bearer {reader}"}).json()
        assert set(everywhere["shards"]) == set(by_member[n2.incarnation]) | set(by_member[n3.incarnation])
        assert {m["incarnation"] for m in everywhere["members"] if m["answered"] and not m["error"]} == members
        assert {q["queue"] for q in everywhere["shards"][first]} == {q["queue"] for q in by_member[moved_to][first]}
        n2_url = next(m["admin"] for m in view["members"] if m["incarnation"] == n2.incarnation)
        processors = httpx.get(
            f"{n2_url}/api/v1/cluster/processors", headers={"Authorization": f"Bearer {reader}"}, timeout=30
        ).json()
        assert set(processors["shards"]) == set(everywhere["shards"]), processors
        assert all(m["answered"] and m["answered_at"] for m in processors["members"]), processors["members"]
        assert {p["processor"] for p in processors["shards"][n2.incarnation]} == {"generate", "stamp", "rewrite", "put"}

        # Its adopter records when the shard first delivered there: the failover's resume.
        def failover():
            view = client.get("/api/v1/cluster", headers={"Authorization": f"Bearer {reader}"}).json()
            return next(f for f in view["failovers"] if f["dead"] == first)

        wait_until(lambda: failover()["resumed_at"] is not None, 60, "the failover's resume time")
        moved = failover()
        assert moved["detected_at"] <= moved["resumed_at"] and moved["resume_s"] >= 0, moved
        connected = client.post("/api/v1/node/connect", headers={"Authorization": f"Bearer {operator}"})
        assert connected.status_code == 200, connected.text
    wait_until(lambda: len(n1.find("joined")) == 2, 60, "n1 to join again")
    second = n1.incarnation
    assert second != first and cluster.shard(second) is not None and cluster.shard(second).owner == second
    wait_until(lambda: cluster.shard(first).state is ShardState.RETIRED, 120, f"{first}'s shard to retire")
    cluster.wait_settled()
    report = cluster.check()
    assert report.ok, report.summary()
    assert report.created >= 1200, report.summary()
    print(report.summary())
