"""The content repository: resource claims appended in containers, claims read by slice.

One class serves local disk and HDFS; what differs is the `ResourceIO` it is given
(see `filesystem.py` and `replication/hdfs_content.py`). It conforms to `ContentStore`.

Life of a claim:
  1. `write()` hands out a `ContentWriter` that owns one resource exclusively; the
     claim's offset is the resource's length at that moment (`writing`).
  2. The writer streams bytes straight into the resource file, and a CRC per block
     into the resource's checksum file (`checksums`). `close()` returns the
     `ContentClaim`, counts the writer as its first claimant, and - if `sync_on_close`
     - syncs the resource first, so a returned claim is durable. Otherwise `sync()`
     does it later for all claims at once: group commit, one fsync per resource per
     session commit (`syncing`).
  3. A claim nobody references (claimant count 0) in a resource nobody can append to
     any more is archived (or destroyed) by `collect()`; `age_off()` deletes archived
     resources by age and by usage (`collection`).

Failure rules:
  * A failed write or sync retires its resource: it is closed and never appended to
    again, so bytes a failed writer left behind are never inside a later claim.
  * Completed claims whose bytes were not yet synced when their resource failed are
    reported by the next `sync()`, and refused by `check_durable` to every session
    that holds them (`syncing`).
  * A write is refused up front (`ContentRepositoryFull`) while a container's usage
    is above the archive policy's maximum, after trying to age off the archive.

This module composes one object per job, all over one `ResourceTable` (whose
docstring is the lock plan):
  `writing.ResourceAllocator`   writers and the resources they append to
  `syncing.ResourceSyncer`      group commit; `syncing.LostRanges`, what failures lost
  `reading.ResourceReader`      claims (checked block by block), whole resource files,
                                a dead writer's file; `verification`, a whole resource checked
  `recovery`                    restart: claimant counts, orphans destroyed or cut
  `collection.ResourceCollector` archive, age-off, the usage limit
  `repair`                      a replica's resource file rewritten by fsck
  `taking`                      a file written elsewhere (Spark's output) taken in whole
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from repositories.claims import ContentClaim, ResourceClaim
from repositories.storage import StorageError, abandon_file

from .archive import Usage
from .claimants import ClaimantCounts, resource_of
from .collection import CollectReport, ResourceCollector
from .config import ContentRepositoryConfig
from .errors import ContentRepositoryError
from .hooks import ContentHooks
from .reading import ClaimReader, ResourceReader
from .recovery import RecoveryReport, ResourceInfo, list_resources, recover
from .repair import install_resource
from .resource_io import ResourceIO
from .resources import ResourceTable
from .store import ContentStore
from .syncing import LostRanges, ResourceSyncer
from .taking import take_file
from .verification import ResourceCheck
from .writing import ContentWriter, ResourceAllocator


class ContentRepository(ContentStore):
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
        hooks: ContentHooks | None = None,
    ):
        if not containers:
            raise ContentRepositoryError("a content repository needs at least one container")
        for container in containers:
            ResourceClaim(container, 0, "probe")  # validates the container name
        self.name = name
        self.config = config = config or ContentRepositoryConfig()
        self._hooks = ContentHooks.coerce(hooks)
        self.io = resource_io
        self._roots = dict(containers)
        self._clock = clock
        self._lost = LostRanges()
        self._table = table = ResourceTable(
            name, ClaimantCounts(), self._lost.record, close_in_background=config.close_in_background
        )
        self._open = table.open  # by resource claim; a test reaches a resource's file through it
        self._collector = ResourceCollector(
            table, self._roots, resource_io, config, clock=clock, usage_probe=usage_probe or resource_io.usage
        )
        self._allocator = ResourceAllocator(table, self._roots, resource_io, config, self._collector.check_capacity)
        self._syncer = ResourceSyncer(
            table, self._lost, resource_io.storage, retire_by_default=config.close_resources_on_sync
        )
        self._reader = ResourceReader(table, self._roots, resource_io)
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
        return self._allocator.write()

    def write_appendable(self) -> ContentWriter | None:
        """A writer of a resource already open for appending, or None if there is none;
        touches no storage (see `ReplicatingContentRepository`, which leads with it)."""
        return self._allocator.write_appendable()

    def write_new(self) -> ContentWriter:
        """A writer of a new resource."""
        return self._allocator.write_new()

    def write_many(self, contents: Sequence[bytes]) -> list[ContentClaim]:
        """One claim for each of `contents`, in order, as if each were written by its own
        writer and closed unsynced (the commit syncs), but side by side in as few
        resources as their size allows, taking a resource once rather than per claim.
        If a write fails, the claims completed before it are released again (nothing
        references them) and the error is raised."""
        claims: list[ContentClaim] = []
        writer = None
        try:
            for data in contents:
                if writer is None:
                    writer = self._allocator.write()
                writer.write(data)
                claims.append(writer.next_claim())
                if writer.resource_full:
                    writer.release()
                    writer = None
        except BaseException:
            if writer is not None:
                writer.abort()
            for claim in claims:
                self.decrement(claim)
            raise
        if writer is not None:
            writer.release()
        return claims

    def write_at(self, resource_claim: ResourceClaim, offset: int) -> ContentWriter:
        """A writer for a given resource at a given offset: how a follower replica
        mirrors its leader. Raises `ReplicaDiverged` if this replica is elsewhere."""
        return self._allocator.write_at(resource_claim, offset)

    def copy(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> ContentClaim:
        """Copy-on-write helper: a new claim holding a slice of an existing one."""
        with self.open_read(claim, offset, length) as source, self.write() as writer:
            writer.write_from(source)
        return writer.claim

    def take_file(self, path: str, checksums: str) -> ContentClaim:
        """The claim of a whole file written outside the repository on its storage, with
        its checksum file, moved in as a new resource (`taking`): one claimant, the
        caller's, as `write()`'s claims have."""
        return take_file(self._table, self._allocator, self._roots, self.io, path, checksums)

    def retire(self, resource_claim: ResourceClaim, *, close: bool = True) -> bool:
        """Stop appending to a resource (a replica peer retired it): keeps replicas in
        lockstep. A resource being written is retired when its writer lets go of it,
        and False is returned; else True (see `ResourceAllocator.retire`, and `close`)."""
        return self._allocator.retire(resource_claim, close=close)

    def retire_aged(self, max_age_s: float) -> list[ResourceClaim]:
        """Retire every resource nobody is writing that was created at least `max_age_s`
        ago, their files closed by the next sync; returns them (a leader replica's
        decision, which its followers apply)."""
        return self._allocator.retire_aged(max_age_s)

    def retire_idle(self) -> list[ResourceClaim]:
        """Retire every resource nobody is writing, their files closed by the next
        sync; returns them (a leader replica's decision, which its followers apply)."""
        return self._allocator.retire_idle()

    def retired_waiting(self) -> bool:
        """Whether a retired resource nobody writes still waits for a sync to close its files."""
        return self._table.retired_waiting()

    def on_resource_failing(self, callback: Callable[[ResourceClaim], None] | None) -> None:
        """Have `callback(resource)` told whenever a write, sync, close or flush of one of
        this repository's resources fails, before the resource is retired here. It may
        run on any thread, perhaps holding that resource's `io_lock`: it must take no
        resource's `io_lock` (see `ResourceTable.on_failing`)."""
        self._table.on_failing = callback

    def open_resources(self) -> set[ResourceClaim]:
        """Resources this repository still holds open (being or to be appended to, or
        being closed)."""
        return self._table.open_resources()

    def appendable_resources(self) -> dict[ResourceClaim, int]:
        """The resources a claim may still start in (open, neither retired nor failed),
        with their lengths: what replicas in lockstep hold alike."""
        table = self._table
        with table.lock:
            return {
                claim: resource.length
                for claim, resource in table.open.items()
                if not resource.retired and not resource.failed
            }

    def wait_closed(self, resource: ResourceClaim, timeout: float) -> bool:
        """Wait for a background close of `resource` under way (see `close_in_background`)."""
        return self._table.wait_closed(resource, timeout)

    # ------------------------------------------------------------------ syncing

    def sync(self, *, retire: bool | None = None) -> None:
        """Make every claim closed so far durable (and, with `retire`, close every
        resource nobody is writing). Raises `ContentWriteFailed` listing any completed
        claim range whose bytes were lost since the last sync."""
        self._syncer.sync(retire=retire)

    def check_durable(self, claims: Iterable[ContentClaim]) -> None:
        """Raise `ContentWriteFailed` if any of `claims` has bytes in a range a failed
        write or sync lost. Call it after `sync()`, before the commit point, with the
        claims the commit's records point at."""
        self._lost.check_durable(claims)

    # ------------------------------------------------------------------ reading

    def open_read(self, claim: ContentClaim, offset: int = 0, length: int | None = None) -> ClaimReader:
        return self._reader.open_read(claim, offset, length)

    def export_to(self, claim: ContentClaim, target: int) -> int:
        """As `ContentStore.export_to`; from a local resource file the kernel copies the
        checked bytes (`ClaimReader.export`)."""
        with self._reader.open_read(claim) as reader:
            return reader.export(target)

    def exists(self, claim: ContentClaim | ResourceClaim) -> bool:
        return self._reader.exists(claim)

    def open_resource(self, resource: ResourceClaim, *, checksums: bool = False):
        """(binary handle, size) of a whole resource file (or, with `checksums`, its
        checksum file), live or archived: for fsck."""
        return self._reader.open_resource(resource, checksums=checksums)

    def check_resource(self, resource: ResourceClaim) -> ResourceCheck:
        """Read the whole resource file and check every block against its checksum
        (`verification`): for fsck."""
        return self._reader.check_resource(resource)

    # ------------------------------------------------------------------ claimants

    def increment(self, claim: ContentClaim | ResourceClaim) -> int:
        resource = resource_of(claim)
        count = self._table.claimants.increment(resource)
        with self._table.lock:
            self._table.zero.discard(resource)
        return count

    def decrement(self, claim: ContentClaim | ResourceClaim) -> int:
        resource = resource_of(claim)
        count = self._table.claimants.decrement(resource)
        if count == 0:
            with self._table.lock:
                self._table.zero.add(resource)
        return count

    def claimant_count(self, claim: ContentClaim | ResourceClaim) -> int:
        return self._table.claimants.get(resource_of(claim))

    def set_claimant_counts(self, counts: Mapping[ResourceClaim, int]) -> None:
        self._table.claimants.set_counts(counts)

    # ------------------------------------------------------------------ recovery

    def recover(self, live_claims: Iterable[ContentClaim], *, keep_orphans: bool = False) -> RecoveryReport:
        """Restart: set claimant counts from the FlowFile repository's live claims, then
        clean up what no live claim references, or, with `keep_orphans` (the FlowFile
        WAL accepted damage), archive it and cut nothing (see `recovery`)."""
        return recover(self._table, self._roots, self.io, live_claims, keep_orphans=keep_orphans, now=self._clock())

    def list_resources(self) -> dict[ResourceClaim, ResourceInfo]:
        """Every resource file present (live and archived), by scanning the containers."""
        return list_resources(self._roots, self.io)

    # ------------------------------------------------------------------ collection

    def collect(self) -> CollectReport:
        """Archive (or destroy) every resource that nobody references and nobody can
        append to any more."""
        return self._collector.collect()

    def age_off(self, container: str | None = None) -> list[ResourceClaim]:
        """Delete archived resources past retention, and oldest-first while a
        container's usage is above the maximum."""
        return self._collector.age_off(container)

    def archived(self) -> dict[ResourceClaim, float]:
        return self._collector.archived()

    # ------------------------------------------------------------------ repair

    def install_resource(self, resource: ResourceClaim, source, *, archived: bool = False, checksums=None) -> int:
        """Write a whole resource file from `source`, and its checksum file from
        `checksums` (fsck repair): each to a temporary name in the container root,
        synced, then renamed over the target."""
        return install_resource(
            self._table,
            self._roots,
            self.io,
            self._clock,
            resource,
            source,
            archived=archived,
            checksums=checksums,
            hooks=self._hooks,
        )

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Sync what was written and close every resource file."""
        table = self._table
        if table.closed:
            return
        try:
            self.sync(retire=True)
        finally:
            table.shutdown_closer()
            with table.lock:
                table.closed = True
                leftovers = list(table.open.values())
                table.open.clear()
                table.appendable.clear()
            for resource in leftovers:
                try:
                    resource.close_files()
                except (StorageError, OSError):
                    pass
            self.io.close()
            self._syncer.shutdown()

    def abandon(self, reason: str = "its owner stopped at once") -> None:
        """Stop at once, whatever the storage does: the owner of this repository is dead
        (its claims are adopted elsewhere, read from this storage by whoever adopts
        them). Nothing is synced, and no file whose storage can abandon it is closed:
        it is let go as it is (`WritableFile.abandon`: on HDFS hdfs-native's writer is
        dropped unsynced, and a reader of a dead incarnation's claims recovers the
        file's lease). A file that cannot be abandoned (local disk: nothing there
        hangs) is closed on a thread of its own, once whoever writes it lets go of its
        `io_lock`. Never waits: not for a lock held across I/O, nor for a sync or close
        in flight (the storage's to finish). From now on every write is refused
        (`RepositoryClosed`; a writer in the middle of a claim fails at its next
        append), claims completed since the last sync are lost as at a crash, and
        `close` does nothing. Idempotent."""
        table = self._table
        with table.lock:
            if table.closed:
                return
        resources = table.abandon(f"the repository was abandoned: {reason}")
        local = []
        for resource in resources:
            abandoned = [abandon_file(file) for file in (resource.file, resource.checksum_file)]
            if all(abandoned):
                resource.closed.set()
            else:
                local.append(resource)
        table.shutdown_closer(wait=False)
        self._syncer.shutdown(wait=False)

        def finish() -> None:
            for resource in local:
                try:
                    with resource.io_lock:
                        resource.close_files()
                except (StorageError, OSError):
                    pass  # abandoned: its unsynced bytes are nobody's
                finally:
                    resource.closed.set()
            self.io.close()

        threading.Thread(target=finish, name=f"{self.name}-abandon", daemon=True).start()

    def __enter__(self) -> ContentRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
