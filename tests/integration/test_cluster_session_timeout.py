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

    member = ClusterMember(MemberConfig(zk_hosts=zk_hosts, cluster="c1", node="n1", session_timeout=30.0,
                                        hdfs_root=str(tmp_path)), LocalStorage(), never_runs)
    with pytest.raises(SessionTimeoutRefused, match="granted a session timeout of 20s, less than the 30s"):
        member.start()
    member.stop(leave=False)
    store = ClusterStore(zk_client, ClusterLayout("c1", str(tmp_path)))
    assert store.incarnation_counter() == 0 and store.members() == {}  # it drew no incarnation, joined nothing
