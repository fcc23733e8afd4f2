"""An in-memory content repository for the stateless engine (NiFi's stateless engine keeps
content in memory too).

It is a `repositories.content.ContentStore`: one resource per claim, and a resource
whose claimant count drops to zero is freed at once, so `collect` and `age_off` find
nothing to do. Nothing is durable and nothing is ever lost, so `sync` and
`check_durable` do nothing. After a restart there is nothing to recover: `recover`
reports every live claim as missing.

Lock plan: `_lock` guards `_data` and `_counts`.
"""

from __future__ import annotations

import io
import itertools
import threading
from collections.abc import Iterable

from repositories.claims import ContentClaim, ResourceClaim
from repositories.content import ClaimWriter, CollectReport, ContentStore, RecoveryReport


class _MemoryWriter(ClaimWriter):
    def __init__(self, repository: InMemoryContentRepository):
        self._repository = repository
        self._buffer = io.BytesIO()
        self.claim: ContentClaim | None = None

    def write(self, data) -> int:
        return self._buffer.write(data)

    def close(self, *, sync: bool | None = None, retire: bool = False) -> ContentClaim:
        if self.claim is None:
            self.claim = self._repository._store(self._buffer.getvalue())
        return self.claim

    def abort(self) -> None:
        self._buffer = io.BytesIO()


class InMemoryContentRepository(ContentStore):
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

    def check_durable(self, claims: Iterable[ContentClaim]) -> None:
        """Nothing is ever lost in memory (nor durable)."""

    def sync(self, *, retire: bool | None = None) -> None:
        pass

    def recover(self, live_claims: Iterable[ContentClaim]) -> RecoveryReport:
        with self._lock:
            held = set(self._data)
        missing = {claim.resource for claim in live_claims} - held
        return RecoveryReport(missing=sorted(missing, key=lambda resource: resource.relative_path))

    def collect(self) -> CollectReport:
        return CollectReport()  # a resource is freed when its count reaches zero

    def age_off(self) -> list[ResourceClaim]:
        return []  # nothing is archived

    def close(self) -> None:
        pass  # the bytes go with the repository

    def resident_bytes(self) -> int:
        with self._lock:
            return sum(len(data) for data in self._data.values())
