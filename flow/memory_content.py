"""An in-memory content repository for the stateless engine (seed 004).

It offers the part of `repositories.content.ContentRepository` a session uses:
`write()` (a writer with `write`, `close(sync=)`, `abort`), `open_read`, `read`,
`increment`, `decrement`, `claimant_count`, `sync`. One resource per claim; a
resource whose claimant count drops to zero is freed at once.

Lock plan: `_lock` guards `_data` and `_counts`.
"""

from __future__ import annotations

import io
import itertools
import threading

from repositories.claims import ContentClaim, ResourceClaim


class _MemoryWriter:
    def __init__(self, repository: "InMemoryContentRepository"):
        self._repository = repository
        self._buffer = io.BytesIO()

    def write(self, data) -> int:
        return self._buffer.write(data)

    def write_from(self, stream, chunk_size: int = 1 << 20) -> int:
        total = 0
        while chunk := stream.read(chunk_size):
            total += self._buffer.write(chunk)
        return total

    def close(self, *, sync: bool | None = None, retire: bool = False) -> ContentClaim:
        return self._repository._store(self._buffer.getvalue())

    def abort(self) -> None:
        self._buffer = io.BytesIO()

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.claim = self.close()
        else:
            self.abort()


class InMemoryContentRepository:
    def __init__(self, name: str = "memory"):
        self.name = name
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._data: dict[ResourceClaim, bytes] = {}
        self._counts: dict[ResourceClaim, int] = {}

    def write(self) -> _MemoryWriter:
        return _MemoryWriter(self)

    def write_bytes(self, data: bytes, *, sync: bool | None = None) -> ContentClaim:
        return self._store(bytes(data))

    def _store(self, data: bytes) -> ContentClaim:
        with self._lock:
            resource = ResourceClaim(self.name, 0, f"m{next(self._ids)}")
            self._data[resource] = data
            self._counts[resource] = 1
        return ContentClaim(resource, 0, len(data))

    def open_read(self, claim: ContentClaim, offset: int = 0, length: int | None = None):
        data = self._data[claim.resource]
        start = claim.offset + offset
        end = claim.offset + claim.length if length is None else min(start + length, claim.offset + claim.length)
        return io.BytesIO(data[start:end])

    def read(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> bytes:
        return self.open_read(claim, offset, length).read()

    def _resource(self, claim) -> ResourceClaim:
        return claim.resource if isinstance(claim, ContentClaim) else claim

    def increment(self, claim) -> int:
        resource = self._resource(claim)
        with self._lock:
            self._counts[resource] = self._counts.get(resource, 0) + 1
            return self._counts[resource]

    def decrement(self, claim) -> int:
        resource = self._resource(claim)
        with self._lock:
            count = self._counts.get(resource, 0) - 1
            if count <= 0:
                self._counts.pop(resource, None)
                self._data.pop(resource, None)
                return 0
            self._counts[resource] = count
            return count

    def claimant_count(self, claim) -> int:
        return self._counts.get(self._resource(claim), 0)

    def check_durable(self, claims) -> None:
        """Nothing is ever lost in memory (nor durable)."""

    def sync(self, **_ignored) -> None:
        pass

    def resident_bytes(self) -> int:
        with self._lock:
            return sum(len(data) for data in self._data.values())
