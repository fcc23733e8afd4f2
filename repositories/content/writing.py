"""Writing claims: `ContentWriter`, and the allocation of the resources writers append to.

`ResourceAllocator.write()` hands a writer one resource exclusively: one nobody is
appending to and that is under the maximum appendable size (`write_appendable`, which
touches no storage), or a new one (`write_new`; containers taken round-robin). The
claim's offset is the resource's length at that moment. `write_at` gives a follower
replica the very resource and offset its leader wrote.

The writer streams bytes into the resource file (buffered per writer, never the whole
content), and their checksum records, one per block as each fills up, into the
resource's checksum file (`checksums.BlockChecksummer`). `close()` completes the
claim, counts the writer as its first claimant and, if the claim is to be synced
now, syncs the resource (both files) first; then the resource goes
back to `appendable`, or is retired when it is full or was retired while the writer
held it (`retire`). A failed append or sync retires its resource (`ResourceTable.fail`),
so bytes a failed writer left behind are never inside a later claim.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from repositories.claims import ContentClaim, ResourceClaim
from repositories.storage import StorageError

from .checksum_format import pack_header
from .checksums import BlockChecksummer
from .config import ContentRepositoryConfig
from .errors import ContentRepositoryError, ContentWriteFailed, ReplicaDiverged, translate_storage_error
from .format import ResourceIdGenerator, section_of
from .resource_io import ResourceIO
from .resources import OpenResource, ResourceTable
from .store import ClaimWriter

# A writer hands checksum records to the checksum file once this many bytes of them
# wait (every 13 MB of a large claim), so a 10 GB claim's records never pile up.
CHECKSUM_RECORDS_BUFFERED = 4096


def is_full(config: ContentRepositoryConfig, length: int, last_claim_length: int) -> bool:
    """Whether a resource of `length` bytes, whose last claim is `last_claim_length`
    bytes long, takes no more claims. Small claims share a resource until it holds
    `shared_resource_size` (by default `max_appendable_claim_size`); a large claim (at
    least `max_appendable_claim_size` long) fills it alone, or, with
    `packed_resource_size`, shares it with the large claims before and after it until
    it holds that much (the first small claim after them fills it, unless the resource
    is still under `shared_resource_size`). Replicas decide alike: they hold the same
    bytes and the same claims."""
    appendable = config.max_appendable_claim_size
    if last_claim_length < appendable:
        return length >= (config.shared_resource_size or appendable)
    packed = config.packed_resource_size
    return packed is None or length >= packed


class ContentWriter(ClaimWriter):
    """Writes one content claim. Use as a context manager; an exception aborts it.

    Not thread-safe: one writer, one thread. After `close()`, `claim` holds the result.
    """

    def __init__(self, allocator: ResourceAllocator, resource: OpenResource):
        self._allocator = allocator
        self._resource = resource
        self.offset = resource.length
        self._buffer = bytearray()
        self._buffer_size = allocator.config.write_buffer_size
        self._checksums = BlockChecksummer(self.offset, allocator.config.checksum_block_size)
        self._written = 0
        self._open = True
        self.claim: ContentClaim | None = None
        # Set when this writer let go of its resource: whether that retired it (full,
        # failed, retired meanwhile or asked to), so that replicas follow their leader.
        self.retired_resource: bool | None = None

    @property
    def resource(self) -> ResourceClaim:
        return self._resource.claim

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if not self._open:
            raise ContentRepositoryError("write to a closed content writer", claim=self._resource.claim)
        size = len(data)
        self._checksums.update(data)
        if not self._buffer and size >= self._buffer_size:
            self._append(data)
        else:
            self._buffer += data
            if len(self._buffer) >= self._buffer_size:
                self._append(self._buffer)
                self._buffer = bytearray()
        self._written += size
        return size

    def _append(self, data) -> None:
        resource = self._resource
        with resource.io_lock:
            self._refuse_failed()
            try:
                resource.write_through(data)
                resource.checksum_pending += self._checksums.take()
                if len(resource.checksum_pending) >= CHECKSUM_RECORDS_BUFFERED:
                    resource.flush_pending()
            except StorageError as error:
                self._open = False
                self._allocator.table.fail(resource, error)
                raise translate_storage_error(error, claim=resource.claim) from error
            resource.length += len(data)

    def close(self, *, sync: bool | None = None, retire: bool = False) -> ContentClaim:
        """`retire`: append nothing more to this claim's resource (replicas in lockstep)."""
        if self.claim is not None:
            return self.claim
        claim = self._complete_claim(sync)
        self.retired_resource = self._allocator.complete(self._resource, claim, sync, retire)
        self.claim = claim
        return claim

    def next_claim(self) -> ContentClaim:
        """Complete the claim written so far (not synced: the commit syncs), as `close`
        does, and keep the resource for the next claim, which starts where this one
        ends: how `ContentRepository.write_many` writes many small claims without
        taking and releasing a resource for each."""
        claim = self._complete_claim(False)
        self._allocator.complete_claim(self._resource, claim)
        self.offset = self._resource.length
        self._checksums = BlockChecksummer(self.offset, self._allocator.config.checksum_block_size)
        self._written = 0
        self._open = True
        return claim

    @property
    def resource_age(self) -> float:
        """Seconds since the resource's files were created."""
        return time.monotonic() - self._resource.opened

    @property
    def resource_full(self) -> bool:
        """The resource holds as much as a resource should, or was retired meanwhile:
        the next claim goes elsewhere."""
        resource = self._resource
        return resource.retired or is_full(self._allocator.config, resource.length, resource.last_claim_length)

    def _complete_claim(self, sync: bool | None) -> ContentClaim:
        """Hand the claim's last bytes and checksum records to its resource; the claim."""
        if not self._open:
            raise ContentRepositoryError("close of an aborted content writer", claim=self._resource.claim)
        self._checksums.finish()
        if self._buffer:
            if (sync is False or (sync is None and not self._allocator.config.sync_on_close)) and len(
                self._buffer
            ) + len(self._resource.pending) < self._buffer_size:
                resource = self._resource
                with resource.io_lock:  # a concurrent sync flushes both pending buffers
                    self._refuse_failed()
                    resource.pending += self._buffer
                    resource.checksum_pending += self._checksums.take()
                    resource.length += len(self._buffer)
            else:
                self._append(self._buffer)
            self._buffer = bytearray()
        elif self._checksums.ready:
            with self._resource.io_lock:
                self._refuse_failed()
                self._resource.checksum_pending += self._checksums.take()
        self._open = False
        return ContentClaim(self._resource.claim, self.offset, self._written)

    def _refuse_failed(self) -> None:
        """Under the resource's `io_lock`: raise if the resource failed while this writer
        was writing (a sync of it failed, perhaps while this writer waited for the lock).
        Its file is closed and the loss was counted up to the claims completed then; a
        claim completed now would look durable while its bytes are nowhere but in
        memory (a replica that never holds it). Caller holds `io_lock`."""
        resource = self._resource
        if resource.failed:
            self._open = False
            raise ContentWriteFailed(
                f"{resource.claim.relative_path} failed while this claim was written to it (an earlier write or "
                "sync of it failed); the claim is abandoned and the session must roll back",
                claim=resource.claim,
                lost=((resource.claim, self.offset, self.offset + self._written),),
            )

    def release(self) -> None:
        """Give the resource back after `next_claim`, for other claims to follow."""
        if self._open:
            if self._written or self._buffer:
                raise ContentRepositoryError(
                    "release of a content writer with an unfinished claim (abort it)", claim=self._resource.claim
                )
            self._open = False
            self.retired_resource = self._allocator.release(self._resource, retire=False)

    def abort(self) -> None:
        """Abandon the claim: its bytes stay unreferenced in a retired resource."""
        if self._open:
            self._open = False
            self._buffer = bytearray()
            self.retired_resource = self._allocator.release(self._resource, retire=True)


class ResourceAllocator:
    """Which resource each writer appends to; when a resource is full, retired or failed."""

    def __init__(
        self,
        table: ResourceTable,
        roots: Mapping[str, str],
        resource_io: ResourceIO,
        config: ContentRepositoryConfig,
        check_capacity: Callable[[str], None],
    ):
        self.table = table
        self.config = config
        self._roots = roots
        self._names = list(roots)
        self._io = resource_io
        self._check_capacity = check_capacity
        self._ids = ResourceIdGenerator()
        self._round_robin = 0  # guarded by the table's lock, as are the ids

    def write(self) -> ContentWriter:
        return self.write_appendable() or self.write_new()

    def write_appendable(self) -> ContentWriter | None:
        """A writer of the appendable resource let go of last, or None if there is none.
        Touches no storage: a replicating owner chooses under a lock of its own with it.

        The last one, not the first: writers that take turns keep appending to the same
        one or two resources, so that a commit syncs those and one sync round covers
        several commits (`syncing`). Taken in turn, every open resource got claims of
        every commit, and each commit synced them all: on HDFS, 4 sessions committing
        every 100 claims of 1 KB made 2.6 hsyncs a commit instead of 1.6. Resources
        that writers pass over are retired by age (`retire_aged`) or by a retiring sync."""
        table = self.table
        table.check_open()
        with table.lock:
            resource = table.appendable.pop() if table.appendable else None
            if resource is None:
                return None
            resource.writing = True
        return ContentWriter(self, resource)

    def write_new(self) -> ContentWriter:
        """A writer of a new resource (its files created now)."""
        self.table.check_open()
        return ContentWriter(self, self._new_resource(None))

    def write_at(self, resource_claim: ResourceClaim, offset: int) -> ContentWriter:
        """A writer for a given resource at a given offset: how a follower replica
        mirrors its leader. Raises `ReplicaDiverged` if this replica is elsewhere."""
        table = self.table
        table.check_open()
        with table.lock:
            resource = table.open.get(resource_claim)
            if resource is not None:
                if resource.writing or resource.retired or resource.length != offset:
                    raise ReplicaDiverged(
                        f"replica {table.name} holds {resource_claim.relative_path} at length "
                        f"{resource.length} (writing={resource.writing}, retired={resource.retired}), "
                        f"leader writes at {offset}",
                        claim=resource_claim,
                    )
                resource.writing = True
                try:
                    table.appendable.remove(resource)
                except ValueError:
                    pass
        if resource is None:
            if offset != 0:
                raise ReplicaDiverged(
                    f"replica {table.name} has no open {resource_claim.relative_path}; leader "
                    f"writes at offset {offset}",
                    claim=resource_claim,
                )
            resource = self._new_resource(resource_claim)
        return ContentWriter(self, resource)

    def next_resource(self) -> ResourceClaim:
        """The name of a new resource: a fresh id, in the next container in turn."""
        with self.table.lock:
            container = self._names[self._round_robin % len(self._names)]
            self._round_robin += 1
            sequence, resource_id = self._ids.next()
        return ResourceClaim(container, section_of(sequence // len(self._names)), resource_id)

    def _new_resource(self, wanted: ResourceClaim | None) -> OpenResource:
        table = self.table
        if wanted is None:
            claim = self.next_resource()
        else:
            if wanted.container not in self._roots:
                raise ContentRepositoryError(
                    f"replica {table.name} has no container {wanted.container!r}", claim=wanted
                )
            claim = wanted
        root = self._roots[claim.container]
        self._check_capacity(claim.container)
        handles = []
        try:
            self._io.ensure_section(root, claim.section)
            handles.append(self._io.create(root, claim))
            handles.append(self._io.create_checksums(root, claim))
        except StorageError as error:
            for handle in handles:
                _close_quietly(handle)
            raise translate_storage_error(error, claim=claim) from error
        handle, checksum_handle = handles
        resource = OpenResource(claim, root, handle, checksum_handle)
        resource.checksum_pending += pack_header(self.config.checksum_block_size)  # written with the first records
        resource.writing = True
        with table.lock:
            table.open[claim] = resource
        return resource

    def complete(self, resource: OpenResource, claim: ContentClaim, sync: bool | None, retire: bool) -> bool:
        """Sync the claim if asked to, count its first claimant, and let go of the
        resource: whether that retired it (see `release`)."""
        if self.config.sync_on_close if sync is None else sync:
            # A synced claim must be readable: where that needs a closed file, close it.
            retire = retire or self.config.close_resources_on_sync
            with resource.io_lock:
                try:
                    resource.sync_files(self.table.companion_syncs)
                except StorageError as error:
                    self.table.fail(resource, error)
                    raise translate_storage_error(error, claim=claim) from error
                resource.synced = resource.length
        self.complete_claim(resource, claim)
        return self.release(resource, retire=retire)

    def complete_claim(self, resource: OpenResource, claim: ContentClaim) -> None:
        resource.completed = claim.offset + claim.length
        resource.last_claim_length = claim.length
        # The writer is the first claimant; counted before release, so a full resource
        # is never collected between its release and the caller's bookkeeping.
        self.table.claimants.increment(claim.resource)

    def release(self, resource: OpenResource, *, retire: bool) -> bool:
        """The writer is done with the resource: back to `appendable`, or retired (asked
        to, failed, full, or retired while the writer held it). Returns whether it was
        retired."""
        table = self.table
        to_close = None
        with table.lock:
            resource.writing = False
            retired = (
                retire
                or resource.retired
                or resource.failed
                or table.closed
                or is_full(self.config, resource.length, resource.last_claim_length)
            )
            if retired:
                to_close = table.retire_locked(resource)
            else:
                table.appendable.append(resource)
        if to_close is not None:
            table.close_file(to_close)
        return retired

    def retire(self, resource_claim: ResourceClaim, *, close: bool = True) -> bool:
        """Stop appending to a resource: no claim starts in it any more. A resource
        being written is retired when its writer lets go of it, and False is returned;
        otherwise (retired now, or not open here) True. Its files are closed now if
        every claim in it is synced, or by the next sync; with `close=False` always by
        the next sync (the caller may hold another resource's `io_lock`).

        How replicas stay in lockstep (`ReplicatingContentRepository`): what one retires,
        every other retires before a writer can choose the resource again."""
        table = self.table
        to_close = None
        with table.lock:
            resource = table.open.get(resource_claim)
            if resource is None:
                return True
            if resource.writing:
                resource.retired = True  # `release` retires it
                return False
            if close:
                to_close = table.stop_appending_locked(resource)
            else:
                table.retire_later_locked(resource)
        if to_close is not None:
            table.close_file(to_close)
        return True

    def retire_aged(self, max_age_s: float) -> list[ResourceClaim]:
        """Retire every resource nobody is writing whose files were created at least
        `max_age_s` ago (files closed by the next sync); the ones retired. How a leader
        replica retires the resources writers passed over, which no writer's
        `resource_age` check would ever see."""
        oldest = time.monotonic() - max_age_s
        return self._retire_waiting(lambda resource: resource.opened <= oldest)

    def retire_idle(self) -> list[ResourceClaim]:
        """Retire every resource nobody is writing (files closed by the next sync); the
        ones retired. How a leader replica decides what a retiring sync retires."""
        return self._retire_waiting(lambda resource: True)

    def _retire_waiting(self, which: Callable[[OpenResource], bool]) -> list[ResourceClaim]:
        table = self.table
        with table.lock:
            retired = [resource for resource in table.appendable if which(resource)]
            for resource in retired:
                table.retire_later_locked(resource)
        return [resource.claim for resource in retired]


def _close_quietly(handle) -> None:
    try:
        handle.close()
    except StorageError:
        pass  # the resource was never used: its files are orphans that recovery removes
