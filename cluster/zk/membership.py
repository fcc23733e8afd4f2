"""Membership: a member's ephemeral znode `nodes/<incarnation>` and its heartbeat,
and the incarnation counter every start draws its epoch from.

The znode is created once, when the incarnation joins, and only ever *set* after
that. If it is gone when a heartbeat is due, the session that owned it expired: the
incarnation is dead (kazoo would have opened a new session under us), and the beat
is refused with "you are dead" rather than re-creating the znode. A dead
incarnation never comes back under `nodes/`: that is what lets the leader treat
"no znode" as "dead" (see `cluster.core.reassignment`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from ..core.heartbeat import Heartbeat
from ..core.incarnation import Incarnation
from ..core.names import check_node_name
from ..errors import FencedError
from .kazoo_errors import translated, translates_kazoo
from .znodes import read_children

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)


@translates_kazoo
class Membership:
    """Lock plan: `_lock` guards `_beat` and `_session_id` (the join and each refresh)."""

    def __init__(
        self,
        client: KazooClient,
        layout,
        first: Heartbeat,
        *,
        interval: float = 1.0,
        figures: Callable[[], dict] = dict,
        on_dead: Callable[[FencedError], None] = lambda error: None,
        on_confirmed: Callable[[float], None] = lambda sent_at: None,
        clock=time.monotonic,
        wall_clock=time.time,
    ):
        self.client, self.layout = client, layout
        self.interval = interval
        self._figures, self._on_dead, self._on_confirmed = figures, on_dead, on_confirmed
        self._clock, self._wall_clock = clock, wall_clock
        self._beat = first
        self._session_id = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def path(self) -> str:
        return self.layout.node(self._beat.incarnation)

    @property
    def heartbeat(self) -> Heartbeat:
        return self._beat

    def join(self) -> None:
        with self._lock:
            self._beat = self._beat.next(sent_at=self._wall_clock(), **self._figures())
            self.client.create(self.path, self._beat.to_json(), ephemeral=True, makepath=True)
            self._session_id = self.client.client_id[0]

    def beat(self) -> Heartbeat:
        """Refresh the heartbeat once. Raises `FencedError` if this incarnation is dead."""
        with self._lock:
            beat = self._beat.next(sent_at=self._wall_clock(), **self._figures())
            sent = self._clock()
            session = self.client.client_id  # None while disconnected: not a death, just no beat
            if session is None:
                raise ConnectionError("not connected to ZooKeeper; the session guard decides what that means")
            if session[0] != self._session_id:
                raise FencedError(
                    beat.incarnation,
                    beat.epoch,
                    None,
                    incarnation=beat.incarnation,
                    reason="its ZooKeeper session ended; its heartbeat is refused",
                )
            try:
                self.client.set(self.path, beat.to_json())
            except NoNodeError:
                raise FencedError(
                    beat.incarnation,
                    beat.epoch,
                    None,
                    incarnation=beat.incarnation,
                    reason="its membership znode is gone; its heartbeat is refused",
                ) from None
            self._beat = beat
        self._on_confirmed(sent)
        return beat

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {self._beat.incarnation}", daemon=True)
        self._thread.start()

    def stop(self, *, leave: bool = False) -> None:
        self._stopped.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if leave:
            try:
                if self.client.client_id and self.client.client_id[0] == self._session_id:
                    self.client.delete(self.path)
            except Exception:  # noqa: BLE001 - leaving is best effort; expiry removes it anyway
                pass

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            try:
                self.beat()
            except FencedError as error:
                log.error("%s", error)
                self._on_dead(error)
                return
            except Exception as error:  # noqa: BLE001 - connection trouble: the session guard decides
                log.debug("heartbeat of %s not sent: %s", self._beat.incarnation, error)


@translated
def read_members(client: KazooClient, layout) -> dict[str, Heartbeat]:
    """The live incarnations and their current heartbeats."""
    return read_children(client, layout.nodes, layout.node, _parse_beat)


def _parse_beat(name: str, data: bytes, stat) -> Heartbeat:
    try:
        return Heartbeat.from_json(data)
    except (ValueError, KeyError, TypeError) as error:
        # Alive (its znode is there), but never chosen to adopt: no free disk known.
        log.warning("member %s has an unreadable heartbeat (%s); treating it as alive with no figures", name, error)
        return Heartbeat(name.rpartition("-")[0] or name, name, 0, free_disk=0)


@translated
def remove_gone(client: KazooClient, layout, incarnation: str) -> list[str]:
    """Delete the ephemeral znodes of an incarnation proven gone (`cluster.core.liveness`)
    before its session expires: its membership `nodes/<incarnation>` and its place in
    the leader election (kazoo's lock nodes under `leader/` carry the contender's id as
    their data). The same as the expiry would do; the paths deleted are returned
    (none when the expiry or another survivor came first)."""
    removed = []
    paths = [layout.node(incarnation)]
    try:
        for child in client.get_children(layout.leader):
            data, _ = client.get(f"{layout.leader}/{child}")
            if data.decode("utf-8", "replace") == incarnation:
                paths.append(f"{layout.leader}/{child}")
    except NoNodeError:
        pass
    for path in paths:
        try:
            client.delete(path)
            removed.append(path)
        except NoNodeError:
            pass
    return removed


@translated
def new_incarnation(client: KazooClient, layout, node: str) -> Incarnation:
    """Draw the next start epoch from `counters/incarnation` (kazoo's `Counter`, a
    versioned read-modify-write) for `node`: every start of every node gets a number
    no earlier start had."""
    check_node_name(node)
    counter = client.Counter(layout.incarnation_counter)
    counter += 1
    return Incarnation(node, int(counter.post_value))


@translated
def read_incarnation_counter(client: KazooClient, layout) -> int:
    """The newest epoch drawn so far (0 before the first)."""
    try:
        data, _ = client.get(layout.incarnation_counter)
    except NoNodeError:
        return 0
    return int(data.decode("ascii") or 0)  # kazoo's Counter: repr(int)
