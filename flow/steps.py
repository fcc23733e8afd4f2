"""How long each step of a piece of work took, said in one log line.

Work whose steps lie between a failure and the first record out says where its time
went, so that a drill's slow round is explained by its node's log alone:

* PublishKafka's new transactional producer (its own id's hanging transactions
  finished, the fencing `init_transactions`, the read back of its progress; on an
  adopted shard they lie between the adoption and its first record out) logs its
  steps when they took longer than `SLOW_S` together, and its first task says always
  where its own time went (waiting for the producer, the content, the Kafka
  transaction, the WAL commit);
* a node's adoption of a shard says, in its "adopted" line, how long the fencing, the
  WAL's recovery, the compare-and-set that marks the shard adopted and the start of
  its flow took.
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
