"""Pause monitor: say so when this process stood still (HBase's JvmPauseMonitor).

A thread sleeps a short interval and measures how long the sleep really took. A
sleep that overran by seconds means no Python thread ran for that long: the host
starved the process of CPU, a native call held the interpreter lock, or the process
was stopped (SIGSTOP). Such a pause explains a node that lost its ZooKeeper session,
or an adoption that took long, so it is logged as one line with its length.

It prints no stacks by itself: faulthandler's watchdog (`dump_traceback_later`)
reads other threads' frames without the interpreter lock, and once it hung a node
mid-dump as the process woke from SIGSTOP. `kill -USR1` prints them safely.

`overrun` is the pure part; `PauseMonitor` is the thread. Time is injected.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

INTERVAL_S = 0.5
THRESHOLD_S = 1.5  # a pause of this much past the interval is logged
STOOD_STILL = "this process stood still"  # how each logged pause begins (drills count these lines)


def overrun(interval: float, started: float, ended: float) -> float:
    """How much longer than `interval` a sleep from `started` to `ended` took."""
    return max(0.0, (ended - started) - interval)


class PauseMonitor:
    def __init__(
        self,
        *,
        interval: float = INTERVAL_S,
        threshold: float = THRESHOLD_S,
        clock: Callable[[], float] = time.monotonic,
        name: str = "pause-monitor",
    ):
        self.interval, self.threshold, self._clock = interval, threshold, clock
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.pauses: list[float] = []

    def start(self) -> PauseMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    def observe(self, started: float, ended: float) -> float | None:
        """Record one measured sleep; returns the pause when it is worth a line."""
        pause = overrun(self.interval, started, ended)
        if pause < self.threshold:
            return None
        self.pauses.append(pause)
        log.warning(
            STOOD_STILL + " for about %.1fs (host CPU starvation, a native call holding the "
            "interpreter lock, or SIGSTOP); a ZooKeeper or HDFS wait that overlaps it was this pause, "
            "not the service",
            pause,
        )
        return pause

    def _run(self) -> None:
        while True:
            started = self._clock()
            if self._stopped.wait(self.interval):
                return
            self.observe(started, self._clock())
