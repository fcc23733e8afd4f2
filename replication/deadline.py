"""Calls into hdfs-native with a deadline.

A write or hsync that is in flight when every DataNode of its pipeline dies, or
freezes, blocks inside hdfs-native for minutes or forever: the client's socket
timeout does not cover a pipeline that stops acknowledging. A node cannot wait that
long with a session open, so each such call runs on a worker thread here and the
caller waits at most `timeout` seconds. When the deadline passes the caller gets
`DeadlineExceeded`, and the stuck worker is abandoned (it is a daemon thread; a fresh
worker takes its place), because a blocked Rust call cannot be interrupted.

Workers are daemon threads of our own rather than a `ThreadPoolExecutor`, whose
exit hook joins its threads and would hang interpreter shutdown on a stuck call.

Abandoned workers are capped (`max_workers`, 64 by default): when every worker is
busy (stuck past a deadline, or running) and the cap is reached, a new call is
refused at once with `DeadlineExceeded`, as if it had timed out, instead of starting
yet another thread for a storage that is not answering; or, if its caller says it may
wait (`start(wait=)`), only once that long has passed without a worker coming free. A
stuck call that returns at last frees its worker, and calls are taken again.

A runner's workers can be renewed (`renew`): every later call runs on fresh workers,
and each of the old ones ends once its call has returned (an idle one at once). What an
incarnation that died left blocked then never holds the workers of what comes after it
(`HdfsStorage.renew_workers`), and whoever holds the runner keeps it. Renewed workers
are capped too: while as many as `max_retired` (three pools' worth by default) are
still blocked, `renew` refuses, and calls are refused (or wait, `start(wait=)`) as
they were before renewals, until a worker of the pool they have comes free.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    pass


class NoWorkerFree(DeadlineExceeded):
    """A call refused before it ran: every worker is blocked and the cap is reached."""


class Call:
    __slots__ = ("function", "on_done", "done", "result", "error")

    def __init__(self, function: Callable[[], object], on_done: Callable[[], None] | None = None):
        self.function = function
        self.on_done = on_done  # called once `done` is set (by `DeadlineRunner.start`'s worker)
        self.done = threading.Event()
        self.result: object = None
        self.error: BaseException | None = None


class DeadlineRunner:
    """Runs calls on a small pool of daemon threads; the caller waits with a deadline.

    Lock plan: `_lock` guards `_idle` and `_workers` (the counts used to decide when
    to start another worker), and `_freed`, a condition on it, is notified when a worker
    comes free; the queue has its own lock.
    """

    def __init__(self, name: str = "hdfs-io", max_workers: int = 64, max_retired: int | None = None):
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self._name = name
        self._max_workers = max_workers
        self._max_retired = 3 * max_workers if max_retired is None else max_retired
        self._retired = 0  # workers of earlier generations not yet ended
        self._calls: queue.SimpleQueue[Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._idle = 0
        self._workers = 0  # alive: idle, running a call, or stuck in one
        self._started = 0  # ever, for thread names
        self._generation = 0  # renewals so far: a worker of an earlier one ends after its call

    def run(self, function: Callable[[], T], timeout: float | None) -> T:
        if timeout is None:
            return function()
        call = self.start(function)
        if not call.done.wait(timeout):
            raise DeadlineExceeded(f"the call did not return within {timeout:g} s")
        if call.error is not None:
            raise call.error
        return call.result  # type: ignore[return-value]

    def start(
        self, function: Callable[[], object], on_done: Callable[[], None] | None = None, *, wait: float = 0.0
    ) -> Call:
        """Start `function` on a worker and return at once: its `done` event is set when
        it returned, with its `result` or `error`, and then `on_done()` is called (a
        caller waiting on several calls is woken by it and finds the call done). Refused
        (`DeadlineExceeded`) as `run` is when every worker is blocked and the cap is
        reached, at once or once `wait` seconds passed without a worker coming free."""
        call = Call(function, on_done)
        with self._lock:
            if wait > 0:
                self._freed.wait_for(lambda: self._idle > 0 or self._workers < self._max_workers, wait)
            if self._idle > 0:
                self._idle -= 1
            elif self._workers < self._max_workers:
                self._start_worker()
            else:
                raise NoWorkerFree(
                    f"all {self._workers} {self._name} workers are still blocked in calls past "
                    "their deadlines; the storage is not answering (refused without waiting)"
                )
            self._calls.put(call)  # under the lock: into the queue of the worker it was given
        return call

    @property
    def retired(self) -> int:
        """Workers of earlier renewals that have not ended yet (blocked in their calls)."""
        with self._lock:
            return self._retired

    @property
    def busy(self) -> int:
        """Workers running a call now, or still stuck in one past its deadline."""
        with self._lock:
            return self._workers - self._idle

    def renew(self) -> int:
        """If calls are running or stuck, run every later call on fresh workers; each
        old worker ends once its call has returned (the call's caller still gets its
        answer), an idle one at once. Returns how many calls were left to end: 0 also
        when `max_retired` workers of earlier renewals are still blocked (`retired`):
        the storage has not answered them, and more threads would not help."""
        with self._lock:
            blocked = self._workers - self._idle
            if not blocked or self._retired >= self._max_retired:
                return 0
            calls, workers = self._calls, self._workers
            self._retired += workers
            self._calls = queue.SimpleQueue()
            self._idle = self._workers = 0
            self._generation += 1
            self._freed.notify_all()  # a start waiting for a worker may start one now
        for _ in range(workers):
            calls.put(None)  # one end for each old worker, after the calls already queued
        return blocked

    def _start_worker(self) -> None:
        self._workers += 1
        self._started += 1
        thread = threading.Thread(
            target=self._work, args=(self._calls, self._generation), name=f"{self._name}-{self._started}", daemon=True
        )
        thread.start()

    def _work(self, calls: queue.SimpleQueue[Call | None], generation: int) -> None:
        while True:
            call = calls.get()
            if call is None:  # renewed: this worker ends
                with self._lock:
                    self._retired -= 1
                return
            try:
                call.result = call.function()
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                call.error = error
            call.done.set()
            if call.on_done is not None:
                call.on_done()
            # An idle worker must not keep the last call (and the writer its function
            # holds) alive: whoever drops a writer last should be its owner, not us.
            del call
            with self._lock:
                if generation == self._generation:
                    self._idle += 1
                    self._freed.notify()
