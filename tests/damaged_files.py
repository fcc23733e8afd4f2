"""Damaged files for the fuzz tests of the repositories' readers (the FlowFile WAL,
swap files, content claims and their checksums, provenance), and the bounds every
read of a damaged file keeps.

    damaged = data.draw(damaged_bytes(original, landmarks=(0, 33, 120)))
    damaged.content        # the file's new bytes (the original, changed 1 to 3 times)
    damaged.first_change   # where they start to differ from the original
    outcome, value = within_bounds(lambda: read(path), documented=(SwapError,))

`damaged_bytes` changes the bytes as disks, crashes and bad copies do: a bit flipped,
a range overwritten with random bytes or with zeros, the file cut short, bytes
inserted, a range written twice. The offsets fall anywhere, or near the landmarks a
test names (headers, length fields, the start of each frame or block: where a
change hurts most), and near the head and the tail of the file.

`scratch_directory` is where the files go: in memory (/dev/shm) where the host has
it, so that the time bound measures the reader's work and not a busy disk's fsyncs.

`within_bounds` runs one read: it returns, or raises one of the reader's documented
errors with a message, in under SECONDS and with a peak under PEAK_BYTES (what
Python allocates, by tracemalloc; and what the process holds, by its peak resident
size, for what native code allocates). Any other exception fails the example.
CUSTODY_LONG=1 runs SCALE (20) times as many examples.
"""

from __future__ import annotations

import contextlib
import os
import resource
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

SCALE = 20 if os.environ.get("CUSTODY_LONG") == "1" else 1
SECONDS = 2.0
PEAK_BYTES = 256 << 20
KINDS = ("flip", "overwrite", "zero", "truncate", "insert", "duplicate")


def fuzz_settings(examples: int):
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


@dataclass(frozen=True)
class Damage:
    """One change to a file's bytes at `offset`: `data` is the mask of a flip, the bytes
    written over or inserted; `length` the bytes zeroed or written twice."""

    kind: str
    offset: int
    length: int = 0
    data: bytes = b""

    def apply(self, content: bytes) -> bytes:
        at, end = self.offset, self.offset + self.length
        if self.kind == "flip":
            return content[:at] + bytes([content[at] ^ self.data[0]]) + content[at + 1 :]
        if self.kind == "overwrite":
            return content[:at] + self.data[: len(content) - at] + content[at + len(self.data) :]
        if self.kind == "zero":
            return content[:at] + bytes(len(content[at:end])) + content[end:]
        if self.kind == "truncate":
            return content[:at]
        if self.kind == "insert":
            return content[:at] + self.data + content[at:]
        return content[:end] + content[at:end] + content[end:]  # duplicate


@dataclass(frozen=True)
class Damaged:
    content: bytes = field(repr=False)  # the damages and the original tell it
    damages: tuple[Damage, ...]
    first_change: int  # the first offset where `content` differs from the original (its length if none)


def first_difference(original: bytes, changed: bytes) -> int:
    low, high = 0, min(len(original), len(changed))
    while low < high:  # a binary search for the end of the common prefix
        middle = (low + high + 1) // 2
        if original[low:middle] == changed[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@st.composite
def damages(draw, size: int, landmarks=()) -> Damage:
    """One change to a file of `size` bytes, at an offset anywhere or near a landmark."""
    kind = draw(st.sampled_from(KINDS if size else ("insert",)), label="kind")
    last = size if kind in ("truncate", "insert") else size - 1
    near = min(last, draw(st.sampled_from((0, *landmarks, size)), label="near"))
    offset = draw(st.one_of(st.integers(0, last), st.integers(max(0, near - 4), min(last, near + 44))), label="offset")
    if kind == "flip":
        return Damage(kind, offset, data=bytes([1 << draw(st.integers(0, 7), label="bit")]))
    if kind in ("overwrite", "insert"):
        return Damage(kind, offset, data=draw(st.binary(min_size=1, max_size=24), label="bytes"))
    if kind in ("zero", "duplicate"):
        return Damage(kind, offset, length=draw(st.integers(1, 64), label="length"))
    return Damage(kind, offset)


@st.composite
def damaged_bytes(draw, original: bytes, landmarks=(), most: int = 3) -> Damaged:
    """`original` changed one to `most` times."""
    content, done = original, []
    for _ in range(draw(st.integers(1, most), label="changes")):
        change = draw(damages(len(content), landmarks))
        content = change.apply(content)
        done.append(change)
    return Damaged(content, tuple(done), first_difference(original, content))


@contextlib.contextmanager
def scratch_directory():
    memory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="custody-fuzz-", dir=memory) as directory:
        yield directory


def _resident_peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def within_bounds(read, documented: tuple[type[BaseException], ...]):
    """("returned", value) or ("refused", the error) of `read()`, which must raise
    nothing but `documented` errors (with a message), within SECONDS and PEAK_BYTES."""
    resident_before = _resident_peak_bytes()
    tracemalloc.start()
    started = time.monotonic()
    try:
        outcome, value = "returned", read()
    except documented as error:
        assert str(error).strip(), f"{type(error).__name__} without a message"
        outcome, value = "refused", error
    finally:
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < SECONDS, f"took {elapsed:.2f} s"
    assert peak < PEAK_BYTES, f"allocated {peak:,} bytes at the peak"
    grown = _resident_peak_bytes() - resident_before
    assert grown < PEAK_BYTES, f"the process grew by {grown:,} bytes"
    event(outcome if outcome == "returned" else f"refused: {type(value).__name__}")
    return outcome, value
