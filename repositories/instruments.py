"""Counters and latency histograms that stores update as they work, read at scrape time.

    commits = ByLabel(Counter)             # one child per label value, made on first use
    commits.of("committed").add()
    syncs = LatencyHistogram()
    started = time.perf_counter(); ...; syncs.observe(time.perf_counter() - started)
    syncs.snapshot()                       # HistogramSnapshot: cumulative buckets, count, sum

They import nothing: the WAL, the committer, the HDFS storage and the failover code
update them without depending on any metrics library, and the admin API turns their
snapshots into Prometheus families when it is scraped (`cluster.admin.metrics`).

Lock plan: each counter and histogram has its own lock, held for a few additions
(an uncontended `threading.Lock` costs tens of nanoseconds; a snapshot takes the
same lock, so its count, sum and buckets agree with each other). `ByLabel._lock`
guards only the making of a child; finding one is a dict lookup without it.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable
from typing import Generic, NamedTuple, TypeVar

# Upper bounds in seconds, from a local fdatasync (sub-millisecond) to an HDFS call
# that waits out a dead DataNode (tens of seconds).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Counter:
    """A count that only goes up."""

    __slots__ = ("_lock", "_value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0

    def add(self, amount: int = 1) -> None:
        with self._lock:
            self._value += amount

    def snapshot(self) -> int:
        with self._lock:
            return self._value


class HistogramSnapshot(NamedTuple):
    bounds: tuple[float, ...]  # upper bounds (inclusive), without +Inf
    cumulative: tuple[int, ...]  # observations <= each bound
    count: int  # every observation (the +Inf bucket)
    sum: float  # seconds, over every observation


class LatencyHistogram:
    """Durations in seconds, counted into fixed buckets (Prometheus' histogram)."""

    __slots__ = ("_lock", "_bounds", "_buckets", "_count", "_sum")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        if list(bounds) != sorted(set(bounds)) or not bounds:
            raise ValueError(f"histogram bounds must increase strictly: {bounds}")
        self._lock = threading.Lock()
        self._bounds = tuple(float(bound) for bound in bounds)
        self._buckets = [0] * (len(bounds) + 1)  # the last one: above every bound
        self._count = 0
        self._sum = 0.0

    def observe(self, seconds: float) -> None:
        index = bisect.bisect_left(self._bounds, seconds)  # the first bound >= seconds
        with self._lock:
            self._buckets[index] += 1
            self._count += 1
            self._sum += seconds

    def snapshot(self) -> HistogramSnapshot:
        with self._lock:
            buckets, count, total = list(self._buckets), self._count, self._sum
        cumulative, running = [], 0
        for observed in buckets[:-1]:
            running += observed
            cumulative.append(running)
        return HistogramSnapshot(self._bounds, tuple(cumulative), count, total)


T = TypeVar("T", Counter, LatencyHistogram)


class ByLabel(Generic[T]):
    """Children of one kind by the value of one label (an outcome, an operation). The
    `known` values have a child from the start, so that they are published (as 0)
    before they first happen."""

    def __init__(self, make: Callable[[], T], known: Iterable[str] = ()) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._children: dict[str, T] = {value: make() for value in known}

    def of(self, value: str) -> T:
        child = self._children.get(value)
        if child is None:
            with self._lock:
                child = self._children.setdefault(value, self._make())
        return child

    def snapshot(self) -> dict:
        """label value -> the child's snapshot, in label order."""
        with self._lock:
            children = sorted(self._children.items())
        return {value: child.snapshot() for value, child in children}
