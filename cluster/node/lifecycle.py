"""One incarnation after another: the life of a clustered node's process.

A `ClusterMember` lives as long as its ZooKeeper session. When it dies (session
lost, its own expiry timer, "you are dead"), the process joins again as a new
incarnation with a new home shard, unless told to stop. Both the flow node
(`cluster.node.clustered`) and the ledger node of the drills run this loop.

With `events.JsonEvents`, every step is one JSON object per line on stdout (a
`NodeEvent`: joined, adopted, retired, leader, rejected write, dead, ...), so that a
test waits on conditions instead of sleeping.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..errors import ConfigurationRefused, first_line
from ..zk.client import session_of
from .events import NodeEvent
from .session_file import remove_session, write_session

log = logging.getLogger(__name__)


def run_incarnations(
    make_member: Callable[[], object],
    events,
    *,
    once: bool = False,
    stop: threading.Event | None = None,
    on_start: Callable[[object], None] | None = None,
    on_end: Callable[[object], None] | None = None,
    retry_pause: float = 1.0,
    retry_max: float = 15.0,
    hold: threading.Event | None = None,
    session_directory: str | None = None,
) -> int:
    """Run members one after another until `stop` is set (or after one, with `once`).
    While `hold` is set (an offload), the running member leaves the cluster and no new
    one starts; clearing it starts a new incarnation. A member that cannot start (a
    service down or still starting) is tried again after `retry_delay`. Returns 0, or 2
    when a member refused to start on its configuration, or ended on it (`refusal`:
    retrying cannot help, the operator must change it). With `session_directory`, each
    incarnation's ZooKeeper session is recorded there (`session_file`) before its
    "joined" event, for a drill that expires it; its password is never in an event or
    the log."""
    stop = stop or threading.Event()
    hold = hold or threading.Event()
    failures = 0  # start attempts failed in a row
    while not stop.is_set():
        if hold.is_set():
            stop.wait(0.2)  # offloaded: owning nothing until connected again or stopped
            continue
        member = make_member()
        events(NodeEvent.STARTING, attempt=failures + 1)  # a drill's partition "while joining" aims here
        try:
            incarnation = member.start()
        except Exception as error:  # noqa: BLE001 - ZooKeeper without quorum, HDFS down: try again
            line = first_line(error, 800)  # the whole of what an operator must fix
            refused = isinstance(error, ConfigurationRefused)
            events(NodeEvent.START_FAILED, error=line, fatal=refused)
            member.stop(leave=False)
            if on_end is not None:
                on_end(member)
            if refused:
                log.error("could not join the cluster, and will not retry: %s", line)
                return 2
            failures += 1
            delay = retry_delay(failures, retry_pause, retry_max)
            log.warning("could not join the cluster (%s); trying again in %.1f s", line, delay)
            stop.wait(delay)
            continue
        failures = 0
        # None if the member died the moment it joined (its client is closed then).
        session_id, password = (session_of(member.client) if member.client is not None else None) or (None, b"")
        if session_directory is not None and session_id is not None:
            write_session(session_directory, incarnation.id, session_id, password)
        events(NodeEvent.JOINED, incarnation=incarnation.id, epoch=incarnation.epoch, session_id=session_id)
        report_timeline(member, events)
        if on_start is not None:
            on_start(member)
        while not member.wait_dead(0.2):
            if stop.is_set() or hold.is_set():
                member.stop(leave=True)
        # decided_at: when its death was decided (None for a stop on purpose); stopped_at:
        # when it had stopped (wall clock). A death is stopped within 2 s of its decision.
        events(
            NodeEvent.DEAD,
            incarnation=incarnation.id,
            reason=member.death_reason[:300],
            decided_at=getattr(member, "death_decided_at", None),
            stopped_at=getattr(member, "stopped_at", None),
        )
        if session_directory is not None:
            remove_session(session_directory, incarnation.id)
        if hold.is_set() and not stop.is_set():
            events(NodeEvent.OFFLOADED, incarnation=incarnation.id)
        if on_end is not None:
            on_end(member)
        refusal = getattr(member, "refusal", None)
        if refusal is not None:  # a new incarnation would be refused the same way
            log.error(
                "incarnation %s ended on this node's configuration, and the node will not rejoin: %s",
                incarnation.id,
                first_line(refusal, 800),
            )
            return 2
        if once:
            break
    return 0


def retry_delay(failures: int, first: float, cap: float) -> float:
    """The wait after `failures` failed starts in a row: `first`, doubling, at most
    `cap` (services that take a minute to start are not asked a hundred times)."""
    return min(cap, first * 2 ** max(0, failures - 1))


def report_timeline(member, events) -> None:
    """Emit adoption, retirement and leadership events as they happen (the drills'
    timings come from them)."""

    def watch():
        seen_adopted, seen_retired, leading = set(), set(), False
        while not member.dead.is_set():
            for key, at in list(member.timeline.adopted.items()):
                if key not in seen_adopted:
                    seen_adopted.add(key)
                    events(
                        NodeEvent.ADOPTED,
                        incarnation=member.incarnation.id,
                        shard=key,
                        adopted_at=at,
                        seen_at=member.timeline.adopting_seen.get(key),
                        step=member.timeline.steps.get(key),
                    )
            for key, at in list(member.timeline.retired.items()):
                if key not in seen_retired:
                    seen_retired.add(key)
                    events(NodeEvent.RETIRED, incarnation=member.incarnation.id, shard=key, retired_at=at)
            now_leading = member.leader is not None and member.leader.leading.is_set()
            if now_leading != leading:
                leading = now_leading
                events(NodeEvent.LEADER if leading else NodeEvent.NOT_LEADER, incarnation=member.incarnation.id)
            member.dead.wait(0.05)

    threading.Thread(target=watch, name="timeline-report", daemon=True).start()
