"""FlowFile identities: random version-4 UUIDs, made cheaply.

`uuid.uuid4()` reads 16 bytes from the kernel for every FlowFile; on the benchmark
machine that took ~100 us a call and was the largest single cost of a small-content
flow. Uniqueness is what a FlowFile id needs (not unpredictability), so each process
draws 64 random bits once and counts in the other 64: ids never repeat within a
process, and across processes and restarts they collide with probability ~2^-64.
"""

from __future__ import annotations

import itertools
import os
import uuid

_PREFIX = int.from_bytes(os.urandom(8), "big") << 64
_COUNTER = itertools.count(int.from_bytes(os.urandom(4), "big"))
_MASK = (1 << 62) - 1


def new_uuid() -> str:
    return str(uuid.UUID(int=_PREFIX | (next(_COUNTER) & _MASK), version=4))


def _reseed_after_fork() -> None:
    global _PREFIX, _COUNTER
    _PREFIX = int.from_bytes(os.urandom(8), "big") << 64
    _COUNTER = itertools.count(int.from_bytes(os.urandom(4), "big"))


os.register_at_fork(after_in_child=_reseed_after_fork)
