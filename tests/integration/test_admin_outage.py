"""The admin API while ZooKeeper has no quorum: the cluster view and readiness answer
503 with the reason, at once and without a stack trace; the process still answers
/health; and the view comes back with quorum."""

from __future__ import annotations

import httpx
import pytest

from cluster.services.process import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow]


def test_without_zookeeper_quorum_the_cluster_view_is_503_with_the_reason(flow_cluster, zookeeper_ensemble):
    [node] = flow_cluster.start_joined(("n1",), count=50)
    url = flow_cluster.heartbeats()[node.incarnation].admin
    victims = [member.index for member in zookeeper_ensemble.members][:2]
    with httpx.Client(base_url=url, timeout=20) as client:
        assert client.get("/api/v1/cluster").status_code == 200
        try:
            for index in victims:
                zookeeper_ensemble.kill_member(index)
            # The first 503 is the answer to look at: a surviving leader that has not
            # noticed its followers are gone may still serve a read for a moment, and a
            # fresh request could reach it.
            [answer] = wait_until(
                lambda: (reply := client.get("/api/v1/cluster")).status_code == 503 and [reply],
                30,
                "the cluster view to answer 503",
            )
            assert "ZooKeeper" in answer.json()["error"], answer.text
            assert answer.elapsed.total_seconds() < 10, answer.elapsed
            assert "Traceback" not in answer.text
            assert client.get("/health").status_code == 200
            wait_until(lambda: client.get("/ready").status_code == 503, 30, "/ready to say the node is not ready")
        finally:
            for index in victims:
                zookeeper_ensemble.restart_member(index)
            zookeeper_ensemble.wait_healthy(60)
        wait_until(lambda: client.get("/api/v1/cluster").status_code == 200, 60, "the cluster view to come back")
        wait_until(lambda: client.get("/ready").status_code == 200, 90, "the node to be ready again")
