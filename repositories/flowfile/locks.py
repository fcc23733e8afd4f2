"""A shared/exclusive lock: updates share it, checkpoint and recovery take it alone.

Writer preference: once `exclusive()` waits, new `shared()` callers wait too, so a
steady stream of updates cannot starve the periodic checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SharedExclusiveLock:
    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._sharers = 0
        self._exclusive = False
        self._exclusive_waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._condition:
            while self._exclusive or self._exclusive_waiting:
                self._condition.wait()
            self._sharers += 1
        try:
            yield
        finally:
            with self._condition:
                self._sharers -= 1
                if not self._sharers:
                    self._condition.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        self.acquire_exclusive()
        try:
            yield
        finally:
            self.release_exclusive()

    def acquire_exclusive(self) -> None:
        """Take the lock alone. Ownership is not tied to a thread: the thread that took
        it may hand it to another, which releases it (a recovery hands its forced
        checkpoint to a thread of its own, and updates wait for that thread)."""
        with self._condition:
            self._exclusive_waiting += 1
            try:
                while self._exclusive or self._sharers:
                    self._condition.wait()
            finally:
                self._exclusive_waiting -= 1
            self._exclusive = True

    def release_exclusive(self) -> None:
        with self._condition:
            self._exclusive = False
            self._condition.notify_all()
