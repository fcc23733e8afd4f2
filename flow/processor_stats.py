"""A processor's statistics, as NiFi's canvas shows them: what it took in, read, wrote
and sent out, its tasks and their time, over the last five minutes and since the
engine started, and its last bulletin (the last error it met).

The figures (`FIELDS`):
  in_count, in_bytes        FlowFiles its committed sessions took from its queues (a
                            FlowFile sent back to the queue it came from is not counted,
                            as NiFi's session does not; one that expired in the queue
                            is not the processor's either),
  read_bytes                the size of each content its committed sessions opened for
                            reading (one opened twice counts twice),
  written_bytes             the bytes of the content its committed sessions wrote,
  out_count, out_bytes      FlowFiles its committed sessions put in connections: one per
                            connection a relationship has (as NiFi counts), none for a
                            relationship that is auto-terminated (those are drops),
                            none for a FlowFile sent back to its queue,
  tasks, task_seconds       every task that ran, committed or not, and its time,
  failures                  FlowFiles its committed sessions routed to `failure`
                            (auto-terminated or not).
A session that rolled back counts its task, not its FlowFiles.

Cost: a session adds its figures up as it commits (`SessionCounts`, built in the loop
that builds the transaction); the engine records one `SessionCounts` per task, under
the processor's own lock (`ProcessorStats`), never one per FlowFile.

The five minutes are a `SlidingWindow`: `BUCKET_S`-second buckets in a ring, so the
window slides by a bucket at a time (what is older than five minutes leaves it at most
`BUCKET_S` late), as NiFi's five-minute status does with its own buckets.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

FIELDS = (
    "in_count",
    "in_bytes",
    "read_bytes",
    "written_bytes",
    "out_count",
    "out_bytes",
    "tasks",
    "task_seconds",
    "failures",
)
_TASKS, _TASK_SECONDS = FIELDS.index("tasks"), FIELDS.index("task_seconds")
WINDOW_S = 300.0  # NiFi's five minutes
BUCKET_S = 5.0
FAILURE = "failure"
# A FlowFile routed to failure: the attribute whose value the bulletin quotes is the
# first, in the FlowFile's order, whose name is one of these or ends in ".error" (our
# processors' `compress.error`, `jsonpath.error`, `expression.error`, `content.error`).
ERROR_ATTRIBUTES = ("error", "error.message", "exception.message")
MESSAGE_LIMIT = 1000  # characters of a bulletin's message kept


@dataclass(frozen=True)
class Bulletin:
    """The last error a processor met, as NiFi's bulletin: when (wall clock, ms), what,
    and the FlowFile it was about when that is known."""

    at_ms: int
    message: str
    flowfile_id: str | None = None

    def to_dict(self) -> dict:
        return {"at_ms": self.at_ms, "message": self.message, "flowfile_id": self.flowfile_id}


@dataclass(frozen=True)
class SessionCounts:
    """What one committed session did (see the module docstring); `failed` is the last
    FlowFile it routed to failure, as (id, the error its attributes name or None)."""

    in_count: int = 0
    in_bytes: int = 0
    read_bytes: int = 0
    written_bytes: int = 0
    out_count: int = 0
    out_bytes: int = 0
    failures: int = 0
    failed: tuple[str, str | None] | None = None


def error_attribute(attributes: Mapping[str, str]) -> str | None:
    """The error a FlowFile routed to failure carries (see `ERROR_ATTRIBUTES`), or None."""
    for name, value in attributes.items():
        if name in ERROR_ATTRIBUTES or name.endswith(".error"):
            return value
    return None


class SlidingWindow:
    """Sums of `width` figures over the last `window_s` seconds, in buckets of `bucket_s`.

    Pure: the time is given to every call (seconds, any monotonic clock), nothing is
    read from a clock here. Not thread-safe: its owner locks (`ProcessorStats`)."""

    def __init__(self, width: int, *, window_s: float = WINDOW_S, bucket_s: float = BUCKET_S):
        if bucket_s <= 0 or window_s < bucket_s:
            raise ValueError(f"a window of {window_s} s cannot hold buckets of {bucket_s} s")
        self.width = width
        self.bucket_s = bucket_s
        self.slots = int(round(window_s / bucket_s))
        self._numbers = [-1] * self.slots  # which bucket each slot holds (-1: none yet)
        self._sums = [[0.0] * width for _ in range(self.slots)]

    def add(self, now: float, values: tuple[float, ...] | list[float]) -> None:
        number = int(now // self.bucket_s)
        slot = number % self.slots
        sums = self._sums[slot]
        if self._numbers[slot] != number:  # the slot held a bucket older than the window
            self._numbers[slot] = number
            sums[:] = values
            return
        for index, value in enumerate(values):
            sums[index] += value

    def totals(self, now: float) -> list[float]:
        """The sums of the buckets of the last `window_s` seconds, the current one included."""
        newest = int(now // self.bucket_s)
        oldest = newest - self.slots + 1
        result = [0.0] * self.width
        for number, sums in zip(self._numbers, self._sums, strict=True):
            if oldest <= number <= newest:
                for index, value in enumerate(sums):
                    result[index] += value
        return result


def _figures(values: list[float]) -> dict[str, float | int]:
    return {
        name: (round(value, 6) if index == _TASK_SECONDS else int(value))
        for index, (name, value) in enumerate(zip(FIELDS, values, strict=True))
    }


class ProcessorStats:
    """One processor's figures (see the module docstring), fed once per task by the
    engine (`record`) and read by its status (`snapshot`).

    `clock` is the engine's monotonic clock (seconds), for the window.
    Lock plan: `_lock` guards the window, the totals and the bulletin; `record` takes it
    once per task, `snapshot` once per read."""

    def __init__(self, clock: Callable[[], float], *, window_s: float = WINDOW_S, bucket_s: float = BUCKET_S):
        self._clock = clock
        self._lock = threading.Lock()
        self._window = SlidingWindow(len(FIELDS), window_s=window_s, bucket_s=bucket_s)
        self._totals = [0.0] * len(FIELDS)
        self._bulletin: Bulletin | None = None

    def record(self, counts: SessionCounts | None, task_seconds: float, bulletin: Bulletin | None = None) -> None:
        """One task: `counts` of its session if it committed (None if it rolled back or
        did nothing), its time, and the bulletin it raised, if any."""
        if counts is None:
            values: tuple[float, ...] = (0, 0, 0, 0, 0, 0, 1, task_seconds, 0)
        else:
            values = (
                counts.in_count,
                counts.in_bytes,
                counts.read_bytes,
                counts.written_bytes,
                counts.out_count,
                counts.out_bytes,
                1,
                task_seconds,
                counts.failures,
            )
        now = self._clock()
        with self._lock:
            self._window.add(now, values)
            totals = self._totals
            for index, value in enumerate(values):
                totals[index] += value
            if bulletin is not None:
                self._bulletin = bulletin

    def snapshot(self) -> dict:
        """{"five_minutes": figures, "since_start": figures, "last_bulletin": a
        `Bulletin.to_dict()` or None}, figures keyed by `FIELDS`."""
        now = self._clock()
        with self._lock:
            window = self._window.totals(now)
            totals = list(self._totals)
            bulletin = self._bulletin
        return {
            "five_minutes": _figures(window),
            "since_start": _figures(totals),
            "last_bulletin": bulletin.to_dict() if bulletin is not None else None,
        }


def failure_bulletin(counts: SessionCounts, at_ms: int, processor_id: str) -> Bulletin | None:
    """The bulletin of a session that routed a FlowFile to failure, or None."""
    if counts.failed is None:
        return None
    flowfile_id, error = counts.failed
    message = f"{processor_id} routed FlowFile {flowfile_id} to failure"
    if error:
        message += f": {error}"
    return Bulletin(at_ms, message[:MESSAGE_LIMIT], flowfile_id)


def error_bulletin(error: BaseException, at_ms: int, flowfile_id: str | None) -> Bulletin:
    """The bulletin of a task that raised `error` (its session rolled back)."""
    text = str(error).splitlines()[0] if str(error) else ""
    message = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return Bulletin(at_ms, message[:MESSAGE_LIMIT], flowfile_id)


def zero_figures() -> dict[str, float | int]:
    """Every figure at zero (a processor no engine counted yet)."""
    return _figures([0.0] * len(FIELDS))
