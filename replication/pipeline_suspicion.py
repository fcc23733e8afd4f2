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

`hsync_deadline` is the decision, a pure function.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# How long pipelines are suspected after a hang: the NameNode hands a dead DataNode out
# for new blocks until 1 to 6 s after its death (cluster/services/hadoop/hdfs-site.properties),
# and pipelines made before it hold it until they are replaced.
SUSPECT_FOR_S = 8.0
# An hsync's deadline while pipelines are suspected (seconds).
SUSPECT_HSYNC_S = 0.3


def hsync_deadline(io_timeout: float | None, suspected_until: float, now: float) -> float | None:
    """The deadline of an hsync begun at `now`: `io_timeout`, or `SUSPECT_HSYNC_S` (if
    shorter) while pipelines are suspected."""
    if io_timeout is None or now >= suspected_until:
        return io_timeout
    return min(io_timeout, SUSPECT_HSYNC_S)


class PipelineSuspicion:
    """Whether an HDFS storage's pipelines are suspected, shared by its open files.

    Lock plan: `_lock` guards `_until`, for one comparison and assignment."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._until = float("-inf")

    def hung(self) -> None:
        """A call hung for its full deadline: suspect every pipeline from now on, for
        `SUSPECT_FOR_S`."""
        with self._lock:
            self._until = max(self._until, self._clock() + SUSPECT_FOR_S)

    def hsync_deadline(self, io_timeout: float | None) -> float | None:
        return hsync_deadline(io_timeout, self._until, self._clock())

    @property
    def suspected(self) -> bool:
        return self._clock() < self._until
