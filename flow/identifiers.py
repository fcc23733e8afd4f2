"""FlowFile identities: random version-4 UUIDs, made cheaply.

`uuid.uuid4()` reads 16 bytes from the kernel for every FlowFile; on the benchmark
machine that took ~100 us a call and was the largest single cost of a small-content
flow. Uniqueness is what a FlowFile id needs (not unpredictability), so each process
draws 64 random bits once and counts in the other 64: ids never repeat within a
process, and across processes and restarts they collide with probability ~2^-64.

The high half (random, with the version nibble set to 4) is formatted once; each id
formats only its low half: the RFC 4122 variant bits (10) above a 62-bit counter.
Building a `uuid.UUID` for each id cost more than the rest of creating a FlowFile.
"""

from __future__ import annotations

import itertools
import os

_MASK = (1 << 62) - 1
_VARIANT = 1 << 63  # bits 10 at the top of the low half: the RFC 4122 variant


def _draw() -> tuple[str, itertools.count[int]]:
    high = int.from_bytes(os.urandom(8), "big")
    high = (high & ~(0xF << 12)) | (4 << 12)  # version 4: bits 12-15 of the high half
    text = f"{high:016x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:]}-", itertools.count(int.from_bytes(os.urandom(4), "big"))


_HIGH, _COUNTER = _draw()


def new_uuid() -> str:
    low = f"{_VARIANT | (next(_COUNTER) & _MASK):016x}"
    return f"{_HIGH}{low[:4]}-{low[4:]}"


def _reseed_after_fork() -> None:
    global _HIGH, _COUNTER
    _HIGH, _COUNTER = _draw()


os.register_at_fork(after_in_child=_reseed_after_fork)
