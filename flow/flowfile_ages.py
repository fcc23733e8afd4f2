"""`FlowFileAges`: how old each FlowFile is, for a connection's expiration, on a clock
that wall-clock steps do not move.

A connection's `expiration` counts, as NiFi's does, from the FlowFile's entry date:
when it entered the flow (its creation, or a clone's), kept as it moves from one
connection to the next. That date is wall-clock milliseconds, and is what the WAL
and swap files keep. Ageing by the wall clock (`now - entry_date`) made a clock step
forward expire every queued FlowFile at once, and a step back keep them for the
length of the step.

So a FlowFile's age is measured on the monotonic clock from its *origin*: the
monotonic moment at which it was 0 ms old. The wall clock is read once per FlowFile,
when the process first sees it (it is recovered from the WAL, or a session puts a new
one into a queue): origin = now - (its age then by its entry date, never less than 0).
From there on only the monotonic clock counts:

* moving between the queues of one flow keeps the origin: an acknowledged FlowFile's
  origin is kept for `HAND_OVER_MS` (a commit acknowledges its inputs and puts its
  outputs microseconds apart), and found again when it is put into the next queue;
* a swapped-out batch keeps one offset between entry dates and origins (the smallest
  of the batch, so that no FlowFile comes back older than it was), and gets its
  origins back from it when it is swapped in; a swap file registered at recovery gets
  the offset of that moment, as the in-memory FlowFiles recovered beside it do.

A FlowFile never seen before (a queue whose expiration was set while it held
FlowFiles) gets its origin the first time its age is asked.

Clocks are injected (`wall_ms`, `monotonic_ms`, both in ms) so that tests step the wall
clock and drive the monotonic one. Lock plan: `_lock` guards every dict below; it is
taken under a queue's lock (never the other way round) and held for dict operations
only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

HAND_OVER_MS = 1_000  # an acknowledged FlowFile's origin is found by the next queue for at least this long


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class FlowFileAges:
    def __init__(self, *, wall_ms: Callable[[], int] = wall_clock_ms, monotonic_ms: Callable[[], int] = monotonic_ms):
        self._wall_ms, self._monotonic_ms = wall_ms, monotonic_ms
        self._lock = threading.Lock()
        self._origins: dict[str, int] = {}  # FlowFile id -> origin, of the FlowFiles queued in memory
        self._leaving: dict[str, int] = {}  # acknowledged since `_leaving_since`
        self._left: dict[str, int] = {}  # acknowledged in the generation before
        self._leaving_since = monotonic_ms()
        self._swapped: dict[str, tuple[int, int]] = {}  # swap file -> (entry date - origin, latest origin)

    def now(self) -> int:
        """Monotonic milliseconds, the clock of `age_ms`."""
        return self._monotonic_ms()

    def age_ms(self, flowfile, now: int) -> int:
        """How old `flowfile` is at monotonic `now`."""
        with self._lock:
            origin = self._origins.get(flowfile.id)
            if origin is None:
                origin = self._origins[flowfile.id] = self._derive(flowfile.entry_date)
        return now - origin

    # -- FlowFiles in memory ---------------------------------------------------------------
    def entered(self, flowfiles: Iterable) -> None:
        """Put into a queue: recovered, new, or moved on from another queue of the flow."""
        with self._lock:
            self._rotate()
            origins, leaving, left = self._origins, self._leaving, self._left
            offset = reference = None
            for flowfile in flowfiles:
                key = flowfile.id
                if key in origins:
                    continue
                origin = leaving.pop(key, None)
                if origin is None:
                    origin = left.pop(key, None)
                if origin is None:
                    if offset is None:
                        reference = self._monotonic_ms()
                        offset = self._wall_ms() - reference
                    origin = min(reference, flowfile.entry_date - offset)
                origins[key] = origin

    def left(self, flowfiles: Iterable) -> None:
        """Acknowledged by the queue that held them: moved on, or gone from the flow."""
        with self._lock:
            self._rotate()
            origins, leaving = self._origins, self._leaving
            for flowfile in flowfiles:
                origin = origins.pop(flowfile.id, None)
                if origin is not None:
                    leaving[flowfile.id] = origin

    # -- swapped batches ----------------------------------------------------------------------
    def swapped_out(self, location: str, flowfiles: list) -> None:
        """`flowfiles` are in the swap file at `location` now, out of memory."""
        with self._lock:
            offset, latest = None, None
            for flowfile in flowfiles:
                origin = self._origins.pop(flowfile.id, None)
                if origin is None:
                    continue
                gap = flowfile.entry_date - origin
                offset = gap if offset is None else min(offset, gap)
                latest = origin if latest is None else max(latest, origin)
            if offset is not None and latest is not None:  # both set by the same FlowFile
                self._swapped[location] = (offset, latest)

    def registered(self, location: str) -> None:
        """Recovery: the swap file at `location` is queued, its FlowFiles aged by their
        entry dates as of now."""
        with self._lock:
            reference = self._monotonic_ms()
            self._swapped[location] = (self._wall_ms() - reference, reference)

    def swapped_in(self, location: str, flowfiles: list) -> None:
        """The swap file at `location` is read back into memory as `flowfiles`."""
        with self._lock:
            known = self._swapped.pop(location, None)
            if known is None:
                reference = self._monotonic_ms()
                known = (self._wall_ms() - reference, reference)
            offset, latest = known
            for flowfile in flowfiles:
                self._origins[flowfile.id] = min(latest, flowfile.entry_date - offset)

    def forget(self, location: str) -> None:
        """The swap file at `location` was dropped whole."""
        with self._lock:
            self._swapped.pop(location, None)

    # -- internals ----------------------------------------------------------------------------
    def _derive(self, entry_date: int) -> int:
        reference = self._monotonic_ms()
        return min(reference, entry_date - (self._wall_ms() - reference))

    def _rotate(self) -> None:
        now = self._monotonic_ms()
        if now - self._leaving_since >= HAND_OVER_MS:
            self._left, self._leaving, self._leaving_since = self._leaving, {}, now
