"""The session guard must not time the node's own expiry by a longer timeout than the
one ZooKeeper granted: the servers clamp a requested timeout to their
[minSessionTimeout, maxSessionTimeout] (1 s and 20 s on the test ensemble). A node
asking for more refuses to start, and says what to set."""

from __future__ import annotations

import pytest

from cluster.clients import ClientFactory, ZooKeeperSettings, granted_session_timeout, stop_quietly
from cluster.core.layout import ClusterLayout
from cluster.errors import SessionTimeoutRefused
from cluster.failover.member import ClusterMember, MemberConfig
from cluster.zk.store import ClusterStore
from repositories.storage import LocalStorage

pytestmark = [pytest.mark.zookeeper]


def granted(zk_hosts, asked):
    client = ClientFactory(ZooKeeperSettings(zk_hosts, session_timeout=asked)).start_zookeeper()
    try:
        return granted_session_timeout(client)
    finally:
        stop_quietly(client)


def test_the_client_factory_records_the_timeout_the_server_granted(zk_hosts):
    assert granted(zk_hosts, 4.0) == 4.0
    assert granted(zk_hosts, 30.0) == 20.0  # cut to maxSessionTimeout
    assert granted(zk_hosts, 0.5) == 1.0  # raised to minSessionTimeout


def test_a_member_refuses_a_session_timeout_the_server_cuts_before_it_joins(zk_hosts, zk_client, tmp_path):
    def never_runs(handle):
        raise AssertionError("no shard may be opened")

    member = ClusterMember(
        MemberConfig(zk_hosts=zk_hosts, cluster="c1", node="n1", session_timeout=30.0, hdfs_root=str(tmp_path)),
        LocalStorage(),
        never_runs,
    )
    with pytest.raises(SessionTimeoutRefused, match="granted a session timeout of 20s, less than the 30s"):
        member.start()
    member.stop(leave=False)
    store = ClusterStore(zk_client, ClusterLayout("c1", str(tmp_path)))
    assert store.incarnation_counter() == 0 and store.members() == {}  # it drew no incarnation, joined nothing


class Runtime:
    """A shard runtime that only records whether it was stopped."""

    def __init__(self, handle):
        self.stopped = False

    def recover(self):
        pass

    def start(self):
        pass

    def stop(self):
        self.stopped = True

    def pause(self):
        pass

    def resume(self):
        pass

    def abort_open_sessions(self):
        pass

    def drained(self):
        return False

    def load(self):
        return {}

    def active_threads(self):
        return 0


def test_a_member_whose_reconnect_is_granted_less_ends_and_says_what_to_set(zk_hosts, tmp_path):
    """A server may grant a re-established session another timeout than the first connect
    got (an ensemble reconfigured with a lower maxSessionTimeout): the link between the
    member and its ZooKeeper member answers the reconnect with 5 s where 10 s was asked
    (10 s: the reconnect comes long before the guard's own timer, even on a busy machine)."""
    from tests.zookeeper_link import ZooKeeperLink

    first, _, chroot = zk_hosts.partition("/")
    host, _, port = first.split(",")[0].partition(":")
    link = ZooKeeperLink(host, int(port))
    runtimes = []

    def runtime(handle):
        runtimes.append(Runtime(handle))
        return runtimes[-1]

    member = ClusterMember(
        MemberConfig(
            zk_hosts=f"127.0.0.1:{link.port}/{chroot}",
            cluster="c1",
            node="n1",
            session_timeout=10.0,
            hdfs_root=str(tmp_path),
            lead=False,
        ),
        LocalStorage(),
        runtime,
    )
    try:
        member.start()
        assert granted_session_timeout(member.client) == 10.0 and not member.dead.is_set()
        link.grant_ms = 5000
        link.cut()
        assert member.wait_dead(30), "the member kept working on a session granted 5 s"
        assert isinstance(member.refusal, SessionTimeoutRefused)
        assert "granted a session timeout of 5s, less than the 10s" in str(member.refusal)
        assert "granted the session 5s" in member.death_reason and runtimes[0].stopped
    finally:
        member.stop(leave=False)
        link.close()
