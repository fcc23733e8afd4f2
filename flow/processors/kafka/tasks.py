"""One task at a time: a Kafka processor holds one client (a consumer and its positions,
or a producer and its transaction), which two tasks must never use at once."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ...processor import ProcessContext


def run_alone(lock: threading.Lock, context: ProcessContext, task: Callable[[], None]) -> None:
    """Run `task` holding `lock`; when another task holds it, yield instead of waiting
    (the engine schedules this processor again after its yield duration)."""
    if not lock.acquire(blocking=False):
        context.yield_()
        return
    try:
        task()
    finally:
        lock.release()
