"""Decommissioning a node, on real `custody node` processes, ZooKeeper and HDFS: a node
that was killed (its machine is gone) and one that is up; and the retention of what is
kept for a node that stays away, with the leader's clock injected.

A killed node's home shard is adopted, drained and retired by a survivor, which keeps
its directory for the node's next incarnation: its ListFile's listing mark and its
ListenHTTP's idempotency keys are in it (`cluster.node.hand_over`). Decommissioned, the
leader hands the keys to a survivor (its own home shard: a retry of a keyed request
there is answered as the first was) and drops the listing mark with a warning, then
deletes the directory and the node's znodes; the node's next start is refused with one
line naming `connect`, and after `custody node connect` it joins again."""

from __future__ import annotations

import logging
import re
import signal
import time
from pathlib import Path

import httpx
import pytest
from kazoo.client import KazooClient

from cluster.admin.tokens import add_token
from cluster.cli import main
from cluster.core import ownership as own
from cluster.core.heartbeat import Heartbeat
from cluster.core.layout import ClusterLayout
from cluster.core.ownership import ShardState
from cluster.failover.kept import KeptDirectories
from cluster.services.network import free_ports
from cluster.services.process import wait_until
from cluster.zk.decommissions import DecommissionRecords
from cluster.zk.store import ClusterStore
from flow.processors.intake import FileIdentity, IntakeState, TakenFile, pack
from flow.shard import open_shard

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow, pytest.mark.timeout(420)]

DAY = 86400.0
FLOW = """
name: decommission
parameters:
  inbox: /tmp/inbox
  port: "0"
processors:
  - id: listen
    type: ListenHTTP
    properties:
      port: "#{port}"
  - id: list
    type: ListFile
    properties:
      input_directory: "#{inbox}"
    scheduling: {run_schedule: 200 ms}
  - id: put
    type: PutFile
    properties:
      directory: "#{out}"
      sync: false
    auto_terminate: [success]
connections:
  - {source: listen, destination: put}
  - {source: list, destination: put}
  - {source: put, relationships: [failure], destination: put}
"""


def post(port: int, body: bytes, key: str) -> int:
    """A keyed POST to a node's ListenHTTP; its status (0 while nothing listens)."""
    try:
        return httpx.post(
            f"http://127.0.0.1:{port}/contentListener",
            content=body,
            timeout=10,
            headers={"Idempotency-Key": key, "Content-Type": "text/plain"},
        ).status_code
    except httpx.TransportError:
        return 0


def kept_for(cluster, incarnation: str) -> list[str]:
    storage = cluster.clients.hdfs_storage()
    try:
        return [s.name for s in storage.list(cluster.layout.hdfs_shards) if s.name.split("-fenced-")[0] == incarnation]
    finally:
        storage.close()


def test_a_dead_node_decommissioned_hands_its_keys_over_leaves_nothing_and_joins_only_after_connect(
    flow_cluster, tmp_path, capsys
):
    cluster = flow_cluster
    flow = tmp_path / "decommission.yaml"
    flow.write_text(FLOW)
    # Below the kernel's ephemeral range: the survivor's ListenHTTP gives its port up for
    # the moment of the merge, and a port of that range may go to any outgoing
    # connection's local end meanwhile ("Address already in use" in CI).
    ports = dict(zip(("n1", "n2", "n3"), free_ports(3), strict=True))

    def start(name):
        inbox = tmp_path / f"inbox-{name}"
        inbox.mkdir(exist_ok=True)
        return cluster.start(name, flow=str(flow), parameters={"inbox": str(inbox), "port": str(ports[name])})

    n1 = start("n1")
    n1.wait("leader", timeout=90)
    start("n2").wait("joined", timeout=90)
    n3 = start("n3")  # the newest incarnation drawn: nothing is judged by its epoch alone
    n3.wait("joined", timeout=90)
    # n3's sources take something: a file it lists on its machine, and a keyed request.
    (tmp_path / "inbox-n3" / "a.txt").write_text("listed on n3")
    wait_until(lambda: post(ports["n3"], b"hello", "k-1") == 200, 60, "n3's ListenHTTP to take a keyed request")
    wait_until(lambda: cluster.delivered() >= 2, 60, "n3's two FlowFiles to be delivered")
    dead = n3.incarnation
    n3.signal(signal.SIGKILL)
    cluster.nodes["n3"].close()
    wait_until(
        lambda: (shard := cluster.shard(dead)) is not None and shard.state is ShardState.RETIRED,
        120,
        f"{dead}'s shard to be adopted, drained and retired",
    )
    kept = wait_until(lambda: kept_for(cluster, dead), 30, f"the directory kept for {dead}'s sources' hand-over")
    assert cluster.plan(dead) is not None

    config = str(tmp_path / "n3.toml")  # n3's own file: any node's would do, it is read for ZooKeeper and HDFS
    assert main(["node", "decommission", "n3", "--config", config]) == 0
    assert "n3: decommissioning (it is not a member" in capsys.readouterr().out
    records = DecommissionRecords(cluster.client, cluster.layout)
    record = wait_until(
        lambda: (entry := records.read("n3")) is not None and entry[0].finished_at is not None and entry[0],
        120,
        "the leader to finish n3's decommission",
    )
    assert kept_for(cluster, dead) == [], kept
    assert cluster.shard(dead) is None and cluster.plan(dead) is None  # its records went with it
    notes = "\n".join(record.notes)
    assert f"{kept[0]}: dropped ListFile 'list': its listing mark on n3's machine" in notes, notes
    handed = next(note for note in record.notes if "handed ListenHTTP 'listen' (1 idempotency key(s))" in note)
    survivor = re.search(r"merged into its state on shard (\S+) \(stopped for \d+ ms\)", handed).group(1)
    node = next(name for name, process in cluster.nodes.items() if process.find("joined", incarnation=survivor))
    # The survivor knows n3's key: a retry with it is answered as the first was, and the
    # key reused for other data is refused, as n3 itself would have answered.
    assert post(ports[node], b"other data", "k-1") == 422
    assert post(ports[node], b"hello", "k-1") == 200
    assert (
        main(
            [
                "cluster",
                "status",
                "--zk",
                cluster.zk_hosts,
                "--cluster",
                "c1",
                "--credentials-file",
                cluster.credentials_file,
            ]
        )
        == 0
    )
    status = capsys.readouterr().out
    assert "decommissioned:" in status and "n3                   decommissioned" in status, status

    # A start under that name is refused with one line naming connect; nothing is taken.
    counter = cluster.store.incarnation_counter()
    refused = cluster.start("n3")
    assert refused.process.wait(90) == 2
    assert "was decommissioned from cluster c1" in refused.wait("start-failed", timeout=10, fatal=True)["error"]
    assert "custody node connect n3 --config NODE.toml" in refused.tail()
    assert cluster.store.incarnation_counter() == counter
    refused.close()

    assert main(["node", "connect", "n3", "--config", config]) == 0
    assert "n3: connectable" in capsys.readouterr().out
    assert records.read("n3") is None
    back = cluster.start("n3")
    back.wait("joined", timeout=90)
    handed_over = back.wait("sources-handed-over", timeout=60)
    assert handed_over["earlier"] == []  # nothing is kept for it any more: it starts as a new node
    assert main(["node", "connect", "n3", "--config", config]) == 1
    assert "node n3 is not decommissioned" in capsys.readouterr().err


def test_a_live_node_decommissioned_through_the_admin_api_leaves_stops_and_loses_nothing(flow_cluster, tmp_path):
    cluster = flow_cluster
    tokens = str(tmp_path / "tokens")
    operator, reader = add_token(tokens, "admin", "ops"), add_token(tokens, "read", "dashboard")
    admin = {"admin": {"tokens": tokens}}
    n1 = cluster.start("n1", count=300, sections=admin)
    n1.wait("leader", timeout=90)
    n2 = cluster.start("n2", count=300, sections=admin)
    n2.wait("joined", timeout=90)
    first = n2.incarnation
    url = cluster.heartbeats()[n1.incarnation].admin
    ops, read = {"Authorization": f"Bearer {operator}"}, {"Authorization": f"Bearer {reader}"}
    with httpx.Client(base_url=url, timeout=30) as client:
        unknown = client.post("/api/v1/cluster/nodes/n9/decommission", headers=ops)
        assert unknown.status_code == 404 and "no node n9 is known to cluster c1" in unknown.json()["error"]
        impossible = client.post("/api/v1/cluster/nodes/n2-5/decommission", headers=ops)
        assert impossible.status_code == 404 and "no node can be called 'n2-5'" in impossible.json()["error"]
        assert client.post("/api/v1/cluster/nodes/n2/decommission", headers=read).status_code == 403
        nothing = client.post("/api/v1/cluster/nodes/n2/connect", headers=ops)
        assert nothing.status_code == 409 and "not decommissioned" in nothing.json()["error"]

        # An operator stopped n2's source: kept in ZooKeeper, it would outlive n2's
        # decommission and keep the n2 that connects again from making anything.
        with httpx.Client(base_url=cluster.heartbeats()[first].admin, timeout=30) as on_n2:
            stopped = on_n2.post(f"/api/v1/processors/{first}/generate/stop", params={"wait_s": 10}, headers=ops)
            assert stopped.status_code == 200, stopped.text
        run_states = cluster.store.operator.run_states_path("n2")
        # The node wrote it through its own session, perhaps to another server of the
        # ensemble: ZooKeeper's reads are not linearizable across clients, so this one
        # syncs its server with the leader before it reads.
        cluster.client.sync(run_states)
        assert cluster.client.exists(run_states)

        answer = client.post("/api/v1/cluster/nodes/n2/decommission", headers=ops)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert (body["state"], body["decommissioned"], body["live"]) == ("decommissioning", True, [first]), body
        # It leaves at once, as an offload does, and stops; its shard goes to n1 by a plan.
        assert n2.process.wait(90) == 2
        assert "was decommissioned from cluster c1" in n2.tail()
        wait_until(
            lambda: (
                (shard := cluster.shard(first)) is not None
                and shard.owner == n1.incarnation
                and shard.epoch > shard.history[0].epoch
            ),
            60,
            f"{first}'s shard to move to n1",
        )
        assert (
            client.post("/api/v1/cluster/nodes/n2/decommission", headers=ops)
            .json()["detail"]
            .startswith("node n2 was decommissioned already")
        )
        only = client.post("/api/v1/cluster/nodes/n1/decommission", headers=ops)
        assert only.status_code == 409 and "only member" in only.json()["error"]

        def decommissioned():
            view = client.get("/api/v1/cluster", headers=read).json()
            return next(
                (d for d in view["decommissioned"] if d["node"] == "n2" and d["state"] == "decommissioned"), None
            )

        wait_until(decommissioned, 120, "n2's decommission to finish once its shard retired")
        assert cluster.shard(first) is None
        cluster.client.sync(run_states)
        assert not cluster.client.exists(run_states)  # nothing of n2 is left, its operator's stop neither
        connected = client.post("/api/v1/cluster/nodes/n2/connect", headers=ops)
        assert connected.status_code == 200 and connected.json()["state"] == "connectable", connected.text
    again = cluster.start("n2")
    again.wait("joined", timeout=90)
    cluster.wait_settled()
    report = cluster.check()
    assert report.ok, report.summary()
    # n1's 300 and the new n2's 300, and what the first n2 made before it left: none lost, none twice.
    assert report.created >= 600, report.summary()


# -- the retention, with the leader's clock injected ----------------------------------------------
def test_what_was_kept_for_a_node_away_longer_than_the_retention_is_collected_with_a_warning(
    zk_hosts, hdfs_store, caplog
):
    layout = ClusterLayout("c1", hdfs_store.root)
    storage = hdfs_store.storage
    client = KazooClient(hosts=zk_hosts, timeout=10)
    client.start(timeout=30)
    try:
        store = ClusterStore(client, layout)
        store.ensure_paths()
        survivor = store.new_incarnation("n1")
        store.membership(Heartbeat("n1", survivor.id, survivor.epoch)).join()
        # n3 died; n1 adopted its home shard, drained and retired it, and kept its directory:
        # its GetFile had taken a file on n3's machine and not deleted it yet.
        dead = store.new_incarnation("n3")
        store.shards.create_home_shard(dead.id, dead.id, dead.epoch)
        directory = layout.fenced_directory(dead.id, dead.epoch + 1)
        shard = open_shard(
            storage, directory, dead.id, [], epoch=dead.epoch + 1, partitions=1, checkpoint_interval=None
        )
        shard.recover()
        identity = FileIdentity(7, 1, 5)
        taken = pack(IntakeState(taken={identity: TakenFile(identity, "/in/a.csv")}))
        shard.wal.update(shard.state_updates("get", taken, 1))
        shard.wal.close()
        store.shards.transition(dead.id, lambda c: own.reassign(c, survivor.id, expected_epoch=dead.epoch, at=1.0))
        store.shards.mark_adopted(dead.id, survivor.id, dead.epoch + 1)
        store.shards.retire(dead.id, survivor.id, dead.epoch + 1)
        store.new_incarnation("n2")  # a later start: the counter is past n3's epoch

        now = [time.time()]
        kept = KeptDirectories(store, storage, retention=7 * DAY, wall_clock=lambda: now[0])
        assert kept.collect().collect == () and storage.exists(directory)  # a week not passed yet
        now[0] += 7 * DAY + 60
        returned = store.new_incarnation("n3")  # n3 is back: its own hand-over reads and deletes it
        membership = store.membership(Heartbeat("n3", returned.id, returned.epoch))
        membership.join()
        assert kept.collect().collect == () and storage.exists(directory)
        membership.stop(leave=True)
        with caplog.at_level(logging.WARNING, logger="cluster.failover.kept"):
            plan = kept.collect()
        assert [(c.directory.name, c.directory.node) for c in plan.collect] == [(Path(directory).name, "n3")]
        assert not storage.exists(directory)
        warning = caplog.text
        assert "node n3 has been away for 7.0 days, longer than the retention of 7.0 days" in warning, warning
        assert "1 file(s) it took on n3's machine and had not deleted or moved yet (/in/a.csv)" in warning, warning
        assert kept.collect().collect == ()
    finally:
        client.stop()
        client.close()


def test_a_node_known_only_by_what_was_kept_for_it_can_be_decommissioned_and_a_node_connects_only_once_cleared(
    zk_hosts, hdfs_store
):
    """Days after a node died its znodes are collected, and the directory kept for it is
    all that names it: decommissioning it must still find it. An offloaded node asked to
    connect while its name is decommissioned is told to clear the name first."""
    from cluster.node.control_errors import Conflict, NotFound
    from cluster.node.decommission import check_may_connect, connect_node, decommission_node

    layout = ClusterLayout("c1", hdfs_store.root)
    storage = hdfs_store.storage
    storage.mkdir(layout.shard_directory("n3-17-fenced-18"), parents=True)
    client = KazooClient(hosts=zk_hosts, timeout=10)
    client.start(timeout=30)
    try:
        store = ClusterStore(client, layout)
        store.ensure_paths()
        with pytest.raises(NotFound, match="no node n4 is known to cluster c1"):
            decommission_node(store, storage, "n4", requested_by="test")
        check_may_connect(store, "n3")
        answer = decommission_node(store, storage, "n3", requested_by="test", wall_clock=lambda: 1000.0)
        assert (answer["state"], answer["live"], answer["requested_at"]) == ("decommissioning", [], 1000.0)
        with pytest.raises(Conflict, match="custody node connect n3 --config NODE.toml"):
            check_may_connect(store, "n3")
        assert connect_node(store, storage, "n3")["state"] == "connectable"
        check_may_connect(store, "n3")
        with pytest.raises(Conflict, match="node n3 is not decommissioned"):
            connect_node(store, storage, "n3")
    finally:
        client.stop()
        client.close()
