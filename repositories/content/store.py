"""`ContentStore`: what the flow engine and the nodes ask of a content repository.

Four repositories conform, and `tests/unit/content/test_store_protocol.py` checks
each method's signature: `ContentRepository` (local disk, and HDFS: the same class
over another `ResourceIO`), `ReplicatingContentRepository`, and the stateless
engine's `InMemoryContentRepository`. Anything else a caller needs (fsck, replicas,
adoption of a dead node's content) belongs to the concrete class, not here.

Repositories subclass `ContentStore` for `write_bytes`, `write_many`, `read`, `read_many` and `export_to`,
which it builds on `write` and `open_read`. `ClaimWriter` is what `write()` returns; writers subclass it
for its shared parts:
`write_whole`, `write_from`, and the context manager that closes the claim on success
and aborts it on an exception.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import BinaryIO, Protocol

from repositories.claims import ContentClaim, ResourceClaim

from .batch_reads import read_many
from .collection import CollectReport
from .exporting import copy_stream
from .recovery import RecoveryReport

# Chunk size of every streaming copy (a claim into a writer, a resource into a hash).
READ_CHUNK = 1 << 20


class ClaimWriter(Protocol):
    """Writes one content claim. Not thread-safe: one writer, one thread.

    After `close()` returns, `claim` holds the claim; after `abort()` the bytes written
    are never referenced."""

    claim: ContentClaim | None

    def write(self, data: bytes | bytearray | memoryview) -> int: ...

    def close(self, *, sync: bool | None = None) -> ContentClaim:
        """Complete the claim. `sync`: make it durable now (True), at the next
        `ContentStore.sync()` (False), or as the repository is configured (None)."""
        ...

    def abort(self) -> None: ...

    def write_whole(self, data: bytes | bytearray | memoryview, *, sync: bool | None = None) -> ContentClaim:
        """Write `data` as the whole claim and close it (as `close(sync=sync)`); abort
        the claim if the write fails."""
        try:
            self.write(data)
        except BaseException:
            self.abort()
            raise
        return self.close(sync=sync)

    def write_from(self, stream, chunk_size: int = READ_CHUNK) -> int:
        """Stream everything from a binary file-like object into this claim."""
        total = 0
        while chunk := stream.read(chunk_size):
            total += self.write(chunk)
        return total

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


class ContentStore(Protocol):
    """Claims written by streaming, read by slice, counted by claimants, made durable in
    groups, recovered after a restart and collected when nobody references them."""

    def write(self) -> ClaimWriter:
        """A writer of one new claim."""
        ...

    def write_bytes(self, data: bytes, *, sync: bool | None = None) -> ContentClaim:
        """One claim holding `data`; `sync` as in `ClaimWriter.close`."""
        return self.write().write_whole(data, sync=sync)

    def write_many(self, contents: Sequence[bytes]) -> list[ContentClaim]:
        """One claim for each of `contents`, in order, each closed unsynced (the commit
        syncs). If a write fails, the claims written before it are released again and
        the error is raised. (A repository may write them side by side at once.)"""
        claims: list[ContentClaim] = []
        try:
            for data in contents:
                claims.append(self.write().write_whole(data, sync=False))
        except BaseException:
            for claim in claims:
                self.decrement(claim)
            raise
        return claims

    def open_read(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> BinaryIO:
        """A stream of the claim's bytes from `offset`, at most `length` of them; close it."""
        ...

    def read(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> bytes:
        with self.open_read(claim, offset, length) as stream:
            return stream.read()

    def export_to(self, claim: ContentClaim, target: int) -> int:
        """Copy the claim's bytes into the file open for writing at descriptor `target`,
        from that file's position (NiFi's `ProcessSession.exportTo`); returns the bytes
        copied. Checked as `open_read` checks, and raises what it raises. This default
        streams them through one reused buffer (`exporting.copy_stream`); a repository
        whose claims lie in local files has the kernel copy them."""
        with self.open_read(claim) as stream:
            return copy_stream(stream, target)

    def read_many(self, claims: Sequence[ContentClaim]) -> list[bytes]:
        """The bytes of each claim, in order: claims side by side in one resource file
        are read together, with one open and one checked read (`batch_reads`)."""
        return read_many(self.open_read, claims)

    def increment(self, claim: ContentClaim | ResourceClaim) -> int:
        """One more claimant of the claim's resource; returns the new count."""
        ...

    def decrement(self, claim: ContentClaim | ResourceClaim) -> int:
        """One claimant fewer; at zero the resource may be collected. Returns the new count."""
        ...

    def claimant_count(self, claim: ContentClaim | ResourceClaim) -> int: ...

    def sync(self) -> None:
        """Make every claim closed so far durable (a session commit's group commit).
        Raises `ContentWriteFailed` naming completed claims whose bytes were lost."""
        ...

    def check_durable(self, claims: Iterable[ContentClaim]) -> None:
        """Raise `ContentWriteFailed` if a failed write or sync lost bytes of `claims`:
        called after `sync()`, before the commit point, with the commit's claims."""
        ...

    def recover(self, live_claims: Iterable[ContentClaim]) -> RecoveryReport:
        """After a restart: claimant counts from the FlowFile repository's live claims;
        what no live claim references is cleaned up."""
        ...

    def collect(self) -> CollectReport:
        """Archive (or destroy) what nobody references and nobody can append to."""
        ...

    def age_off(self) -> list[ResourceClaim]:
        """Delete archived resources past retention or above the usage limit."""
        ...

    def close(self) -> None:
        """Sync what was written and release every file."""
        ...
