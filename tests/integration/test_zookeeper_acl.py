"""ZooKeeper credentials and ACLs, on the real ensemble: with `[zookeeper]
credentials_file`, every znode a node creates under the cluster's root is the
identity's alone, and a client without the credentials (or with others) can neither
read nor change anything there; a cluster made before credentials is refused by name
until `custody cluster secure` (run as a user types it) secures it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from cluster.clients import ClientFactory, ZooKeeperSettings, stop_quietly
from cluster.core.layout import ClusterLayout
from cluster.errors import ZooKeeperAccessRefused
from cluster.zk.acl import OPEN, acl_state, digest_acl, shared_parent_acl
from cluster.zk.store import ClusterStore

pytestmark = [pytest.mark.zookeeper]
CREDENTIALS = "custody:s3cret-for-tests"


@pytest.fixture
def credentials_file(tmp_path):
    path = tmp_path / "zookeeper"
    path.write_text(CREDENTIALS + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture
def owner(zk_hosts):
    """A client with the credentials; at the end it removes what only it can remove."""
    client = ClientFactory(ZooKeeperSettings(zk_hosts, credentials=CREDENTIALS)).start_zookeeper()
    yield client
    client.delete("/custody", recursive=True)
    stop_quietly(client)


def anonymous(zk_hosts, auth: str | None = None):
    client = KazooClient(hosts=zk_hosts, timeout=10, auth_data=[("digest", auth)] if auth else None)
    client.start(timeout=30)
    return client


def refused_everything(client, root: str) -> list[str]:
    """Each attempt to read or change the cluster that ZooKeeper did NOT refuse."""
    allowed = []
    for what, attempt in [
        ("list the root", lambda: client.get_children(root)),
        ("read the root", lambda: client.get(root)),
        ("list the members", lambda: client.get_children(f"{root}/nodes")),
        ("read a shard", lambda: client.get(f"{root}/shards")),
        ("create a member", lambda: client.create(f"{root}/nodes/intruder-1", b"{}", ephemeral=True)),
        ("rewrite the shards", lambda: client.set(f"{root}/shards", b"x")),
        ("delete the plans", lambda: client.delete(f"{root}/plans")),
        ("open the root's ACL", lambda: client.set_acls(root, [make_digest_acl("x", "y", all=True)])),
    ]:
        try:
            attempt()
            allowed.append(what)
        except NoAuthError:
            pass
    return allowed


def test_a_client_without_the_credentials_can_neither_read_nor_change_the_cluster(zk_hosts, owner):
    layout = ClusterLayout("secured")
    store = ClusterStore(owner, layout)
    store.ensure_paths()
    store.new_incarnation("n1")
    expected = [make_digest_acl(*CREDENTIALS.split(":"), all=True)]
    for path in [layout.root, *layout.zookeeper_paths()]:
        assert owner.get_acls(path)[0] == expected, path
    for auth in (None, "custody:wrong-password", "someone:else"):
        client = anonymous(zk_hosts, auth)
        try:
            assert refused_everything(client, layout.root) == [], auth
            with pytest.raises(ZooKeeperAccessRefused, match="protected by credentials|another identity"):
                ClusterStore(client, layout).ensure_paths()
        finally:
            stop_quietly(client)
    # Another cluster, other credentials, beside it under the shared parent: allowed.
    other = ClientFactory(ZooKeeperSettings(zk_hosts, credentials="other:pw")).start_zookeeper()
    try:
        ClusterStore(other, ClusterLayout("neighbour")).ensure_paths()
    finally:
        # Its owner empties it; only the shared parent's creator may remove the root itself.
        for child in other.get_children("/custody/neighbour"):
            other.delete(f"/custody/neighbour/{child}", recursive=True)
        stop_quietly(other)
    with pytest.raises(NoAuthError):
        anonymous_client = anonymous(zk_hosts)
        try:
            anonymous_client.delete("/custody/neighbour")
        finally:
            stop_quietly(anonymous_client)
    owner.delete("/custody/neighbour")


@pytest.mark.parametrize("credentials", [CREDENTIALS, None], ids=["credentials", "open"])
def test_a_missing_chroot_is_created_by_the_first_node_as_kafkas_brokers_do(zk_hosts, credentials):
    """`hosts = "h1:2181,h2:2181/custody-prod"` on an ensemble without /custody-prod: the
    node creates it (readable and open to creating by anyone, changed by the identity
    alone, as /custody is) instead of failing on a missing parent."""
    chrooted = f"{zk_hosts}/custody-prod"
    outside = anonymous(zk_hosts)
    assert outside.exists("/custody-prod") is None
    client = ClientFactory(ZooKeeperSettings(chrooted, credentials=credentials)).start_zookeeper()
    try:
        layout = ClusterLayout("chrooted")
        store = ClusterStore(client, layout)
        store.ensure_paths()
        store.new_incarnation("n1")
        assert outside.exists(f"/custody-prod{layout.nodes}") is not None  # under the chroot, seen from outside
        acl, _ = client.get_acls("/")  # the chroot (read as the identity: ZooKeeper masks a digest to others)
        if credentials:
            assert acl == shared_parent_acl(digest_acl(*CREDENTIALS.split(":"))), acl
            assert refused_everything(outside, "/custody-prod/custody/chrooted") == []
        else:
            assert acl_state(acl) == OPEN
    finally:
        client.delete("/custody", recursive=True)  # as the identity: the chroot itself is open to delete
        stop_quietly(client)
        stop_quietly(outside)


def test_a_cluster_made_before_credentials_is_refused_until_secured(zk_hosts, owner, credentials_file):
    layout = ClusterLayout("older")
    opened = anonymous(zk_hosts)
    try:
        ClusterStore(opened, layout).ensure_paths()  # world-open, as every release before credentials made it
        opened.create(f"{layout.root}/shards/n1-3", b"{}")
    finally:
        stop_quietly(opened)
    with pytest.raises(ZooKeeperAccessRefused, match="custody cluster secure"):
        ClusterStore(owner, layout).ensure_paths()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "cluster",
            "secure",
            "--zk",
            zk_hosts,
            "--cluster",
            "older",
            "--credentials-file",
            credentials_file,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.getcwd(),
    )
    assert done.returncode == 0, done.stderr
    assert "secured 6 znodes" in done.stdout, done.stdout
    ClusterStore(owner, layout).ensure_paths()  # now accepted
    client = anonymous(zk_hosts)
    try:
        assert refused_everything(client, layout.root) == []
        with pytest.raises(NoAuthError):
            client.get(f"{layout.root}/shards/n1-3")
    finally:
        stop_quietly(client)


@pytest.mark.hdfs
def test_every_znode_a_running_node_creates_is_the_identitys_alone(flow_cluster):
    """The flow cluster's nodes run with the credentials file it made for them."""
    from cluster.services.process import wait_until

    assert flow_cluster.credentials_file and os.stat(flow_cluster.credentials_file).st_mode & 0o077 == 0
    with open(flow_cluster.credentials_file) as file:
        user, password = file.read().strip().split(":")
    node = flow_cluster.start("n1")
    node.wait("joined", timeout=90)
    wait_until(lambda: flow_cluster.delivered() >= 10, 90, "n1 to deliver (its shard, heartbeat, election in place)")
    expected = [make_digest_acl(user, password, all=True)]
    client = flow_cluster.client
    root, seen, pending = flow_cluster.layout.root, [], [flow_cluster.layout.root]
    while pending:
        path = pending.pop()
        seen.append(path)
        assert client.get_acls(path)[0] == expected, path
        pending += [f"{path}/{child}" for child in client.get_children(path)]
    assert any("/nodes/n1-" in path for path in seen) and any("/shards/n1-" in path for path in seen), seen
    assert any("/leader/" in path for path in seen) and any("/counters" in path for path in seen), seen
    intruder = anonymous(flow_cluster.zk_hosts)
    try:
        assert refused_everything(intruder, root) == []
    finally:
        stop_quietly(intruder)
    flow_cluster.stop_all()


def custody(*argv, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "cluster.cli", *argv], capture_output=True, text=True, timeout=timeout, cwd=os.getcwd()
    )


def test_cluster_status_says_whether_the_clusters_znodes_are_open(zk_hosts, owner, credentials_file):
    import json

    opened = anonymous(zk_hosts)
    try:
        ClusterStore(opened, ClusterLayout("older")).ensure_paths()  # as a node with insecure = true makes it
    finally:
        stop_quietly(opened)
    ClusterStore(owner, ClusterLayout("secured")).ensure_paths()
    shown = custody("cluster", "status", "--zk", zk_hosts, "--cluster", "older", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["zookeeper_acl"] == "open", shown.stderr
    shown = custody("cluster", "status", "--zk", zk_hosts, "--cluster", "older")
    assert "ZooKeeper ACL open" in shown.stdout and "custody cluster credentials FILE" in shown.stdout, shown.stdout
    shown = custody(
        "cluster", "status", "--zk", zk_hosts, "--cluster", "secured", "--json", "--credentials-file", credentials_file
    )
    assert shown.returncode == 0 and json.loads(shown.stdout)["zookeeper_acl"] == "secured", shown.stderr


def node_toml(tmp_path, zookeeper: str) -> str:
    """NODE.toml of a node whose ZooKeeper and HDFS do not answer (port 9): it never joins."""
    (tmp_path / "flow.yaml").write_text(
        open(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "cluster.yaml")).read()
    )
    path = tmp_path / "n1.toml"
    path.write_text(
        f'name = "n1"\nflow = "flow.yaml"\n[zookeeper]\nhosts = "127.0.0.1:9"\ncluster = "main"\n'
        f'{zookeeper}\n[hdfs]\nurl = "hdfs://127.0.0.1:9"\n[admin]\nenabled = false\n'
    )
    return str(path)


def test_a_node_without_credentials_is_refused_in_one_line_unless_it_says_insecure(tmp_path):
    refused = custody("node", "--config", node_toml(tmp_path, ""))
    assert refused.returncode == 2, refused.stderr
    (line,) = refused.stderr.splitlines()
    assert "[zookeeper] credentials_file is required" in line and "insecure = true" in line, line


def test_an_insecure_node_says_once_at_start_that_its_znodes_are_open(tmp_path):
    import select
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "cluster.cli", "node", "--config", node_toml(tmp_path, "insecure = true")],
        stderr=subprocess.PIPE,
        text=True,
    )
    lines, deadline = [], time.monotonic() + 60
    try:
        # Past the warning, up to the second attempt to reach ZooKeeper: nothing says it again.
        while sum("Connecting to 127.0.0.1" in line for line in lines) < 2 and time.monotonic() < deadline:
            if select.select([process.stderr], [], [], deadline - time.monotonic())[0]:
                line = process.stderr.readline()
                if not line:
                    break  # it exited
                lines.append(line)
    finally:
        process.kill()  # a node still trying to reach ZooKeeper would wait out its connect timeout on SIGTERM
        lines += process.communicate(timeout=60)[1].splitlines()
    warnings = [line for line in lines if "ZooKeeper ACLs are open for cluster main" in line]
    assert len(warnings) == 1, "".join(lines[-20:])
    assert "custody cluster credentials FILE" in warnings[0] and "custody cluster secure" in warnings[0]
