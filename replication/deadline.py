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
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    pass


class _Call:
    __slots__ = ("function", "done", "result", "error")

    def __init__(self, function: Callable[[], object]):
        self.function = function
        self.done = threading.Event()
        self.result: object = None
        self.error: BaseException | None = None


class DeadlineRunner:
    """Runs calls on a small pool of daemon threads; the caller waits with a deadline.

    Lock plan: `_lock` guards `_idle` and `_workers` (the counts used to decide when
    to start another worker); the queue has its own lock.
    """

    def __init__(self, name: str = "hdfs-io"):
        self._name = name
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._workers = 0

    def run(self, function: Callable[[], T], timeout: float | None) -> T:
        if timeout is None:
            return function()
        call = _Call(function)
        with self._lock:
            if self._idle == 0:
                self._start_worker()
            else:
                self._idle -= 1
        self._calls.put(call)
        if not call.done.wait(timeout):
            raise DeadlineExceeded(f"the call did not return within {timeout:g} s")
        if call.error is not None:
            raise call.error
        return call.result  # type: ignore[return-value]

    def _start_worker(self) -> None:
        self._workers += 1
        thread = threading.Thread(target=self._work, name=f"{self._name}-{self._workers}", daemon=True)
        thread.start()

    def _work(self) -> None:
        while True:
            call = self._calls.get()
            try:
                call.result = call.function()
            except BaseException as error:  # noqa: BLE001 - handed to the caller
                call.error = error
            call.done.set()
            # An idle worker must not keep the last call (and the writer its function
            # holds) alive: whoever drops a writer last should be its owner, not us.
            del call
            with self._lock:
                self._idle += 1
