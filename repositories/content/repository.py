"""The content repository: resource claims appended in containers, claims read by slice.

One class serves local disk and HDFS; what differs is the `ResourceIO` it is given
(see `filesystem.py` and `replication/hdfs_content.py`).

Life of a claim:
  1. `write()` hands out a `ContentWriter` that owns one resource exclusively: a
     resource nobody is appending to and that is under the maximum appendable size,
     or a new one (containers taken round-robin). The claim's offset is the
     resource's length at that moment.
  2. The writer streams bytes straight into the resource file (buffered per writer,
     never the whole content). `close()` returns the `ContentClaim`, counts the
     writer as its first claimant, and - if `sync_on_close` - syncs the resource
     first, so a returned claim is durable. Otherwise `sync()` does it later for all
     claims at once (group commit: one fsync per resource per session commit).
  3. A claim nobody references (claimant count 0) in a resource nobody can append
     to any more is archived (or destroyed) by `collect()`; `age_off()` deletes
     archived resources by age and by usage.

Failure rules:
  * A failed write or sync retires its resource: it is closed and never appended to
    again, so bytes a failed writer left behind are never inside a later claim.
  * Completed claims whose bytes were not yet synced when their resource failed are
    reported by the next `sync()` as `ContentWriteFailed.lost`, and remembered: that
    `sync()` may be another session's (a sync covers every open resource), so before
    it commits, each session asks `check_durable(its claims)`, which raises
    `ContentWriteFailed` for a claim in a lost range. The sessions holding such
    claims roll back; no record ever points at bytes only one replica kept.
  * A write is refused up front (`ContentRepositoryFull`) while a container's usage
    is above the archive policy's maximum, after trying to age off the archive.

Lock plan: `_lock` guards `_open`, `_appendable`, `_zero`, `_archived`, `_failures`
and the round-robin state; it is never held across I/O. Each resource's `io_lock`
serialises the writer's appends with `sync()` of that resource (an HDFS writer is not
thread-safe). Claimant counts have their own lock (`ClaimantCounts`).
"""

from __future__ import annotations

import io
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from repositories.claims import ContentClaim, InvalidClaimError, ResourceClaim
from repositories.storage import (
    LeaseLost,
    StorageError,
    StorageFileNotFound,
    StorageFull,
    StorageUnavailable,
    WritableFile,
)

from .archive import ArchivedResource, ArchivePolicy, Usage, select_for_age_off
from .claimants import ClaimantCounts, counts_of, resource_of
from .errors import (
    ContentNotFound,
    ContentRepositoryError,
    ContentRepositoryFull,
    ContentStorageFull,
    ContentTruncated,
    ContentUnavailable,
    ContentWriteFailed,
    ReplicaDiverged,
    RepositoryClosed,
    UnsafeContentPath,
)
from .format import DEFAULT_MAX_APPENDABLE_CLAIM_SIZE, ResourceIdGenerator, section_of
from .resource_io import ResourceIO

log = logging.getLogger(__name__)

READ_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class ContentRepositoryConfig:
    max_appendable_claim_size: int = DEFAULT_MAX_APPENDABLE_CLAIM_SIZE
    # True: a claim returned by close() is durable. False: durable after sync().
    sync_on_close: bool = True
    # HDFS cannot read the last block of a file still open for writing, so there a
    # sync also closes every resource nobody is writing: a synced claim is readable.
    close_resources_on_sync: bool = False
    write_buffer_size: int = 256 * 1024
    archive: ArchivePolicy = field(default_factory=ArchivePolicy)
    usage_check_interval_seconds: float = 1.0


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    resource: ResourceClaim
    length: int
    archived: bool


@dataclass
class RecoveryReport:
    destroyed: list[ResourceClaim] = field(default_factory=list)
    truncated_bytes: int = 0
    missing: list[ResourceClaim] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)


@dataclass
class CollectReport:
    archived: list[ResourceClaim] = field(default_factory=list)
    destroyed: list[ResourceClaim] = field(default_factory=list)


class _Resource:
    __slots__ = ("claim", "root", "file", "length", "completed", "synced", "writing",
                 "retired", "failed", "io_lock", "pending")

    def __init__(self, claim: ResourceClaim, root: str, file: WritableFile):
        self.claim = claim
        self.root = root
        self.file = file
        self.length = 0      # bytes handed to the file
        self.completed = 0   # end of the last closed claim
        self.synced = 0      # bytes known durable
        self.writing = False
        self.retired = False
        self.failed = False
        self.io_lock = threading.Lock()
        # Bytes of completed, unsynced small claims not yet handed to the file: with
        # group commit, fifty 1 KB claims cost one write() instead of fifty. Flushed
        # before anything else touches the file (append, sync, read, close).
        self.pending = bytearray()

    def flush_pending(self) -> None:
        """Hand pending bytes to the file. Caller holds `io_lock`."""
        if self.pending:
            data, self.pending = self.pending, bytearray()
            self.file.write(data)


def translate_storage_error(error: StorageError, *, claim=None, path=None) -> ContentRepositoryError:
    where = path or error.path
    if isinstance(error, StorageFull):
        return ContentStorageFull(
            f"no space left writing content to {where}: the claim was abandoned, claims "
            "written before it are intact; free space (or let the archive age off) and retry",
            claim=claim, path=where)
    if isinstance(error, StorageUnavailable):
        return ContentUnavailable(
            f"content storage unavailable at {where}: {error}; the claim was abandoned, "
            "roll back and retry when it is back", claim=claim, path=where)
    if isinstance(error, LeaseLost):
        return ContentWriteFailed(f"lost the lease of {where}: {error}", claim=claim, path=where)
    return ContentWriteFailed(f"content write failed at {where}: {error}", claim=claim, path=where)


class ContentWriter:
    """Writes one content claim. Use as a context manager; an exception aborts it.

    Not thread-safe: one writer, one thread. After `close()`, `claim` holds the result.
    """

    def __init__(self, repository: "ContentRepository", resource: _Resource):
        self._repository = repository
        self._resource = resource
        self.offset = resource.length
        self._buffer = bytearray()
        self._buffer_size = repository.config.write_buffer_size
        self._written = 0
        self._open = True
        self.claim: ContentClaim | None = None

    @property
    def resource(self) -> ResourceClaim:
        return self._resource.claim

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if not self._open:
            raise ContentRepositoryError("write to a closed content writer", claim=self._resource.claim)
        size = len(data)
        if not self._buffer and size >= self._buffer_size:
            self._append(data)
        else:
            self._buffer += data
            if len(self._buffer) >= self._buffer_size:
                self._append(self._buffer)
                self._buffer = bytearray()
        self._written += size
        return size

    def write_from(self, stream, chunk_size: int = READ_CHUNK) -> int:
        """Stream everything from a binary file-like object into this claim."""
        total = 0
        while True:
            chunk = stream.read(chunk_size)
            if not chunk:
                return total
            total += self.write(chunk)

    def _append(self, data) -> None:
        resource = self._resource
        with resource.io_lock:
            try:
                resource.flush_pending()
                resource.file.write(data)
            except StorageError as error:
                self._open = False
                self._repository._fail(resource, error)
                raise translate_storage_error(error, claim=resource.claim) from error
            resource.length += len(data)

    def close(self, *, sync: bool | None = None, retire: bool = False) -> ContentClaim:
        if self.claim is not None:
            return self.claim
        if not self._open:
            raise ContentRepositoryError("close of an aborted content writer", claim=self._resource.claim)
        repository = self._repository
        if self._buffer:
            if (sync is False or (sync is None and not repository.config.sync_on_close)) and \
                    len(self._buffer) + len(self._resource.pending) < self._buffer_size:
                self._resource.pending += self._buffer
                self._resource.length += len(self._buffer)
            else:
                self._append(self._buffer)
            self._buffer = bytearray()
        self._open = False
        claim = ContentClaim(self._resource.claim, self.offset, self._written)
        self._repository._complete(self._resource, claim, sync, retire)
        self.claim = claim
        return claim

    def abort(self) -> None:
        """Abandon the claim: its bytes stay unreferenced in a retired resource."""
        if self._open:
            self._open = False
            self._buffer = bytearray()
            self._repository._release(self._resource, retire=True)

    def __enter__(self) -> "ContentWriter":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


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
            raise ContentTruncated(
                f"{self._claim.resource.relative_path} ended {self._remaining} bytes before "
                "the end of the claim", claim=self._claim)
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
                raise ContentTruncated(
                    f"{self._claim.resource.relative_path} ended {self._remaining} bytes "
                    "before the end of the claim", claim=self._claim)
            chunks.append(data)
            size -= len(data)
            self._remaining -= len(data)
        return b"".join(chunks) if len(chunks) != 1 else bytes(chunks[0])

    def close(self) -> None:
        if not self.closed:
            try:
                self._handle.close()
            finally:
                super().close()


class ContentRepository:
    """Resource claims in one or more containers over one `ResourceIO`."""

    def __init__(
        self,
        containers: Mapping[str, str],
        resource_io: ResourceIO,
        config: ContentRepositoryConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        usage_probe: Callable[[str], Usage | None] | None = None,
        name: str = "content",
        prepare: bool = True,
    ):
        if not containers:
            raise ContentRepositoryError("a content repository needs at least one container")
        for container in containers:
            ResourceClaim(container, 0, "probe")  # validates the container name
        self.name = name
        self.config = config or ContentRepositoryConfig()
        self.io = resource_io
        self._roots = dict(containers)
        self._names = list(containers)
        self._clock = clock
        self._usage_probe = usage_probe or resource_io.usage
        self._usage_cache: dict[str, tuple[float, Usage | None]] = {}
        self._ids = ResourceIdGenerator()
        self._claimants = ClaimantCounts()
        self._lock = threading.Lock()
        self._failure_logged = float("-inf")
        self._open: dict[ResourceClaim, _Resource] = {}
        self._appendable: deque[_Resource] = deque()
        self._zero: set[ResourceClaim] = set()
        self._archived: dict[ResourceClaim, tuple[float, int]] = {}
        self._failures: list[tuple[ResourceClaim, int, int, str]] = []
        # Lost byte ranges of failed resources, kept for the repository's life (a few
        # entries per outage): a claim in one must never be committed.
        self._lost: dict[ResourceClaim, list[tuple[int, int, str]]] = {}
        self._round_robin = 0
        self._sync_pool = None
        self._closed = False
        if prepare:
            for root in self._roots.values():
                resource_io.prepare_container(root)

    def __repr__(self) -> str:
        return f"ContentRepository({self.name!r}, {self._roots!r})"

    @property
    def containers(self) -> dict[str, str]:
        return dict(self._roots)

    # ------------------------------------------------------------------ writing

    def write(self) -> ContentWriter:
        self._check_open()
        with self._lock:
            resource = self._appendable.popleft() if self._appendable else None
            if resource is not None:
                resource.writing = True
        if resource is None:
            resource = self._new_resource(None)
        return ContentWriter(self, resource)

    def write_at(self, resource_claim: ResourceClaim, offset: int) -> ContentWriter:
        """A writer for a given resource at a given offset: how a follower replica
        mirrors its leader. Raises `ReplicaDiverged` if this replica is elsewhere."""
        self._check_open()
        with self._lock:
            resource = self._open.get(resource_claim)
            if resource is not None:
                if resource.writing or resource.retired or resource.length != offset:
                    raise ReplicaDiverged(
                        f"replica {self.name} holds {resource_claim.relative_path} at length "
                        f"{resource.length} (writing={resource.writing}, retired={resource.retired}), "
                        f"leader writes at {offset}", claim=resource_claim)
                resource.writing = True
                try:
                    self._appendable.remove(resource)
                except ValueError:
                    pass
        if resource is None:
            if offset != 0:
                raise ReplicaDiverged(
                    f"replica {self.name} has no open {resource_claim.relative_path}; leader "
                    f"writes at offset {offset}", claim=resource_claim)
            resource = self._new_resource(resource_claim)
        return ContentWriter(self, resource)

    def write_bytes(self, data: bytes, *, sync: bool | None = None) -> ContentClaim:
        writer = self.write()
        try:
            writer.write(data)
        except BaseException:
            writer.abort()
            raise
        return writer.close(sync=sync)

    def copy(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> ContentClaim:
        """Copy-on-write helper: a new claim holding a slice of an existing one."""
        with self.open_read(claim, offset, length) as source, self.write() as writer:
            writer.write_from(source)
        return writer.claim

    def _new_resource(self, wanted: ResourceClaim | None) -> _Resource:
        if wanted is None:
            with self._lock:
                container = self._names[self._round_robin % len(self._names)]
                self._round_robin += 1
                sequence, resource_id = self._ids.next()
            claim = ResourceClaim(container, section_of(sequence // len(self._names)), resource_id)
        else:
            if wanted.container not in self._roots:
                raise ContentRepositoryError(
                    f"replica {self.name} has no container {wanted.container!r}", claim=wanted)
            claim = wanted
        root = self._roots[claim.container]
        self._check_capacity(claim.container)
        try:
            self.io.ensure_section(root, claim.section)
            handle = self.io.create(root, claim)
        except StorageError as error:
            raise translate_storage_error(error, claim=claim) from error
        resource = _Resource(claim, root, handle)
        resource.writing = True
        with self._lock:
            self._open[claim] = resource
        return resource

    def _complete(self, resource: _Resource, claim: ContentClaim, sync: bool | None, retire: bool) -> None:
        if self.config.sync_on_close if sync is None else sync:
            # A synced claim must be readable: where that needs a closed file, close it.
            retire = retire or self.config.close_resources_on_sync
            with resource.io_lock:
                try:
                    resource.flush_pending()
                    resource.file.sync()
                except StorageError as error:
                    self._fail(resource, error)
                    raise translate_storage_error(error, claim=claim) from error
                resource.synced = resource.length
        resource.completed = claim.offset + claim.length
        # The writer is the first claimant; counted before release, so a full resource
        # is never collected between its release and the caller's bookkeeping.
        self._claimants.increment(claim.resource)
        self._release(resource, retire=retire)

    def _release(self, resource: _Resource, *, retire: bool) -> None:
        to_close = None
        with self._lock:
            resource.writing = False
            if (retire or resource.failed or self._closed
                    or resource.length >= self.config.max_appendable_claim_size):
                to_close = self._retire_locked(resource)
            else:
                self._appendable.append(resource)
        if to_close is not None:
            self._close_file(to_close)

    def _retire_locked(self, resource: _Resource) -> _Resource | None:
        """Mark retired; returns the resource if its file can be closed now (nothing
        completed is waiting for a sync), else it stays open until `sync()`."""
        resource.retired = True
        if self._claimants.get(resource.claim) == 0:
            self._zero.add(resource.claim)
        if resource.failed or resource.synced >= resource.completed:
            self._open.pop(resource.claim, None)
            return resource
        return None

    def _close_file(self, resource: _Resource) -> None:
        with resource.io_lock:
            try:
                resource.flush_pending()
                resource.file.close()
            except StorageError as error:
                if not resource.failed and resource.synced < resource.completed:
                    self._fail(resource, error)
                else:
                    self._log_failure("closing %s failed after its claims were synced: %s",
                                      resource.claim.relative_path, error)

    def _fail(self, resource: _Resource, error: StorageError) -> None:
        """A write or sync of this resource failed: retire it, remember lost claims."""
        with self._lock:
            if resource.failed:
                return
            resource.failed = True
            resource.retired = True
            self._open.pop(resource.claim, None)
            try:
                self._appendable.remove(resource)
            except ValueError:
                pass
            if resource.completed > resource.synced:
                self._failures.append((resource.claim, resource.synced, resource.completed, str(error)))
                self._lost.setdefault(resource.claim, []).append((resource.synced, resource.completed, str(error)))
            if self._claimants.get(resource.claim) == 0:
                self._zero.add(resource.claim)
        try:
            resource.file.close()
        except (StorageError, OSError):
            pass  # the file already failed; its unsynced bytes are gone either way
        self._log_failure("content resource %s failed and was retired: %s", resource.claim.relative_path, error)

    def _log_failure(self, message: str, *args) -> None:
        # An outage fails every resource in turn: one warning a minute, the rest at debug.
        now = time.monotonic()
        level = logging.WARNING if now - self._failure_logged >= 60.0 else logging.DEBUG
        if level == logging.WARNING:
            self._failure_logged = now
        log.log(level, message, *args)

    def sync(self, *, retire: bool | None = None) -> None:
        """Make every claim closed so far durable (and, with `retire`, close every
        resource nobody is writing). Raises `ContentWriteFailed` listing any completed
        claim range whose bytes were lost since the last sync."""
        retire = self.config.close_resources_on_sync if retire is None else retire
        with self._lock:
            targets = [r for r in self._open.values()
                       if r.length > r.synced or r.retired or (retire and not r.writing)]
        first_error: StorageError | None = None
        outcomes = self._sync_all(targets)
        for resource, failure in zip(targets, outcomes):
            if failure is not None:
                first_error = first_error or failure
                self._fail(resource, failure)
                continue
            to_close = None
            with self._lock:
                if not resource.writing and (resource.retired or retire) and not resource.failed:
                    if resource in self._appendable:
                        self._appendable.remove(resource)
                    to_close = self._retire_locked(resource)
            if to_close is not None:
                self._close_file(to_close)
        with self._lock:
            failures, self._failures = self._failures, []
        if failures:
            lost = tuple((claim, start, end) for claim, start, end, _ in failures)
            detail = "; ".join(f"{claim.relative_path} bytes {start}..{end}: {why}"
                               for claim, start, end, why in failures)
            error = ContentWriteFailed(
                f"content written since the last sync was lost ({detail}); the sessions "
                "holding claims in those ranges must roll back", lost=lost)
            if first_error is not None:
                raise translate_storage_error(first_error) from error
            raise error

    def check_durable(self, claims: Iterable[ContentClaim]) -> None:
        """Raise `ContentWriteFailed` if any of `claims` has bytes in a range a failed
        write or sync lost (see "Failure rules"). Call it after `sync()`, before the
        commit point, with the claims the commit's records point at."""
        with self._lock:
            if not self._lost:
                return
            hits = [(claim, start, end, why) for claim in claims
                    for start, end, why in self._lost.get(claim.resource, ())
                    if claim.offset < end and claim.offset + claim.length > start]
        if hits:
            detail = "; ".join(f"{claim.resource.relative_path}@{claim.offset}+{claim.length} in lost bytes "
                               f"{start}..{end} ({why})" for claim, start, end, why in hits[:3])
            raise ContentWriteFailed(
                f"{len(hits)} claims of this session point at content a failed write lost: {detail}; "
                "the session must roll back", lost=tuple((claim.resource, start, end) for claim, start, end, _ in hits))

    def _sync_all(self, targets: list[_Resource]) -> list[StorageError | None]:
        """fdatasync/hsync every target, in parallel (the journal of a local file
        system commits concurrent fsyncs together; HDFS pipelines run side by side),
        then fsync each new file's directory once, not once per file."""
        if len(targets) > 1:
            if self._sync_pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._sync_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix=f"{self.name}-sync")
            results = list(self._sync_pool.map(self._sync_data, targets))
        else:
            results = [self._sync_data(resource) for resource in targets]
        outcomes: list[StorageError | None] = []
        directories: dict[str, StorageError | None] = {}
        for resource, (end, error) in zip(targets, results):
            if error is None and end is not None:
                directory = resource.file.unsynced_directory()
                if directory is not None:
                    if directory not in directories:
                        try:
                            self.io.storage.sync_directory(directory)
                            directories[directory] = None
                        except StorageError as failure:
                            directories[directory] = failure
                    error = directories[directory]
                    if error is None:
                        resource.file.directory_synced()
                if error is None:
                    with resource.io_lock:
                        resource.synced = max(resource.synced, end)
            outcomes.append(error)
        return outcomes

    @staticmethod
    def _sync_data(resource: _Resource) -> tuple[int | None, StorageError | None]:
        with resource.io_lock:
            if resource.failed or resource.length <= resource.synced:
                return None, None
            end = resource.length
            try:
                resource.flush_pending()
                resource.file.sync_data()
            except StorageError as error:
                return None, error
            return end, None

    def retire(self, resource_claim: ResourceClaim) -> None:
        """Stop appending to a resource (a replica peer failed on it): keeps replicas
        in lockstep. A resource being written is retired when its writer finishes."""
        to_close = None
        with self._lock:
            resource = self._open.get(resource_claim)
            if resource is None or resource.writing:
                return
            try:
                self._appendable.remove(resource)
            except ValueError:
                pass
            to_close = self._retire_locked(resource)
        if to_close is not None:
            self._close_file(to_close)

    def open_resources(self) -> set[ResourceClaim]:
        """Resources this repository still holds open (being or to be appended to)."""
        with self._lock:
            return set(self._open)

    # ------------------------------------------------------------------ reading

    def open_read(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> ClaimReader:
        self._check_open()
        if not isinstance(claim, ContentClaim):
            raise InvalidClaimError(f"not a content claim: {claim!r}")
        if offset < 0 or offset > claim.length:
            raise ContentRepositoryError(
                f"offset {offset} outside claim {claim.resource.relative_path}@{claim.offset}+{claim.length}",
                claim=claim)
        wanted = claim.length - offset if length is None else min(length, claim.length - offset)
        open_resource = self._open.get(claim.resource)
        if open_resource is not None and open_resource.pending:
            # Read your writes: the claim's bytes may still wait in the resource's buffer.
            with open_resource.io_lock:
                try:
                    open_resource.flush_pending()
                except StorageError as error:
                    self._fail(open_resource, error)
                    raise translate_storage_error(error, claim=claim) from error
        end = claim.offset + claim.length
        handle, size = self._open_resource(claim.resource, claim)
        if size < end:
            handle.close()
            # A dead writer may have left the file open, its last block unfinished and
            # unreadable: an IO that may recover its lease does, and the file is read again.
            if not self._finish_abandoned(claim.resource, claim):
                raise self._truncated(claim, size)
            handle, size = self._open_resource(claim.resource, claim)
            if size < end:
                handle.close()
                raise self._truncated(claim, size)
        return ClaimReader(handle, claim.offset + offset, wanted, claim)

    def _truncated(self, claim: ContentClaim, size: int) -> ContentTruncated:
        return ContentTruncated(
            f"{self.name}: {claim.resource.relative_path} holds {size} readable bytes but the claim "
            f"ends at {claim.offset + claim.length}: it was never completed or was damaged", claim=claim)

    def read(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> bytes:
        with self.open_read(claim, offset, length) as reader:
            return reader.read()

    def _open_resource(self, resource: ResourceClaim, claim=None):
        root = self._roots.get(resource.container)
        if root is None:
            raise ContentNotFound(f"{self.name} has no container {resource.container!r}", claim=claim)
        archived_first = resource in self._archived
        for archived in (archived_first, not archived_first):
            try:
                return self.io.open_read(root, resource, archived)
            except StorageFileNotFound:
                continue
            except UnsafeContentPath:
                raise
            except StorageError as error:
                raise translate_storage_error(error, claim=claim) from error
        raise ContentNotFound(
            f"{self.name}: no resource file for {resource.relative_path} (destroyed, aged off "
            "or never written)", claim=claim)

    def _finish_abandoned(self, resource: ResourceClaim, claim: ContentClaim) -> bool:
        root = self._roots.get(resource.container)
        try:
            return root is not None and self.io.finish_abandoned(root, resource)
        except StorageError as error:
            raise translate_storage_error(error, claim=claim) from error

    def open_resource(self, resource: ResourceClaim):
        """(binary handle, size) of a whole resource file, live or archived: for fsck."""
        return self._open_resource(resource)

    def install_resource(self, resource: ResourceClaim, source, *, archived: bool = False) -> int:
        """Write a whole resource file from `source` (fsck repair): to a temporary
        name in the container root, synced, then renamed over the target."""
        from repositories.storage.protocol import join

        from .format import archive_directory, archive_path, resource_path

        root = self._roots[resource.container]
        storage = self.io.storage
        temporary = join(root, f".fsck-{resource.id}")
        self.io.ensure_section(root, resource.section)
        if archived:
            storage.mkdir(archive_directory(root, resource.section), exist_ok=True)
        target = archive_path(root, resource) if archived else resource_path(root, resource)
        total = 0
        try:
            with storage.create(temporary, overwrite=True) as handle:
                while chunk := source.read(READ_CHUNK):
                    handle.write(chunk)
                    total += len(chunk)
                handle.sync()
            storage.rename(temporary, target, overwrite=True)
        except StorageError as error:
            raise translate_storage_error(error, claim=resource, path=target) from error
        if archived:
            with self._lock:
                self._archived.setdefault(resource, (self._clock(), total))
        return total

    def exists(self, claim: ContentClaim | ResourceClaim) -> bool:
        try:
            handle, _size = self._open_resource(resource_of(claim))
        except ContentNotFound:
            return False
        handle.close()
        return True

    # ------------------------------------------------------------------ claimants

    def increment(self, claim: ContentClaim | ResourceClaim) -> int:
        resource = resource_of(claim)
        count = self._claimants.increment(resource)
        with self._lock:
            self._zero.discard(resource)
        return count

    def decrement(self, claim: ContentClaim | ResourceClaim) -> int:
        resource = resource_of(claim)
        count = self._claimants.decrement(resource)
        if count == 0:
            with self._lock:
                self._zero.add(resource)
        return count

    def claimant_count(self, claim: ContentClaim | ResourceClaim) -> int:
        return self._claimants.get(resource_of(claim))

    def set_claimant_counts(self, counts: Mapping[ResourceClaim, int]) -> None:
        self._claimants.set_counts(counts)

    # ------------------------------------------------------------------ recovery

    def recover(self, live_claims: Iterable[ContentClaim]) -> RecoveryReport:
        """Restart: set claimant counts from the FlowFile repository's live claims, then
        clean up what no live claim references - orphaned write claims of the previous
        run are destroyed (not archived: nothing ever committed them), and bytes past
        the last live claim of a resource are cut off where the storage can truncate."""
        live = list(live_claims)
        counts = counts_of(live)
        ends: dict[ResourceClaim, int] = {}
        for claim in live:
            ends[claim.resource] = max(ends.get(claim.resource, 0), claim.offset + claim.length)
        report = RecoveryReport()
        self._claimants.set_counts(counts)
        seen: set[ResourceClaim] = set()
        with self._lock:
            in_use = set(self._open)
        for container, root in self._roots.items():
            for found in self.io.scan(root):
                if found.unsafe:
                    report.unsafe.append(f"{root}/{found.section}/{found.name}")
                    continue
                try:
                    resource = ResourceClaim(container, found.section, found.name)
                except InvalidClaimError:
                    report.unsafe.append(f"{root}/{found.section}/{found.name}")
                    continue
                if resource in in_use:
                    continue
                if found.archived:
                    with self._lock:
                        self._archived.setdefault(resource, (found.modified, found.size))
                    seen.add(resource)
                    continue
                if resource not in counts:
                    self.io.delete(root, resource, False)
                    report.destroyed.append(resource)
                    continue
                seen.add(resource)
                end = ends[resource]
                if found.size > end and self.io.can_truncate:
                    self.io.truncate(root, resource, end)
                    report.truncated_bytes += found.size - end
        report.missing = sorted((r for r in counts if r not in seen), key=lambda r: r.relative_path)
        if report.destroyed or report.truncated_bytes or report.missing:
            log.info("%s recovered: %d orphaned resources destroyed, %d orphaned bytes cut, "
                     "%d referenced resources missing", self.name, len(report.destroyed),
                     report.truncated_bytes, len(report.missing))
        return report

    def list_resources(self) -> dict[ResourceClaim, ResourceInfo]:
        """Every resource file present (live and archived), by scanning the containers."""
        out: dict[ResourceClaim, ResourceInfo] = {}
        for container, root in self._roots.items():
            for found in self.io.scan(root):
                if found.unsafe:
                    continue
                try:
                    resource = ResourceClaim(container, found.section, found.name)
                except InvalidClaimError:
                    continue
                out[resource] = ResourceInfo(resource, found.size, found.archived)
        return out

    # ------------------------------------------------------------------ archive

    def collect(self) -> CollectReport:
        """Archive (or destroy) every resource that nobody references and nobody can
        append to any more."""
        report = CollectReport()
        with self._lock:
            ready = [r for r in self._zero if r not in self._open and self._claimants.get(r) == 0]
            self._zero.difference_update(ready)
        for resource in ready:
            root = self._roots[resource.container]
            try:
                if self.config.archive.enabled:
                    size = self._size_of(root, resource)
                    self.io.archive(root, resource)
                    with self._lock:
                        self._archived[resource] = (self._clock(), size)
                    report.archived.append(resource)
                else:
                    self.io.delete(root, resource, False)
                    report.destroyed.append(resource)
            except StorageFileNotFound:
                report.destroyed.append(resource)  # already gone (e.g. failed before create)
            except StorageError as error:
                with self._lock:
                    self._zero.add(resource)  # try again next time
                log.warning("%s: could not archive %s: %s", self.name, resource.relative_path, error)
        return report

    def _size_of(self, root: str, resource: ResourceClaim) -> int:
        handle, size = self.io.open_read(root, resource, False)
        handle.close()
        return size

    def age_off(self, container: str | None = None) -> list[ResourceClaim]:
        """Delete archived resources past retention, and oldest-first while a
        container's usage is above the maximum."""
        deleted: list[ResourceClaim] = []
        policy = self.config.archive
        now = self._clock()
        for name in [container] if container else self._names:
            root = self._roots[name]
            with self._lock:
                entries = [ArchivedResource(r, at, size) for r, (at, size) in self._archived.items()
                           if r.container == name]
            usage = self._measure(name, fresh=True) if policy.max_usage is not None else None
            for entry in select_for_age_off(entries, now, policy, usage):
                resource = entry.key
                try:
                    self.io.delete(root, resource, True)
                except StorageError as error:
                    log.warning("%s: could not age off %s: %s", self.name, resource.relative_path, error)
                    continue
                with self._lock:
                    self._archived.pop(resource, None)
                deleted.append(resource)
        return deleted

    def archived(self) -> dict[ResourceClaim, float]:
        with self._lock:
            return {resource: at for resource, (at, _size) in self._archived.items()}

    def _measure(self, container: str, *, fresh: bool = False) -> Usage | None:
        now = self._clock()
        cached = self._usage_cache.get(container)
        if not fresh and cached and now - cached[0] < self.config.usage_check_interval_seconds:
            return cached[1]
        usage = self._usage_probe(self._roots[container])
        self._usage_cache[container] = (now, usage)
        return usage

    def _check_capacity(self, container: str) -> None:
        limit = self.config.archive.max_usage
        if limit is None:
            return
        usage = self._measure(container)
        if usage is None or usage.fraction <= limit:
            return
        self.age_off(container)
        usage = self._measure(container, fresh=True)
        if usage is not None and usage.fraction > limit:
            raise ContentRepositoryFull(
                f"content container {container!r} ({self._roots[container]}) is "
                f"{usage.fraction:.1%} full, above the maximum of {limit:.0%}, and the archive "
                "holds nothing more to age off: writes are refused until space is freed",
                path=self._roots[container])

    # ------------------------------------------------------------------ lifecycle

    def _check_open(self) -> None:
        if self._closed:
            raise RepositoryClosed(f"content repository {self.name} is closed")

    def close(self) -> None:
        """Sync what was written and close every resource file."""
        if self._closed:
            return
        try:
            self.sync(retire=True)
        finally:
            with self._lock:
                self._closed = True
                leftovers = list(self._open.values())
                self._open.clear()
                self._appendable.clear()
            for resource in leftovers:
                try:
                    resource.file.close()
                except (StorageError, OSError):
                    pass
            self.io.close()
            if self._sync_pool is not None:
                self._sync_pool.shutdown(wait=True)

    def __enter__(self) -> "ContentRepository":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
