"""The ZooKeeper ensemble and the faults the drills need, against the real servers."""

import subprocess
import sys
import threading
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState
from kazoo.recipe.election import Election

from cluster.services.process import wait_until
from cluster.services.zookeeper import ZooKeeperEnsemble


def _client(hosts):
    client = KazooClient(hosts=hosts, timeout=4)
    client.start(timeout=30)
    return client


def test_election_changes_leader_when_the_leaders_session_expires(zk_hosts):
    leaders = []
    won = {name: threading.Event() for name in ("a", "b")}
    clients = {name: _client(zk_hosts) for name in ("a", "b")}

    def campaign(name):
        def lead():
            leaders.append(name)
            won[name].set()
            # Hold leadership until this client's session is gone.
            threading.Event().wait()

        Election(clients[name], "/leader", identifier=name).run(lead)

    threads = []
    try:
        threads.append(threading.Thread(target=campaign, args=("a",), daemon=True))
        threads[-1].start()
        assert won["a"].wait(30), "client a never became leader"
        threads.append(threading.Thread(target=campaign, args=("b",), daemon=True))
        threads[-1].start()
        contenders = Election(clients["b"], "/leader").contenders
        wait_until(lambda: contenders() == ["a", "b"], 30, "both clients to contend")
        assert not won["b"].is_set()

        # kazoo opens a new session right after the old one expires, so a's state may
        # already be CONNECTED again when expire_session returns: record the transitions.
        seen = []
        clients["a"].add_listener(lambda state: seen.append(state))
        ZooKeeperEnsemble.expire_session(clients["a"])
        assert KazooState.LOST in seen
        assert won["b"].wait(30), "leadership did not move to b after a's session expired"
        assert leaders == ["a", "b"]
    finally:
        for client in clients.values():
            client.stop()
            client.close()


def test_ephemeral_node_survives_loss_of_one_follower(zookeeper_ensemble, zk_hosts):
    client = _client(zk_hosts)
    try:
        client.create("/nodes/n1", b"{}", ephemeral=True, makepath=True)
        follower = zookeeper_ensemble.followers()[0]
        follower.process.kill()
        try:
            # A quorum of 2 of 3 remains: writes still succeed. The client may have been
            # connected to the killed follower: its call in flight then fails with
            # ConnectionLoss and the session moves to another member, as kazoo's retry
            # (what a user of a ZooKeeper client does) sees it.
            client.retry(client.set, "/nodes/n1", b'{"beat": 1}')
            assert client.retry(client.get, "/nodes/n1")[0] == b'{"beat": 1}'
        finally:
            zookeeper_ensemble.restart_member(follower.index)
        assert zookeeper_ensemble.healthy()
        assert client.retry(client.exists, "/nodes/n1") is not None
    finally:
        client.stop()
        client.close()


def test_members_log_their_role_and_the_sessions_they_establish(zookeeper_ensemble, zk_hosts):
    """Without an SLF4J binding ZooKeeper drops every line; an operator reading a member's
    server.log after a drill must find its role and the sessions it served."""
    client = _client(zk_hosts)
    try:
        session = f"0x{client.client_id[0]:x}"
        logs = [member.process.log_path for member in zookeeper_ensemble.members]

        def text(path):
            with open(path, errors="replace") as handle:
                return handle.read()

        wait_until(
            lambda: any(f"Committing global session {session}" in text(path) for path in logs),
            10,
            f"a member to log that it committed session {session}",
        )
        for path in logs:
            assert " - LEADING" in text(path) or " - FOLLOWING" in text(path), f"{path} names no role"
    finally:
        client.stop()
        client.close()


def test_custody_services_up_peak_runs_the_jvms_with_both_compilers_and_the_default_with_c1_alone(tmp_path):
    """`custody services up [--peak]` as a user types it: each running member's command
    line, read from /proc, says which JIT compilers it has."""
    custody = str(Path(sys.executable).parent / "custody")

    def tiering(workdir: Path, *options: str) -> list[list[str]]:
        up = subprocess.run(
            [custody, "services", "--workdir", str(workdir), "up", "--only", "zookeeper", *options],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert up.returncode == 0, up.stdout + up.stderr
        pids = [member.process.pid for member in ZooKeeperEnsemble(workdir).members]
        lines = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") for pid in pids]
        return [[o.decode() for o in line if o.startswith(b"-XX:TieredStopAtLevel")] for line in lines]

    workdirs = [tmp_path / "peak", tmp_path / "default"]
    try:
        assert tiering(workdirs[0], "--peak") == [[], [], []]
        assert tiering(workdirs[1]) == [["-XX:TieredStopAtLevel=1"]] * 3
    finally:
        for workdir in workdirs:
            ZooKeeperEnsemble(workdir).stop()
