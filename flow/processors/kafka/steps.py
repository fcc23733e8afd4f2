"""How long each step of a slow piece of work took, said in one log line.

PublishKafka makes a new transactional producer in several steps, each a round trip
or more to the brokers (its own id's hanging transactions finished, the fencing
`init_transactions`, and beside them the progress partition found and other ids'
hanging transactions; then the read back of its progress: `transactional`). On an
adopted shard they lie between the adoption and its first record out, so when they
take long together the node says which step took the time. A new producer's first
task then says where its own time went, always (one line a producer): waiting for the
producer, reading the content, the Kafka transaction, the WAL commit. On an adopted
shard that task is the resume, the adopted FlowFiles' first records out. A drill's
slow round is then explained by its node's log alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SLOW_S = 1.0  # steps that took longer than this together are logged


class Steps:
    """The moments between steps: `done(name)` ends the step running since the last."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last = clock()
        self.taken: list[tuple[str, float]] = []

    def done(self, name: str) -> None:
        now = self._clock()
        self.taken.append((name, now - self._last))
        self._last = now

    def total(self) -> float:
        return sum(seconds for _, seconds in self.taken)

    def slow(self, threshold: float = SLOW_S) -> str | None:
        """Each step and its seconds ("1.42 s: init_transactions 1.20 s, read back
        0.20 s") when they took more than `threshold` together, else None."""
        total = self.total()
        if total <= threshold:
            return None
        return f"{total:.2f} s: {self.said()}"

    def said(self) -> str:
        """Each step and its seconds ("init_transactions 1.20 s, read back 0.20 s")."""
        return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.taken)
