"""A clustered node's part in a rolling deploy: it watches the cluster's roll
(`cluster.zk.operator`) and offloads itself when its step says so, and connects
again once its step is past offloading (`cluster.core.rolls.member_action`). The
leader drives the roll; no node calls another's admin API, so a roll goes on
whoever received it, and whoever leads.

    follower = DeployFollower(node.store, node.incarnation_running, node.offloaded_incarnation,
                              node.offload, node.connect, name="n1").start()
    follower.stop()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..core.rolls import CONNECT, OFFLOAD, Roll, member_action, refuse_step
from ..errors import OwnershipConflict, first_line
from .control_errors import Conflict, OffloadRefused

log = logging.getLogger(__name__)

LOOK_AGAIN_S = 1.0  # the node's own state changes without a ZooKeeper event: looked at this often


class DeployFollower:
    """Lock plan: `_lock` guards `_roll` (the watch's thread writes it, the follower's
    thread reads it); the node's offload and connect run on the follower's thread only."""

    def __init__(
        self,
        store: Callable[[], object],
        incarnation: Callable[[], str | None],
        offloaded: Callable[[], str | None],
        offload: Callable[[], None],
        connect: Callable[[], None],
        *,
        name: str,
        wall_clock=time.time,
    ):
        self._store, self._incarnation, self._offloaded = store, incarnation, offloaded
        self._offload, self._connect = offload, connect
        self.name = name
        self._wall_clock = wall_clock
        self._roll: Roll | None = None
        self._watching = False
        self._lock = threading.Lock()
        self._changed = threading.Event()
        self._stopped = threading.Event()

    def start(self) -> DeployFollower:
        threading.Thread(target=self._run, name=f"deploy-follower {self.name}", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._changed.set()

    def _on_roll(self, roll: Roll | None) -> bool | None:
        if self._stopped.is_set():
            return False
        with self._lock:
            self._roll = roll
        self._changed.set()
        return None

    def _run(self) -> None:
        while not self._stopped.is_set():
            if not self._watching:
                try:
                    self._store().operator.watch_roll(self._on_roll)
                    self._watching = True
                except Exception as error:  # noqa: BLE001 - ZooKeeper away: the node keeps trying
                    log.debug("watching the cluster's deploy: %s", first_line(error, 200))
            self._changed.wait(LOOK_AGAIN_S)
            self._changed.clear()
            if self._stopped.is_set():
                return
            with self._lock:
                roll = self._roll
            try:
                self._act(roll)
            except Exception as error:  # noqa: BLE001 - looked at again in a second
                log.warning("deploy: %s could not act on its step: %s", self.name, first_line(error, 300))

    def _act(self, roll: Roll | None) -> None:
        incarnation, offloaded = self._incarnation(), self._offloaded()
        action = member_action(roll, incarnation=incarnation, offloaded=offloaded)
        if action is None:
            return
        # Offload and connect change what the node says at once (`offloaded`), so the
        # next look does not ask again.
        if action == OFFLOAD:
            log.info("deploy of flow version %s: %s offloads itself (its step)", roll.version, incarnation)
            try:
                self._offload()
            except (OffloadRefused, Conflict) as error:
                self._refuse(incarnation, str(error))
        elif action == CONNECT:
            log.info(
                "deploy of flow version %s: %s connects again (its step is %s)",
                roll.version,
                offloaded,
                next((s.state for s in roll.steps if s.incarnation == offloaded), "?"),
            )
            self._connect()

    def _refuse(self, incarnation: str, reason: str) -> None:
        """Say in the roll why this node could not offload: the roll stops there."""
        operator = self._store().operator
        for _ in range(5):
            entry = operator.roll()
            if entry is None:
                return
            refused = refuse_step(entry[0], incarnation, first_line(reason, 300), at=self._wall_clock())
            if refused is None:
                return
            try:
                operator.replace_roll(refused, entry[1])
                log.warning("deploy: %s refused to offload: %s", incarnation, reason)
                return
            except OwnershipConflict:
                continue
