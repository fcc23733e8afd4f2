"""Reading claims: `ClaimReader` streams exactly one claim's bytes, never a partial claim
and never a byte its checksum did not vouch for.

A claim is read from its resource file, live or archived (whichever this repository
last saw it as is tried first). A claim that reads short is either torn (its writer
died in it, or the file was damaged) or in a file whose dead writer left it open: on
HDFS such a file reads only to its last finished block until its lease is recovered.
`ResourceIO.finish_abandoned` does that where the IO may (a reader of a dead node's
content), and the file is read once more; otherwise the claim is `ContentTruncated`.
The same goes for a checksum file that ends before the claim does. A resource whose
files this repository is closing in the background (`ResourceTable.close_file`) is
read once that close is done.

Verification: the claim's blocks come from the resource's checksum file (looked for
beside the resource file, then in the other place). Each block is read whole and its
CRC checked before any of its bytes is returned, so a reader holds one block (64 KB)
at a time, whatever the claim's size. A block that fails, or a block whose checksum
is missing or damaged, raises `ContentCorrupted` naming the bytes: at open when the
checksum records are at fault, mid-stream when the bytes are. A resource of format 0
has no checksum file; its claims are read unverified (`ClaimReader.verified` is False).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable, Iterator, Mapping
from functools import partial

from repositories.claims import ContentClaim, InvalidClaimError, ResourceClaim
from repositories.storage import StorageError, StorageFileNotFound

from .checksum_format import Block, ChecksumFormatError
from .checksums import ChecksumRecords
from .claimants import resource_of
from .errors import (
    ContentCorrupted,
    ContentNotFound,
    ContentRepositoryError,
    ContentTruncated,
    ContentUnavailable,
    UnsafeContentPath,
    translate_storage_error,
)
from .exporting import kernel_copy, read_at, write_all
from .format import archive_path, must_have_checksums, resource_path
from .resource_io import ResourceIO
from .resources import ResourceTable
from .verification import ResourceCheck, check_resource

# A reader reads (and checks) at most this much at once, however much a caller asks for.
MAX_READ = 4 << 20
# How long a read waits for a background close of its resource (one NameNode call,
# retried by the storage within its own deadline) before it gives up.
CLOSE_WAIT_S = 120.0


class ClaimReader(io.RawIOBase):
    """A read-only stream over exactly one claim's bytes (from an offset).

    With `blocks` (the checked blocks that cover the bytes wanted, in order), every
    block is read whole and checked before its bytes are returned; without them (a
    resource of format 0) the bytes are returned as read. `where` names the replica in
    errors; `checksums` is closed with the stream."""

    def __init__(
        self,
        handle,
        start: int,
        length: int,
        claim: ContentClaim,
        *,
        blocks: Iterator[Block] | None = None,
        checksums: ChecksumRecords | None = None,
        where: str = "",
        path: str | None = None,
    ):
        super().__init__()
        self._handle = handle
        self._remaining = length
        self._claim = claim
        self._blocks = blocks
        self._checksums = checksums
        self._where = where
        self._path = path
        self._position = start  # resource offset of the next byte returned
        self._handle_at = start
        self._block = memoryview(b"")  # checked bytes not yet returned
        self._failure: ContentRepositoryError | None = None  # met after good blocks: raised next
        self.verified = blocks is not None
        handle.seek(start)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = min(len(buffer), self._remaining)
        if want <= 0:
            return 0
        data = self._next_bytes(want)
        got = len(data)
        buffer[:got] = data
        return got

    def read1(self, size: int = -1) -> bytes:
        """At most `size` bytes, from one read of the file at most: b"" only at the end
        of the claim. A failure raises before any byte of the failed block is consumed,
        so a caller can go on reading the claim from another replica where this one
        stopped."""
        if size is None or size < 0:
            size = self._remaining
        size = min(size, self._remaining)
        return as_bytes(self._next_bytes(size)) if size > 0 else b""

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self._remaining
        size = min(size, self._remaining)
        chunks = []
        while size > 0:
            data = self._next_bytes(size)
            chunks.append(data)
            size -= len(data)
        return b"".join(chunks) if len(chunks) != 1 else as_bytes(chunks[0])

    def _next_bytes(self, size: int):
        """At most `size` bytes (at least one) from the claim, checked if it has checksums."""
        if self._blocks is None:
            data = self._handle.read(size)
            if not data:
                raise self._ended()
        else:
            if not self._block:
                self._block = self._read_blocks(size)
            data = self._block[:size]
            self._block = self._block[len(data) :]
        self._remaining -= len(data)
        self._position += len(data)
        return data

    def _read_blocks(self, want: int, read_at: Callable[[int, int], memoryview] | None = None) -> memoryview:
        """The checked bytes, from `_position` on, of as many blocks as cover `want`
        bytes (at least one block, at most about `MAX_READ` bytes), read at once:
        through the handle, or with `read_at(offset, length)` (which leaves the
        handle where it is).

        A failure after the first block is kept for the next call, which raises it
        before returning anything: the bytes returned so far are all checked, and the
        failure is met at the very byte where the bad block starts."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        blocks: list[Block] = []
        covered = 0
        while not blocks or (covered < want and covered < MAX_READ):
            try:
                block = next(self._blocks)
            except ChecksumFormatError as error:
                failure = self._corrupted(blocks[-1].end if blocks else self._position, None, error.reason)
                if not blocks:
                    raise failure from None
                self._failure = failure
                break
            blocks.append(block)
            covered = block.end - self._position
        first = blocks[0].start
        if read_at is not None:
            view = read_at(first, blocks[-1].end - first)
            got = len(view)
        else:
            if self._handle_at != first:
                self._handle.seek(first)
            view = memoryview(_read_exactly(self._handle, blocks[-1].end - first))
            got = len(view)
            self._handle_at = first + got
        good = first
        for block in blocks:
            if block.end > first + got:
                failure = self._ended()
            elif self._checksums.block_crc(view[block.start - first : block.end - first]) != block.crc:
                failure = self._corrupted(block.start, block.end, "the bytes do not match their checksum")
            else:
                good = block.end
                continue
            if good == first:
                raise failure
            self._failure = failure
            break
        return view[self._position - first : good - first]

    def export(self, target: int) -> int:
        """Copy the rest of the claim into the file open for writing at descriptor
        `target`, from that file's position; returns the bytes copied. Checked as
        `read` checks: no byte is copied before its block's CRC vouched for it, and a
        damaged, missing or cut-short block raises as `read` raises (the good blocks
        before it copied).

        From a local resource file the kernel copies each run of checked blocks
        (`exporting`): the bytes are checked in a buffer the thread reuses, never
        copied through Python. From any other handle (HDFS) they are streamed through
        that buffer."""
        copied = 0
        if self._block:  # checked bytes a read before left over
            left = self._block[: self._remaining]
            self._block = memoryview(b"")
            copied += write_all(target, left)
            self._advance(len(left))
        source = self._handle.fileno() if isinstance(self._handle, io.FileIO) else None
        while self._remaining > 0:
            if source is None:
                copied += write_all(target, self._next_bytes(min(self._remaining, MAX_READ)))
                continue
            start = self._position
            checked = None
            if self._blocks is None:  # format 0: nothing to check
                count = min(self._remaining, MAX_READ)
            else:
                checked = self._read_blocks(self._remaining, partial(read_at, source))
                count = min(len(checked), self._remaining)
            done, kernel = kernel_copy(source, target, start, count)
            if not kernel:
                if checked is None:
                    checked = read_at(source, start + done, count - done)
                    if len(checked) < count - done:
                        self._advance(done + len(checked))
                        raise self._ended()
                    write_all(target, checked)
                else:
                    write_all(target, checked[done:count])
                done = count
                source = None  # and so for the rest of the claim
                self._handle.seek(start + count)
                self._handle_at = start + count
            self._advance(done)
            copied += done
            if done < count:
                raise self._ended()
        return copied

    def _advance(self, count: int) -> None:
        self._remaining -= count
        self._position += count

    def _corrupted(self, start: int, end: int | None, why: str) -> ContentCorrupted:
        return corrupted(self._claim, self._where, self._path, start, end, why)

    def _ended(self) -> ContentTruncated:
        return ContentTruncated(
            f"{self._claim.resource.relative_path} ended {self._remaining} bytes before the end of the claim",
            claim=self._claim,
        )

    def close(self) -> None:
        if not self.closed:
            try:
                self._handle.close()
                if self._checksums is not None:
                    self._checksums.close()
            finally:
                super().close()


def as_bytes(data) -> bytes:
    """`data` as bytes, without a copy when it is a view of a whole bytes object (a
    read of whole blocks): copying a megabyte costs as much as checking its CRC."""
    if isinstance(data, memoryview) and isinstance(data.obj, bytes) and data.nbytes == len(data.obj):
        return data.obj
    return bytes(data)


def _read_exactly(handle, length: int) -> bytes:
    """`length` bytes from `handle`, fewer only at its end."""
    data = handle.read(length)
    if len(data) == length or not data:
        return data
    chunks = [data]
    left = length - len(data)
    while left > 0 and (chunk := handle.read(left)):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def corrupted(
    claim: ContentClaim, where: str, path: str | None, start: int, end: int | None, why: str
) -> ContentCorrupted:
    """The error for a claim whose bytes [start, end) on replica `where` cannot be verified."""
    span = f"bytes {start}..{end}" if end is not None else f"from byte {start}"
    return ContentCorrupted(
        f"{where}: claim {claim.resource.relative_path}@{claim.offset}+{claim.length} is damaged on this "
        f"replica ({span}: {why}); nothing unverified was returned. Read it from another replica, "
        "or repair this one with `custody content fsck --repair`",
        claim=claim,
        path=path,
        ranges=((where, start, end, why),),
    )


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
                claim=claim,
            )
        wanted = claim.length - offset if length is None else min(length, claim.length - offset)
        open_resource = table.open.get(claim.resource)
        if open_resource is not None and (open_resource.pending or open_resource.checksum_pending):
            # Read your writes: the claim's bytes may still wait in the resource's buffer.
            with open_resource.io_lock:
                try:
                    open_resource.flush_pending()
                except StorageError as error:
                    table.fail(open_resource, error)
                    raise translate_storage_error(error, claim=claim) from error
        end = claim.offset + claim.length
        handle, size, archived = self._open(claim.resource, claim)
        if size < end:
            handle.close()
            # A dead writer may have left the file open, its last block unfinished and
            # unreadable: an IO that may recover its lease does, and the file is read again.
            if not self._finish_abandoned(claim.resource, claim):
                raise self._truncated(claim, size)
            handle, size, archived = self._open(claim.resource, claim)
            if size < end:
                handle.close()
                raise self._truncated(claim, size)
        start = claim.offset + offset
        if wanted <= 0:
            return ClaimReader(handle, start, 0, claim)
        try:
            checksums = self._checksums_covering(claim, archived, start + wanted)
            if checksums is None:
                return ClaimReader(handle, start, wanted, claim)
            blocks = checksums.covering(start, start + wanted)
            try:
                first = next(blocks)  # a claim whose checksums are missing fails here, not mid-stream
            except ChecksumFormatError as error:
                checksums.close()
                raise self._corrupted(claim, start, None, error.reason) from None
        except BaseException:
            handle.close()
            raise
        return ClaimReader(
            handle,
            start,
            wanted,
            claim,
            blocks=itertools.chain((first,), blocks),
            checksums=checksums,
            where=table.name,
            path=self._path(claim.resource, archived),
        )

    def _checksums_covering(self, claim: ContentClaim, archived: bool, stop: int) -> ChecksumRecords | None:
        """The records of the claim's checksum file, which reach at least to `stop`;
        None for a resource of format 0, which has none."""
        resource = claim.resource
        if not must_have_checksums(resource):
            return None
        problem = ""
        for attempt in (1, 2):
            try:
                handle, size, _archived = self._open(resource, claim, checksums=True, archived_first=archived)
            except ContentNotFound:
                problem = "its checksum file is missing"
            else:
                try:
                    records = ChecksumRecords(handle, size)
                except ChecksumFormatError as error:
                    handle.close()
                    problem = f"its checksum file is damaged at byte {error.offset}: {error.reason}"
                else:
                    last = records.last_end()
                    if records.count and (last is None or last >= stop):
                        return records
                    records.close()
                    problem = (
                        f"its checksum records end at byte {last or 0}, before byte {stop}"
                        if records.count
                        else "its checksum file holds no record"
                    )
            # A dead writer may have left the checksum file open too (see open_read).
            if attempt == 1 and not self._finish_abandoned(resource, claim):
                break
        raise self._corrupted(claim, claim.offset, None, problem)

    def _corrupted(self, claim: ContentClaim, start: int, end: int | None, why: str) -> ContentCorrupted:
        return corrupted(claim, self._table.name, self._path(claim.resource, False), start, end, why)

    def _path(self, resource: ResourceClaim, archived: bool) -> str | None:
        root = self._roots.get(resource.container)
        if root is None:
            return None
        return archive_path(root, resource) if archived else resource_path(root, resource)

    def _truncated(self, claim: ContentClaim, size: int) -> ContentTruncated:
        return ContentTruncated(
            f"{self._table.name}: {claim.resource.relative_path} holds {size} readable bytes but the claim "
            f"ends at {claim.offset + claim.length}: it was never completed or was damaged",
            claim=claim,
        )

    def open_resource(self, resource: ResourceClaim, claim=None, *, checksums: bool = False):
        """(binary handle, readable size) of a whole resource file (or its checksum
        file), live or archived."""
        handle, size, _archived = self._open(resource, claim, checksums=checksums)
        return handle, size

    def _open(
        self, resource: ResourceClaim, claim=None, *, checksums: bool = False, archived_first: bool | None = None
    ):
        """(handle, readable size, archived) of the resource file (or its checksum file)."""
        root = self._roots.get(resource.container)
        if root is None:
            raise ContentNotFound(f"{self._table.name} has no container {resource.container!r}", claim=claim)
        if self._table.closing and not self._table.wait_closed(resource, CLOSE_WAIT_S):
            raise ContentUnavailable(
                f"{self._table.name}: {resource.relative_path} is still being closed after {CLOSE_WAIT_S:.0f}s "
                "(is the storage reachable?); retry the read",
                claim=claim,
            )
        if archived_first is None:
            archived_first = resource in self._table.archived
        for archived in (archived_first, not archived_first):
            try:
                opener = self._io.open_checksums if checksums else self._io.open_read
                handle, size = opener(root, resource, archived)
                return handle, size, archived
            except StorageFileNotFound:
                continue
            except UnsafeContentPath:
                raise
            except StorageError as error:
                raise translate_storage_error(error, claim=claim) from error
        what = "checksum file" if checksums else "resource file"
        raise ContentNotFound(
            f"{self._table.name}: no {what} for {resource.relative_path} (destroyed, aged off or never written)",
            claim=claim,
        )

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

    def check_resource(self, resource: ResourceClaim) -> ResourceCheck:
        """Every checksum record of the resource checked against its bytes (fsck)."""
        handle, size, archived = self._open(resource)
        checksum_handle = None
        try:
            try:
                checksum_handle, checksum_size, _archived = self._open(
                    resource, checksums=True, archived_first=archived
                )
            except ContentNotFound:
                return check_resource(self._table.name, resource, archived, handle, size, None, 0)
            return check_resource(self._table.name, resource, archived, handle, size, checksum_handle, checksum_size)
        finally:
            handle.close()
            if checksum_handle is not None:
                checksum_handle.close()
