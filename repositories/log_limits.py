"""Log lines that repeat, at most one per kind per interval, with a count of the rest.

A damaged file retried in a loop, a disk that stays full, a client that keeps sending
garbage: each would otherwise write the same warning hundreds of times a second and
bury everything else in the log. `LimitedLog` writes the first line of a kind at once,
then at most one line of that kind per `interval` seconds, which says how many were
held back since the last one:

    limited = LimitedLog(log, interval=60.0)
    limited.warning("putfile-write", "PutFile %s: cannot write %s: %s", pid, path, error)
    # later lines of kind "putfile-write" within 60 s are counted, not written; the next
    # one after that ends with "(41 more like it in the last 60 s)"

A kind names what repeats (a processor and its error, a queue's swap file); keep the
number of kinds bounded (an id chosen by a client is not a kind). The clock is injected
so that tests drive the interval without waiting.

Lock plan: `_lock` guards `_kinds`; the logging call itself is made outside it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

DEFAULT_INTERVAL_S = 60.0
# Kinds remembered at most; the oldest is forgotten first (its next line is written at once).
MAX_KINDS = 1024


class LimitedLog:
    def __init__(
        self,
        logger: logging.Logger,
        interval: float = DEFAULT_INTERVAL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.logger = logger
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds: dict[str, list] = {}  # kind -> [time of the last line written, lines held back]

    def debug(self, kind: str, message: str, *args: object, **kwargs) -> bool:
        return self.log(logging.DEBUG, kind, message, *args, **kwargs)

    def info(self, kind: str, message: str, *args: object, **kwargs) -> bool:
        return self.log(logging.INFO, kind, message, *args, **kwargs)

    def warning(self, kind: str, message: str, *args: object, **kwargs) -> bool:
        return self.log(logging.WARNING, kind, message, *args, **kwargs)

    def error(self, kind: str, message: str, *args: object, **kwargs) -> bool:
        return self.log(logging.ERROR, kind, message, *args, **kwargs)

    def log(self, level: int, kind: str, message: str, *args: object, **kwargs) -> bool:
        """Write the line unless one of `kind` was written less than `interval` ago;
        return whether it was written."""
        now = self._clock()
        with self._lock:
            state = self._kinds.get(kind)
            if state is not None and now - state[0] < self.interval:
                state[1] += 1
                return False
            held = state[1] if state is not None else 0
            since = now - state[0] if state is not None else 0.0
            self._kinds.pop(kind, None)
            self._kinds[kind] = [now, 0]
            if len(self._kinds) > MAX_KINDS:
                del self._kinds[next(iter(self._kinds))]
        if held:
            message = f"{message} ({held} more like it in the last {since:.0f} s)"
        self.logger.log(level, message, *args, **kwargs)
        return True

    def held_back(self, kind: str) -> int:
        """Lines of `kind` held back since the last one written (for tests and metrics)."""
        with self._lock:
            state = self._kinds.get(kind)
            return state[1] if state is not None else 0
