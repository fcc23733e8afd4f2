"""Once a write pipeline hung past its deadline, every hsync has a short one for a while.

A DataNode that died (its machine or container gone: its address answers nothing) or
froze holds every open pipeline through it: each open file's next hsync waits the full
I/O deadline (1.5 s on the nodes) before its writer is given up. A commit hsyncs its
content resource, then its WAL journal, so two open files through the same dead DataNode
cost two deadlines in a row: in a compose drill's DataNode rounds that was the whole of
the slowest pauses (3.1-3.8 s: a content resource's hsync given up after 1.5 s, its
commit retried, then the journal's hsync given up after another 1.5 s).

So an HDFS storage suspects its pipelines once one call hung for the full deadline
(`PipelineSuspicion.hung`): for `SUSPECT_FOR_S`, an hsync that has not answered within
`SUSPECT_HSYNC_S` is given up as if past its deadline (a healthy one takes milliseconds),
and its file is replaced as after any deadline (a WAL roll, a new content resource,
whose first syncs are hedged: `replication.new_files`). Only a hang of the full deadline
opens or extends the window, so short hsyncs given up under a loaded machine cannot keep
it open. Writes and closes keep the full deadline (a close may flush megabytes).

What a pipeline's hang looks like depends on how fast the storage is: a dead DataNode
holds only the pipelines through it, while the others answer as fast as ever; an HDFS
that is slow everywhere (its DataNodes short of CPU or disk, or in long garbage
collections) holds them all alike. Against the second, the short deadline and the
hedges only add work: each hsync given up replaces its file, each new file races
hedges, all of them as slow as the first. In a compose cluster whose three DataNodes
were each frozen half of every second, delivery that took 21 s without them took 84
and 158 s with fixed ones, most of it a crawl of a few FlowFiles a second, and starts
failed over and over; following the typical hsync, 21 and 32 s (docs/operate/failures.md,
"An HDFS slow everywhere"). So both follow the storage's typical hsync, as The Tail at Scale's
hedged requests follow the latency distribution: `PipelineSuspicion` keeps how long
the last `RECENT_HSYNCS` hsyncs that answered took, and `typical_hsync` is their
`TYPICAL_QUANTILE` quantile. The short deadline is `SUSPECT_HSYNC_S`, or
`SUSPECT_TYPICAL_FACTOR` times the typical hsync if that is longer (never more than
the full deadline), and a new file's hedges wait `HEDGE_TYPICAL_FACTOR` times the
typical hsync if that is longer than their own delays (`replication.new_files`). On
a healthy HDFS whose DataNode died, the typical hsync is a few milliseconds and
nothing changes; on a slow one, a call is given up or hedged only when it is slow
for that HDFS.

`hsync_deadline`, `hedge_delay` and `typical_hsync` are the decisions, pure functions.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)

# How long pipelines are suspected after a hang: the NameNode hands a dead DataNode out
# for new blocks until 1 s after its death with custody's placement policy, 1 to 6 s with
# Hadoop's default (cluster/services/hadoop/hdfs-site.properties), and pipelines made
# before it hold it until they are replaced.
SUSPECT_FOR_S = 8.0
# An hsync's deadline while pipelines are suspected (seconds).
SUSPECT_HSYNC_S = 0.3


# How many of the latest hsyncs that answered say what is typical, and which quantile
# of them is. Under a DataNode's death the hsyncs that answer are those of pipelines
# without it, as fast as before.
RECENT_HSYNCS = 64
TYPICAL_QUANTILE = 0.9
# While pipelines are suspected, an hsync is given up after this many typical hsyncs,
# if that is longer than `SUSPECT_HSYNC_S`.
SUSPECT_TYPICAL_FACTOR = 3.0
# A new file's hedges wait this many typical hsyncs, if that is longer than their own
# delays (`replication.new_files`).
HEDGE_TYPICAL_FACTOR = 3.0


def typical_hsync(recent: Iterable[float]) -> float:
    """The `TYPICAL_QUANTILE` quantile of the durations `recent` (seconds); 0 if none."""
    ordered = sorted(recent)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(TYPICAL_QUANTILE * len(ordered)))]


def hsync_deadline(io_timeout: float | None, suspected_until: float, now: float, typical: float = 0.0) -> float | None:
    """The deadline of an hsync begun at `now`: `io_timeout`; or while pipelines are
    suspected `SUSPECT_HSYNC_S`, or `SUSPECT_TYPICAL_FACTOR` times the `typical` hsync
    if longer, never more than `io_timeout`."""
    if io_timeout is None or now >= suspected_until:
        return io_timeout
    return min(io_timeout, max(SUSPECT_HSYNC_S, SUSPECT_TYPICAL_FACTOR * typical))


def hedge_delay(delay: float, typical: float) -> float:
    """A hedge's `delay`, or `HEDGE_TYPICAL_FACTOR` times the `typical` hsync if longer."""
    return max(delay, HEDGE_TYPICAL_FACTOR * typical)


class PipelineSuspicion:
    """Whether an HDFS storage's pipelines are suspected, shared by its open files.

    Lock plan: `_lock` guards `_until` and `_recent`, for one comparison and
    assignment, or a copy of `_recent`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._until = float("-inf")
        self._recent: collections.deque[float] = collections.deque(maxlen=RECENT_HSYNCS)

    def answered(self, seconds: float) -> None:
        """An hsync answered after `seconds`."""
        with self._lock:
            self._recent.append(seconds)

    @property
    def typical(self) -> float:
        """The typical hsync of late (`typical_hsync`)."""
        with self._lock:
            recent = list(self._recent)
        return typical_hsync(recent)

    def hedge_delay(self, delay: float) -> float:
        return hedge_delay(delay, self.typical)

    def hung(self) -> None:
        """A call hung for its full deadline: suspect every pipeline from now on, for
        `SUSPECT_FOR_S` (a line in the log when the window opens, with the typical hsync)."""
        with self._lock:
            now = self._clock()
            opened = now >= self._until
            self._until = max(self._until, now + SUSPECT_FOR_S)
        if opened:
            typical = self.typical
            log.info(
                "hdfs: a call hung for its full deadline: every pipeline is suspected for %g s, an hsync given up "
                "after %g s (the typical hsync: %.0f ms)",
                SUSPECT_FOR_S,
                hsync_deadline(float("inf"), now + 1.0, now, typical),
                1000 * typical,
            )

    def hsync_deadline(self, io_timeout: float | None) -> float | None:
        with self._lock:
            until = self._until
        if self._clock() >= until:
            return io_timeout
        return hsync_deadline(io_timeout, until, self._clock(), self.typical)

    @property
    def suspected(self) -> bool:
        return self._clock() < self._until
