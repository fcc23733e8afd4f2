"""Crash detection (`cluster.core.liveness`) on a real cluster: real `custody node`
processes, the real ZooKeeper ensemble and HDFS, with a session timeout of 12 s. A
SIGKILLed member, or the leader, is taken over long before its session could expire
(the survivors' liveness connections to it ended and its port refused); a SIGSTOPped
one is not taken over before its session expires. Exactly once throughout."""

from __future__ import annotations

import signal
import time

import pytest

from cluster.core.ownership import ShardState
from cluster.services.process import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs]

SESSION = 12.0
# Far below the session timeout, far above what the takeover takes (about a second):
# only the liveness port can have told the survivors so soon.
WELL_BEFORE_EXPIRY = SESSION / 2
SECTIONS = {"zookeeper": {"session_timeout": SESSION}}


def _taken_over(cluster, victim: str) -> bool:
    shard = cluster.shard(victim)
    return shard is not None and shard.owner != victim and shard.state in (ShardState.DRAINING, ShardState.RETIRED)


def _leader(cluster) -> str | None:
    contenders = cluster.store.contenders()
    return contenders[0] if contenders else None


def _start(cluster, names: list[str], count: int = 300) -> dict:
    nodes = {name: cluster.start(name, count=count, sections=SECTIONS) for name in names}
    for node in nodes.values():
        node.wait("joined", timeout=90)
    return nodes


def _finish(cluster) -> None:
    cluster.wait_settled()
    report = cluster.check()
    assert report.ok, report.summary()


def test_a_killed_member_and_then_the_killed_leader_are_taken_over_long_before_their_sessions_expire(flow_cluster):
    cluster = flow_cluster
    nodes = _start(cluster, ["n1", "n2", "n3"])
    by_incarnation = {node.incarnation: node for node in nodes.values()}
    wait_until(lambda: _leader(cluster) in by_incarnation, 60, "a leader among the nodes")
    leader = _leader(cluster)
    follower = next(incarnation for incarnation in by_incarnation if incarnation != leader)

    for victim in (follower, leader):
        wait_until(lambda: cluster.delivered() > 0, 60, "delivery")
        killed = time.monotonic()
        by_incarnation[victim].signal(signal.SIGKILL)
        wait_until(lambda v=victim: _taken_over(cluster, v), 60, f"{victim}'s shard to be taken over")
        took = time.monotonic() - killed
        assert took < WELL_BEFORE_EXPIRY, f"{victim} taken over {took:.1f}s after its death (session {SESSION}s)"
        if victim == leader:
            assert _leader(cluster) not in (None, leader)
    _finish(cluster)


def test_a_stopped_member_is_not_taken_over_before_its_session_expires(flow_cluster):
    cluster = flow_cluster
    nodes = _start(cluster, ["n1", "n2"], count=200)
    victim = nodes["n2"]
    incarnation = victim.incarnation
    stopped = time.monotonic()
    victim.signal(signal.SIGSTOP)
    try:
        wait_until(lambda: _taken_over(cluster, incarnation), SESSION + 60, f"{incarnation}'s shard to be taken over")
        took = time.monotonic() - stopped
        # A hung process ends no connection: only its session's expiry lets it go.
        assert took >= SESSION - 1.0, f"{incarnation} taken over {took:.1f}s after it stopped (session {SESSION}s)"
    finally:
        victim.signal(signal.SIGCONT)
    _finish(cluster)
