"""Fault injectors for drills: what the failover protocol must survive, done to real
processes and services. SIGKILL and SIGSTOP are `NodeProcess.signal`; a DataNode or
a ZooKeeper member is killed through the service harness (`cluster.services`).

* `expire_session`: end a node's ZooKeeper session from outside, as ZooKeeper itself
  would when it hears nothing for a whole session timeout;
* `lose_quorum`: kill two of three ZooKeeper members until every node has stopped
  processing, then restore them;
* `CpuLoad`: every core of the machine kept busy by processes outside the cluster.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

from cluster.services.process import ServiceError, wait_until

from ..errors import ZooKeeperError
from ..node.events import NodeEvent
from ..node.session_file import read_session_text
from ..zk.client import close_session


def expire_session(
    zk_hosts: str, node, read_session: Callable[[], str], *, session_timeout: float, attempts: int = 3
) -> float:
    """Expire the session of `node` (its events: `find`, `wait`), whose session id and
    password `read_session()` returns: the text of its `zookeeper-session` file
    (`cluster.node.session_file`; never a log). Attach to the session and close it,
    which ends it for the node's own connection too. Attaching can lose its connection
    (the server may move the session back to the node's own connection first): then
    it is tried again. Returns once the node reported its death: the moment (wall
    clock) the attempt that ended the session began, from which a drill times the
    failover (an attempt that did not take costs the harness a wait, not the cluster)."""
    joined = node.find(NodeEvent.JOINED)[-1]
    incarnation = joined["incarnation"]

    def current_session():
        session = read_session_text(read_session())
        return session if session["incarnation"] == incarnation else None

    session = wait_until(current_session, 10, f"{incarnation}'s session file")
    for attempt in range(attempts):
        began = time.time()
        try:
            close_session(
                zk_hosts,
                session["session_id"],
                session["session_password"],
                session_timeout=session_timeout,
                timeout=30,
            )
        except ZooKeeperError as error:
            print(f"expiring {incarnation}: attempt {attempt + 1} failed: {error!r}", flush=True)
        try:
            node.wait(NodeEvent.DEAD, timeout=session_timeout + 5, incarnation=incarnation)
            return began
        except ServiceError:
            continue
    raise AssertionError(f"could not expire the session of {incarnation}")


def lose_quorum(zookeeper_ensemble, nodes) -> tuple[float, float]:
    """Kill two of the three ZooKeeper members, wait until every node has stopped
    processing (its gate closed, or its session declared over), then bring quorum
    back. Returns (lost at, restored at), wall clock; "lost at" is taken before the
    first member is killed, since a node connected to it pauses at once, before the
    second is down."""
    victims = [member.index for member in zookeeper_ensemble.members][:2]
    lost_at = time.time()
    try:
        for index in victims:
            zookeeper_ensemble.kill_member(index)
        for node in nodes:
            wait_until(
                lambda node=node: stopped_when_quorum_went(
                    node.find(NodeEvent.PAUSED) + node.find(NodeEvent.RESUMED) + node.find(NodeEvent.DEAD), lost_at
                ),
                30,
                f"{node.name} to stop processing",
            )
        for index in victims:
            zookeeper_ensemble.restart_member(index)
        zookeeper_ensemble.wait_healthy(60)
        return lost_at, time.time()
    finally:
        for index in victims:
            if zookeeper_ensemble.member(index).mode() is None:
                zookeeper_ensemble.restart_member(index)


def stopped_when_quorum_went(events, lost_at: float) -> bool:
    """Whether a node's events (dicts with "event" and "at") show it stopped
    processing when quorum went at `lost_at`: it paused or was declared dead since,
    or an earlier ZooKeeper hiccup had paused it and it had not resumed by then."""
    timeline = sorted(events, key=lambda e: e["at"])
    if any(e["event"] in (NodeEvent.PAUSED, NodeEvent.DEAD) and e["at"] >= lost_at for e in timeline):
        return True
    before = [e["event"] for e in timeline if e["at"] < lost_at and e["event"] in (NodeEvent.PAUSED, NodeEvent.RESUMED)]
    return before[-1:] == [NodeEvent.PAUSED]


class CpuLoad:
    """`processes` busy loops (one a core by default), each a Python process of its own
    outside the cluster, from `__enter__` until `__exit__` kills them: a machine whose
    cores are all taken, as a neighbour's batch job takes them. Containers share the
    host's cores, so one load serves the local and the compose targets."""

    def __init__(self, processes: int | None = None):
        self.count = processes or os.cpu_count() or 1
        self.processes: list[subprocess.Popen] = []

    def __enter__(self) -> CpuLoad:
        for _ in range(self.count):
            self.processes.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        return self

    def __exit__(self, *exc) -> None:
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait(30)
        self.processes = []
