"""`ContentMaintenance`: a node's content kept bounded while it runs.

On a thread of its own, every `collect_interval` seconds it retires the resources no
writer came back to (`retire`, when given: the clustered node's, which retires them by
age and closes them, or they would stay open and uncollectable while the node is
idle), archives (or destroys) what nobody references any more (`collect()`), and
every `age_off_interval` seconds it deletes archived content past its retention or
above the usage limit (`age_off()`), NiFi's archive rules. Both nodes run one over
their content: the standalone node over its repository, the clustered node over each
incarnation's container on local disk and HDFS (a dead incarnation's container is the
leader's to collect, whole: `cluster.failover.collector`). A round that fails is one
log line, and the next round tries again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import first_line

if TYPE_CHECKING:
    from repositories.content import ContentStore

log = logging.getLogger(__name__)

DEFAULT_COLLECT_INTERVAL = 1.0  # seconds between two collects
DEFAULT_AGE_OFF_INTERVAL = 60.0  # seconds between two age-offs


class ContentMaintenance:
    """Lock plan: none shared; `_stopped` ends the thread, which alone calls the content."""

    def __init__(
        self,
        content: ContentStore,
        *,
        collect_interval: float = DEFAULT_COLLECT_INTERVAL,
        age_off_interval: float = DEFAULT_AGE_OFF_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        name: str = "content-maintenance",
        retire: Callable[[], object] | None = None,
    ):
        self.content = content
        self._retire = retire
        self.collect_interval, self.age_off_interval = collect_interval, age_off_interval
        self._clock = clock
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._failing = False
        self.rounds = 0

    def start(self) -> ContentMaintenance:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        last_age_off = self._clock()
        while not self._stopped.wait(self.collect_interval):
            age_off = self._clock() - last_age_off >= self.age_off_interval
            if age_off:
                last_age_off = self._clock()
            self.round(age_off=age_off)

    def round(self, *, age_off: bool) -> None:
        """One retire and collect, and an age-off if `age_off`; a failure is logged once
        per run of them."""
        try:
            if self._retire is not None:
                self._retire()
            self.content.collect()
            if age_off:
                self.content.age_off()
        except Exception as error:  # noqa: BLE001 - the next round tries again
            if not self._failing:
                log.warning(
                    "content maintenance of %s failed, retried every %.0fs: %s",
                    self.content,
                    self.collect_interval,
                    first_line(error),
                )
            self._failing = True
            return
        if self._failing:
            log.info("content maintenance of %s works again", self.content)
        self._failing = False
        self.rounds += 1
