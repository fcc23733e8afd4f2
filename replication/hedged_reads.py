"""Hedged reads: a read that has not answered in time is asked again beside the first.

Hadoop's Java client does this when `dfs.client.hedged.read.threadpool.size` is set (its
threshold is `dfs.client.hedged.read.threshold.millis`), and HBase turns it on for its
reads: a DataNode that died or froze answers nothing, and the reader waits for its
socket timeout before it tries the next replica. hdfs-native has no hedged reads, and
its connect to a DataNode waits `dfs.client.socket-timeout` (5 s on the nodes) when the
DataNode's address does not answer (a dead machine, or a container whose address went
with it), so a swap file read in the second after a DataNode's death held delivery for
5 s (a compose drill's DataNode rounds).

`first_answer(runner, first, again)` starts `first` on one of the runner's workers and
waits. If nothing has answered `after` seconds after the last attempt began, it starts
`again` beside it (a new reader, so fresh block locations from the NameNode), up to
`attempts` in all, and returns the first result. An attempt's error is raised only once
every attempt started has failed, the first attempt's error then; an error that comes
before any hedge began (a missing file, a refused permission) is raised at once, as
without hedging. Attempts still running when another answered are left to finish on
their workers (a read has no side effect); their results are dropped.

Why several attempts and not one: the NameNode sends readers to a dead DataNode last
only once it is stale (1 s without a heartbeat, `dfs.namenode.avoid.read.stale.datanode`);
before that, a fresh reader may be sent to it first again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from .deadline import Call, DeadlineExceeded, DeadlineRunner

T = TypeVar("T")

# A read that has not answered within this long is asked again (seconds); a read of a
# swap file or a content block takes milliseconds when its DataNode answers.
HEDGE_AFTER_S = 0.4
# Attempts in all, `HEDGE_AFTER_S` apart: the last begins 1.6 s after the first, past
# the 1 s after which the NameNode sends readers to a dead DataNode last.
HEDGE_ATTEMPTS = 5


@dataclass
class HedgeCounts:
    """How often reads were hedged, and how often a hedge answered first (Hadoop's
    `hedgedReadOps` and `hedgedReadOpsWin`)."""

    hedged: int = 0
    won: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, hedged: int, won: int) -> None:
        with self._lock:
            self.hedged += hedged
            self.won += won


def first_answer(
    runner: DeadlineRunner,
    first: Callable[[], T],
    again: Callable[[], T],
    *,
    after: float = HEDGE_AFTER_S,
    attempts: int = HEDGE_ATTEMPTS,
    counts: HedgeCounts | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """The first answer of `first`, and of `again` started beside it while none has
    answered (the module docstring says when)."""
    answered = threading.Event()  # set after an attempt's `done`, so never seen before it
    calls: list[Call] = [runner.start(first, answered.set)]
    last_start = clock()
    refused = False  # the runner refused a hedge: wait for what runs
    while True:
        answered.clear()
        failed = [call for call in calls if call.done.is_set() and call.error is not None]
        for index, call in enumerate(calls):
            if call.done.is_set() and call.error is None:
                if counts is not None:
                    counts.add(1 if len(calls) > 1 else 0, 1 if index > 0 else 0)
                return call.result  # type: ignore[return-value]
        if len(failed) == len(calls):
            if counts is not None and len(calls) > 1:
                counts.add(1, 0)
            raise next(call.error for call in calls if call.error is not None)
        if len(calls) >= attempts or refused:
            answered.wait()
            continue
        due = last_start + after - clock()
        if due > 0:
            answered.wait(due)
            continue
        try:
            calls.append(runner.start(again, answered.set))
        except DeadlineExceeded:
            refused = True  # every worker is blocked: no more hedges, wait for those running
        last_start = clock()
