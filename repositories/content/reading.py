"""Reading claims: `ClaimReader` streams exactly one claim's bytes, never a partial claim.

A claim is read from its resource file, live or archived (whichever this repository
last saw it as is tried first). A claim that reads short is either torn (its writer
died in it, or the file was damaged) or in a file whose dead writer left it open: on
HDFS such a file reads only to its last finished block until its lease is recovered.
`ResourceIO.finish_abandoned` does that where the IO may (a reader of a dead node's
content), and the file is read once more; otherwise the claim is `ContentTruncated`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

from repositories.claims import ContentClaim, InvalidClaimError, ResourceClaim
from repositories.storage import StorageError, StorageFileNotFound

from .claimants import resource_of
from .errors import (
    ContentNotFound,
    ContentRepositoryError,
    ContentTruncated,
    UnsafeContentPath,
    translate_storage_error,
)
from .resource_io import ResourceIO
from .resources import ResourceTable


class ClaimReader(io.RawIOBase):
    """A read-only stream over exactly one claim's bytes (from an offset)."""

    def __init__(self, handle, start: int, length: int, claim: ContentClaim):
        super().__init__()
        self._handle = handle
        self._remaining = length
        self._claim = claim
        handle.seek(start)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = min(len(buffer), self._remaining)
        if want <= 0:
            return 0
        data = self._handle.read(want)
        if not data:
            raise self._ended()
        got = len(data)
        buffer[:got] = data
        self._remaining -= got
        return got

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self._remaining
        size = min(size, self._remaining)
        chunks = []
        while size > 0:
            data = self._handle.read(size)
            if not data:
                raise self._ended()
            chunks.append(data)
            size -= len(data)
            self._remaining -= len(data)
        return b"".join(chunks) if len(chunks) != 1 else bytes(chunks[0])

    def _ended(self) -> ContentTruncated:
        return ContentTruncated(
            f"{self._claim.resource.relative_path} ended {self._remaining} bytes before "
            "the end of the claim", claim=self._claim)

    def close(self) -> None:
        if not self.closed:
            try:
                self._handle.close()
            finally:
                super().close()


class ResourceReader:
    """Opens claims and whole resource files of one repository."""

    def __init__(self, table: ResourceTable, roots: Mapping[str, str], resource_io: ResourceIO):
        self._table = table
        self._roots = roots
        self._io = resource_io

    def open_read(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> ClaimReader:
        table = self._table
        table.check_open()
        if not isinstance(claim, ContentClaim):
            raise InvalidClaimError(f"not a content claim: {claim!r}")
        if offset < 0 or offset > claim.length:
            raise ContentRepositoryError(
                f"offset {offset} outside claim {claim.resource.relative_path}@{claim.offset}+{claim.length}",
                claim=claim)
        wanted = claim.length - offset if length is None else min(length, claim.length - offset)
        open_resource = table.open.get(claim.resource)
        if open_resource is not None and open_resource.pending:
            # Read your writes: the claim's bytes may still wait in the resource's buffer.
            with open_resource.io_lock:
                try:
                    open_resource.flush_pending()
                except StorageError as error:
                    table.fail(open_resource, error)
                    raise translate_storage_error(error, claim=claim) from error
        end = claim.offset + claim.length
        handle, size = self.open_resource(claim.resource, claim)
        if size < end:
            handle.close()
            # A dead writer may have left the file open, its last block unfinished and
            # unreadable: an IO that may recover its lease does, and the file is read again.
            if not self._finish_abandoned(claim.resource, claim):
                raise self._truncated(claim, size)
            handle, size = self.open_resource(claim.resource, claim)
            if size < end:
                handle.close()
                raise self._truncated(claim, size)
        return ClaimReader(handle, claim.offset + offset, wanted, claim)

    def _truncated(self, claim: ContentClaim, size: int) -> ContentTruncated:
        return ContentTruncated(
            f"{self._table.name}: {claim.resource.relative_path} holds {size} readable bytes but the claim "
            f"ends at {claim.offset + claim.length}: it was never completed or was damaged", claim=claim)

    def open_resource(self, resource: ResourceClaim, claim=None):
        """(binary handle, readable size) of a whole resource file, live or archived."""
        root = self._roots.get(resource.container)
        if root is None:
            raise ContentNotFound(f"{self._table.name} has no container {resource.container!r}", claim=claim)
        archived_first = resource in self._table.archived
        for archived in (archived_first, not archived_first):
            try:
                return self._io.open_read(root, resource, archived)
            except StorageFileNotFound:
                continue
            except UnsafeContentPath:
                raise
            except StorageError as error:
                raise translate_storage_error(error, claim=claim) from error
        raise ContentNotFound(
            f"{self._table.name}: no resource file for {resource.relative_path} (destroyed, aged off "
            "or never written)", claim=claim)

    def _finish_abandoned(self, resource: ResourceClaim, claim: ContentClaim) -> bool:
        root = self._roots.get(resource.container)
        try:
            return root is not None and self._io.finish_abandoned(root, resource)
        except StorageError as error:
            raise translate_storage_error(error, claim=claim) from error

    def exists(self, claim: ContentClaim | ResourceClaim) -> bool:
        try:
            handle, _size = self.open_resource(resource_of(claim))
        except ContentNotFound:
            return False
        handle.close()
        return True
