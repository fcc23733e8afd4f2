"""The idle look's thread: it looks only while the client's lock is free, never
waits for it, and ends once told to stop."""

from __future__ import annotations

import threading

from cluster.services.process import wait_until
from flow.processors.kafka import idle


class TaskLock:
    """A lock whose holder is "a task" while `held`; counts the look's tries."""

    def __init__(self) -> None:
        self.held = False
        self.tries = 0
        self._lock = threading.Lock()

    def acquire(self, blocking: bool = True) -> bool:
        assert not blocking, "the look never waits for the lock"
        self.tries += 1
        return not self.held and self._lock.acquire(blocking=False)

    def release(self) -> None:
        self._lock.release()


def test_the_look_runs_while_the_lock_is_free_and_never_while_a_task_holds_it(monkeypatch):
    monkeypatch.setattr(idle, "CHECK_S", 0.01)
    lock, stop = TaskLock(), threading.Event()
    looks: list[bool] = []

    thread = idle.watch("p", lock, stop, lambda: looks.append(lock.held))  # type: ignore[arg-type]
    wait_until(lambda: len(looks) >= 2, 10, "two looks while the lock is free")
    lock.held = True
    counted, tries = len(looks), lock.tries
    wait_until(lambda: lock.tries >= tries + 3, 10, "three tries while a task holds the lock")
    assert len(looks) <= counted + 1  # at most the one that took the lock before it was held
    lock.held = False
    wait_until(lambda: len(looks) > counted + 1, 10, "a look once the lock is free again")
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def test_a_look_that_fails_is_logged_and_the_next_goes_on(monkeypatch, caplog):
    monkeypatch.setattr(idle, "CHECK_S", 0.01)
    lock, stop = threading.Lock(), threading.Event()
    calls: list[int] = []

    def look() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the broker's answer was cut short")

    thread = idle.watch("p", lock, stop, look)
    wait_until(lambda: len(calls) >= 2, 10, "a second look after one that failed")
    stop.set()
    thread.join(5)
    assert not lock.locked()
    assert "the look while idle failed" in caplog.text
