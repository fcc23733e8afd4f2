"""A rolling flow deploy, as an operator types it (`custody flow deploy`): each node
in turn is offloaded (its shards adopted under the flow they were written under) and
connected again on the new flow. Every node ends on the new version, the old shards
drain and retire, and nothing is lost or duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import pytest
import yaml

from cluster.admin.tokens import add_token
from cluster.core.flows import FlowSnapshot
from cluster.core.ownership import ShardState
from cluster.drills.flow_cluster import FLOW
from cluster.services.process import wait_until
from flow.definition import read_flow_document

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow]


def test_a_rolling_deploy_moves_every_node_to_the_new_flow_and_loses_nothing(flow_cluster, tmp_path):
    cluster = flow_cluster
    tokens = str(tmp_path / "tokens")
    operator = add_token(tokens, "admin", "ops")
    nodes = cluster.start_joined(("n1", "n2", "n3"), timeout=60, count=300, sections={"admin": {"tokens": tokens}})
    old = FlowSnapshot(read_flow_document(FLOW)).version
    assert all(cluster.shard(node.incarnation).flow == old for node in nodes)
    first = {node.name: node.incarnation for node in nodes}
    wait_until(lambda: cluster.delivered() > 100, 60, "delivery to start")

    document = read_flow_document(FLOW)
    next(p for p in document["processors"] if p["id"] == "stamp")["properties"]["custody.stage"] = "stamped-v2"
    new_flow = tmp_path / "cluster-v2.yaml"
    new_flow.write_text(yaml.safe_dump(document))
    new = FlowSnapshot(read_flow_document(str(new_flow))).version
    url = cluster.heartbeats()[first["n2"]].admin

    # A flow the nodes cannot run is refused before anything moves.
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        yaml.safe_dump({**document, "processors": [{"id": "x", "type": "NoSuchProcessor"}], "connections": []})
    )
    env = {**os.environ, "CUSTODY_ADMIN_TOKEN": operator}
    refused = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "flow", "deploy", str(broken), "--url", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert refused.returncode == 2 and "NoSuchProcessor" in refused.stderr, refused.stderr
    assert {node.name: node.incarnation for node in nodes} == first

    deployed = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "flow", "deploy", str(new_flow), "--url", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    assert f"every node runs flow version {new}" in deployed.stdout, deployed.stdout

    for node in nodes:
        assert node.incarnation != first[node.name], node.name  # each joined again
        assert cluster.shard(node.incarnation).flow == new
        assert node.process.poll() is None
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {operator}"}) as client:
        versions = client.get("/api/v1/flow").json()
        assert versions["cluster_version"] == new
        for incarnation in first.values():
            assert versions["shards"][incarnation] == old  # the old shards keep the flow they were written under
    for incarnation in first.values():
        wait_until(lambda: cluster.shard(incarnation).state is ShardState.RETIRED, 120, f"{incarnation} to retire")  # noqa: B023
    cluster.wait_settled()
    sink = cluster.sink
    stages = {
        open(os.path.join(sink, name)).read().rsplit("stage=", 1)[-1].strip()
        for name in os.listdir(sink)
        if not name.startswith(".")
    }
    assert stages == {"stamped", "stamped-v2"}, stages
    report = cluster.check()
    assert report.ok, report.summary()
    print(report.summary())


def test_a_deploy_whose_receiving_leader_is_killed_mid_roll_is_finished_by_the_next_leader(flow_cluster, tmp_path):
    """The deploy goes to the leader's admin API, and the leader is SIGKILLed while the
    first member's step is in progress: the roll is in ZooKeeper, so the next leader
    takes it over and finishes it, and `GET /api/v1/flow` on any node says so."""
    cluster = flow_cluster
    nodes = cluster.start_joined(("n1", "n2", "n3"), timeout=60, count=150)
    by_incarnation = {node.incarnation: node for node in nodes}
    leader = wait_until(lambda: (c := cluster.store.contenders()) and c[0], 30, "a leader")
    document = read_flow_document(FLOW)
    next(p for p in document["processors"] if p["id"] == "stamp")["properties"]["custody.stage"] = "stamped-v2"
    new = FlowSnapshot(document).version
    leader_api = httpx.Client(base_url=cluster.heartbeats()[leader].admin, timeout=60)  # loopback: no token
    accepted = leader_api.post("/api/v1/flow/deploy", json={"flow": document})
    assert accepted.status_code == 202, accepted.text
    first_step = accepted.json()["nodes"][0]["incarnation"]
    assert accepted.json()["nodes"][-1]["incarnation"] == leader  # the leader's own step comes last
    survivor = next(node for node in nodes if node.incarnation not in (leader, first_step))
    survivor_api = httpx.Client(base_url=cluster.heartbeats()[survivor.incarnation].admin, timeout=30)

    wait_until(
        lambda: leader_api.get("/api/v1/flow/deploy").json()["nodes"][0]["state"] in ("offloading", "connecting"),
        60,
        "the first member's step to begin",
    )
    by_incarnation[leader].signal(signal.SIGKILL)
    leader_api.close()

    def ended():
        deploy = survivor_api.get("/api/v1/flow").json().get("deploy")
        return deploy if deploy is not None and deploy["state"] != "running" else None

    try:
        finished = wait_until(ended, 400, "a survivor to report the roll ended")
    finally:
        survivor_api.close()
    assert finished["state"] == "done", finished
    assert finished["outcome"].startswith("finished by leader ")
    assert finished["outcome"].endswith(f"after {leader} died")
    assert finished["received_by"] == leader
    assert any(
        note.startswith("taken over by leader ") and note.endswith(f"after {leader} died") for note in finished["notes"]
    ), finished["notes"]
    steps = {step["incarnation"]: step for step in finished["nodes"]}
    assert steps[leader]["state"] == "skipped" and "not a member" in steps[leader]["detail"]
    for name, step in steps.items():
        if name != leader:
            assert step["state"] == "done" and cluster.shard(step["new_incarnation"]).flow == new
    for node in nodes:
        if node.incarnation != leader:
            with httpx.Client(base_url=cluster.heartbeats()[node.incarnation].admin, timeout=30) as client:
                versions = client.get("/api/v1/flow").json()
            assert versions["cluster_version"] == new and versions["deploy"] == finished
