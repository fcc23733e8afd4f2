"""The leader's deploy duty: a thin runner around `cluster.core.rolls.advance`.

While it leads, the leader reads the cluster's roll (`cluster.zk.operator`) about
once a second; when one is running, it reads the members, the shards and the
cluster's flow, decides the roll's next value, and writes it by compare-and-set,
until there is nothing to do. The members act on their own steps
(`cluster.node.deploy_follower`). A leader that dies (or leaves for its own step)
between two writes leaves the roll where the next leader's `advance` takes it over.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..core.rolls import RUNNING, Roll, RollView, advance
from ..errors import OwnershipConflict, first_line

log = logging.getLogger(__name__)

PERIOD = 1.0  # seconds between two looks at the roll
MOST_STEPS_A_ROUND = 20  # transitions written in one round before looking again


class RollDriver:
    def __init__(
        self,
        store,
        incarnation: str,
        *,
        wall_clock: Callable[[], float] = time.time,
        record: Callable[[str, str], None] = lambda kind, detail: None,
    ):
        self.store, self.incarnation = store, incarnation
        self._wall_clock = wall_clock
        self._record = record

    def drive(self, leadership_over: threading.Event, may_act: Callable[[], bool], period: float = PERIOD) -> None:
        """Until the leadership is over: each `period`, carry the running roll as far as it goes."""
        while not leadership_over.wait(period):
            if not may_act():
                continue
            try:
                for _ in range(MOST_STEPS_A_ROUND):
                    if leadership_over.is_set() or not may_act() or self.step() is None:
                        break
            except OwnershipConflict:
                continue  # a member wrote meanwhile: read again
            except Exception as error:  # noqa: BLE001 - ZooKeeper trouble: looked at again next round
                log.warning("deploy duty of %s: %s: %s", self.incarnation, type(error).__name__, first_line(error, 300))

    def view(self) -> RollView:
        shards = {name: entry[0] for name, entry in self.store.shards.all().items()}
        members = self.store.members()
        flow = self.store.cluster_flow()
        return RollView(
            self.incarnation, self._wall_clock(), members, shards, flow.version if flow is not None else None
        )

    def step(self) -> Roll | None:
        """Read the roll; if it is running, write its next value. The value written, or
        None when there was nothing to write."""
        entry = self.store.operator.roll()
        if entry is None or entry[0].state != RUNNING:
            return None
        roll, version = entry
        following = advance(roll, self.view())
        if following is None:
            return None
        self.store.operator.replace_roll(following, version)
        for note in following.notes:
            if note not in roll.notes:
                log.info("deploy of flow version %s: %s", roll.version, note)
                self._record("deploy", f"{roll.version}: {note}")
        for before, after in zip(roll.steps, following.steps, strict=False):
            if (before.state, before.detail) != (after.state, after.detail):
                log.info(
                    "deploy of flow version %s: %s %s %s", roll.version, after.incarnation, after.state, after.detail
                )
                self._record("deploy", f"{roll.version}: {after.incarnation} {after.state} {after.detail}".strip())
        return following
