"""The content repository of a clustered node: every claim on local disk and on HDFS.

Each incarnation writes its own container, named after the incarnation id, in two
replicas that `ReplicatingContentRepository` keeps identical: local disk (led, and
read first) and HDFS under `<root>/<cluster>/content/<incarnation>/<incarnation>/`.
A claim is durable when both hold it (fdatasync and hsync), so any survivor can read
it by the (container, section, resource, offset, length) its FlowFile record holds.

Claims of other incarnations (FlowFiles of an adopted shard) are read from HDFS,
through a reader opened on demand per container. Their claimant counts are not this
node's to keep: the container of a dead incarnation is collected whole when no shard
that could still reference it is left (`cluster.core.collection.garbage_containers`,
run by the leader).
The HDFS replica keeps resource files open across session commits (one hsync per
commit, not a create and a close; see `replication.hdfs_content`): a claim of this
node read back from HDFS (its local copy damaged) has its resource sealed first, and
an adopter recovers the leases of the files a dead incarnation left open: the newest
files of the shard's earlier owners while it fences the shard (`NodeContent.recover_dead_writer`,
found by listing their containers' newest sections, beside the WAL's lease recovery,
asked for once the fence has asked for the shard's own files),
the newest ones of each container the shard's claims name as it recovers the shard
(`NodeContent.prepare_adopted`), any other at the first read that meets it.
A new incarnation deletes the local replicas of this node's earlier incarnations:
their claims are on HDFS, which is where an adopter reads them.

A Spark batch goes by reference (`flow.spark.by_reference`): `make_readable` closes
the HDFS files of its input claims (this node's sealed, a dead incarnation's leases
recovered) for the executors to read, and `take_file` moves each file of Spark's
result, with the checksum file the executors computed, into this incarnation's
container on HDFS: an HDFS-only claim (the local replica counts its claimants but has
no copy, and a read falls over to HDFS), collected with the container like the rest.

Lock plan: `_lock` guards `_readers`; the repositories have their own locks.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from flow.spark.by_reference import ContentLocation
from replication.hdfs_content import (
    DEFAULT_HDFS_CONFIG,
    hdfs_content_root,
    open_hdfs_content_reader,
    open_hdfs_content_repository,
)
from replication.replicating_content import ReplicatingContentRepository
from repositories.claims import ContentClaim, ResourceClaim
from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository
from repositories.content.collection import CollectReport
from repositories.content.errors import ContentNotFound, ContentUnavailable
from repositories.content.format import CHECKSUM_SUFFIX, checksum_path, resource_id_of_checksum_file, resource_path
from repositories.content.read_windows import ReadWindows
from repositories.content.recovery import RecoveryReport
from repositories.content.store import ClaimWriter, ContentStore
from repositories.storage import StorageError, join
from repositories.storage.leases import recover_leases
from repositories.storage.local import make_private_directories

from ..core.incarnation import Incarnation

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)

# Small claims share a resource file until it holds this much (NiFi 1's default for
# nifi.content.claim.max.appendable.size; NiFi 2 uses 50 KB). Every resource is a file
# on HDFS that costs a create and a close at the NameNode: at 50 KB, 1 KB claims
# would need 40 of each per thousand claims, at 1 MB one. Both replicas use the same
# size, or they would retire resources at different moments.
REPLICATED_RESOURCE_SIZE = 1 << 20
# ... and claims smaller than that share one until it holds this much. With
# hdfs-native's release a new HDFS file's first hsync waits for its pipeline to settle
# (`replication.new_files`' NEW_PIPELINE_SETTLE_S, 50 ms), so at 1 MB the commits of a busy node waited on new
# files over and over: 4 sessions committing every 100 claims of 1 KB did 11,400-13,400
# claims/s with 1 MB files and 23,500-32,100 with 8 MB ones (`custody bench content
# --hdfs`). Large claims still fill theirs alone, so Spark reads them in place. A slow
# flow's resources are retired by age (RESOURCE_MAX_AGE_S) long before they fill.
REPLICATED_SHARED_RESOURCE_SIZE = 8 << 20
# A resource takes claims for at most this long (then it is retired, closed and, once
# its FlowFiles are gone, collected): a slow flow's content is collected, and its HDFS
# files closed, within seconds rather than when 1 MB has trickled in.
RESOURCE_MAX_AGE_S = 5.0
# An adopter recovers, ahead of the first read, the leases of this many of the newest
# resources of each dead container its shard references: the files that incarnation
# may have left open (one per writer thread appending, and the few still closing).
# An older one still open is recovered when a read first meets it.
NEWEST_RESOURCES_RECOVERED = 16
# Listed to find those newest resources before the shard's WAL names any claim: the
# sections whose directories changed last. A run of 16 resources shares a section,
# and the collector's deletes touch older sections too, so a few are listed.
NEWEST_SECTIONS_LISTED = 4
# Bytes of an adopted shard's first claims read ahead (`ForeignContainers.read_ahead`):
# half of what the read windows keep, so that they are not pushed out before they are read.
READ_AHEAD_BYTES = 8 << 20
HDFS_REPLICA = 1  # the replicas are [local, HDFS]


class ForeignContainers:
    """Reads claims of any container on HDFS (other incarnations' content)."""

    name = "hdfs(other incarnations)"

    def __init__(self, storage: Storage, base: str, own: str):
        self.storage, self.base, self.own = storage, base, own
        self._lock = threading.Lock()
        self._readers: dict[str, object] = {}
        # An adopted shard's tasks read neighbouring claims of one resource file.
        self._windows = ReadWindows()

    def _reader(self, container: str):
        if container == self.own:
            raise ContentNotFound(f"{container} is this node's own container", claim=None)
        with self._lock:
            reader = self._readers.get(container)
            if reader is None:
                # Another incarnation's claims reach this node only with a shard it
                # took over, so that incarnation is dead: its open files may be closed.
                reader = self._readers[container] = open_hdfs_content_reader(
                    self.storage, self.base, container, (container,), recover_open_files=True, cache=self._windows
                )
            return reader

    def open_read(self, claim: ContentClaim, offset: int = 0, length: int | None = None):
        return self._reader(claim.resource.container).open_read(claim, offset, length)

    def read_ahead(self, claims: Iterable[ContentClaim], budget: int = READ_AHEAD_BYTES) -> int:
        """Read `claims` (other incarnations', each at most a read window) in the order
        given, until `budget` bytes, and forget the bytes: the read windows keep them
        (`repositories.content.read_windows`) for the tasks that read them next. A
        claim that cannot be read is left to the task that reads it, which says why.
        Returns how many claims were read."""
        by_container: dict[str, list[ContentClaim]] = {}
        for claim in claims:
            container = claim.resource.container
            if container == self.own or claim.length > self._windows.window_size or claim.length > budget:
                continue
            budget -= claim.length
            by_container.setdefault(container, []).append(claim)
        read = 0
        for container, held in by_container.items():
            try:
                self._reader(container).read_many(held)
                read += len(held)
            except Exception as error:  # noqa: BLE001 - best effort (a node stopping, HDFS down): the tasks read them
                log.info(
                    "reading ahead %d claims of %s failed (%s); their tasks read them", len(held), container, error
                )
        return read

    def recover_newest(
        self, resources: Iterable[ResourceClaim], per_container: int = NEWEST_RESOURCES_RECOVERED, timeout: float = 60.0
    ) -> int:
        """Recover, in one round, the leases of the newest resource files (and their
        checksum files) of each other container among `resources`: those its dead
        incarnation may have left open, whose claims would otherwise each wait for a
        lease recovery at their first read. Returns how many files it recovered."""
        by_container: dict[str, set[ResourceClaim]] = {}
        for resource in resources:
            if resource.container != self.own:
                by_container.setdefault(resource.container, set()).add(resource)
        paths = []
        for container, held in by_container.items():
            root = join(hdfs_content_root(self.base, container), container)
            for resource in sorted(held, key=_sequence, reverse=True)[:per_container]:
                paths += [resource_path(root, resource), checksum_path(root, resource)]
        return self._recover(
            lambda: [path for path in paths if self.storage.exists(path)],  # not yet collected
            ", ".join(sorted(by_container)),
            timeout,
        )

    def recover_newest_written(
        self,
        container: str,
        per_container: int = NEWEST_RESOURCES_RECOVERED,
        sections: int = NEWEST_SECTIONS_LISTED,
        timeout: float = 60.0,
    ) -> int:
        """Recover, in one round, the leases of the newest resource files (and their
        checksum files) of `container`, another incarnation's and dead, found by listing
        the sections of it that changed last: what an adopter starts while it fences a
        shard, before the shard's WAL tells which claims it holds. Returns how many files
        it recovered; 0 when listing or recovering fails (a read that meets a file still
        open recovers it then)."""
        if container == self.own:
            return 0
        root = join(hdfs_content_root(self.base, container), container)

        def newest_written() -> list[str]:
            listed = [entry for entry in self.storage.list(root) if entry.is_dir and entry.name.isdigit()]
            files = []
            for section in sorted(listed, key=lambda entry: entry.modified, reverse=True)[:sections]:
                files += [entry for entry in self.storage.list(section.path) if not entry.is_dir]
            names = {entry.path for entry in files}
            newest = sorted(
                (entry for entry in files if resource_id_of_checksum_file(entry.name) is None),
                key=lambda entry: _sequence_of(entry.name),
                reverse=True,
            )[:per_container]
            paths = []
            for entry in newest:
                paths += [path for path in (entry.path, entry.path + CHECKSUM_SUFFIX) if path in names]
            return paths

        return self._recover(newest_written, container, timeout)

    def _recover(self, find_paths: Callable[[], list[str]], containers: str, timeout: float) -> int:
        """Recover the leases of the files `find_paths()` names, in one round; how many.
        0 when finding or recovering them fails: a read that meets a file still open
        recovers it then."""
        try:
            paths = find_paths()
            recover_leases(self.storage, paths, timeout=timeout)
        except StorageError as error:  # not found, LeaseRecoveryTimeout too
            log.info(
                "recovering the leases of the newest content files of %s failed (%s); a read that meets "
                "one still open recovers it then",
                containers,
                error,
            )
            return 0
        return len(paths)

    def make_readable(self, resources: Iterable[ResourceClaim], timeout: float = 60.0) -> None:
        """Recover the leases of `resources`' files (and their checksum files) that
        their dead incarnation left open, in one round: whoever reads them next, here
        or on a Spark executor, reads them whole. Raises `StorageError` (also
        `LeaseRecoveryTimeout`) when HDFS cannot close them now."""
        paths = []
        for resource in {resource for resource in resources if resource.container != self.own}:
            root = join(hdfs_content_root(self.base, resource.container), resource.container)
            paths += [resource_path(root, resource), checksum_path(root, resource)]
        recover_leases(self.storage, [path for path in paths if self.storage.exists(path)], timeout=timeout)

    def exists(self, claim) -> bool:
        resource = claim.resource if isinstance(claim, ContentClaim) else claim
        try:
            return self._reader(resource.container).exists(claim)
        except ContentNotFound:
            return False

    def close(self) -> None:
        with self._lock:
            readers, self._readers = list(self._readers.values()), {}
        for reader in readers:
            try:
                reader.close()
            except Exception:  # noqa: BLE001 - read-only: nothing to lose
                pass


class NodeContent(ContentStore):
    """This incarnation's container on local disk and HDFS (a `ReplicatingContentRepository`
    it holds, not one it is), and claims of other incarnations read from HDFS. Claimant
    counts are kept for this node's own container only: another incarnation's claims
    are never its to collect (see the module docstring)."""

    def __init__(self, replicas: ReplicatingContentRepository, foreign: ForeignContainers, container: str):
        self.replicas, self.foreign, self.container = replicas, foreign, container

    def __repr__(self) -> str:
        return f"NodeContent({self.container})"

    def _own(self, claim) -> bool:
        resource = claim.resource if isinstance(claim, ContentClaim) else claim
        return resource.container == self.container

    # -- ContentStore --------------------------------------------------------------------
    def write(self) -> ClaimWriter:
        return self.replicas.write()

    def open_read(self, claim: ContentClaim, offset: int = 0, length: int | None = None):
        return self.replicas.open_read(claim, offset, length)  # foreign claims: its fallback

    def increment(self, claim: ContentClaim | ResourceClaim) -> int:
        return self.replicas.increment(claim) if self._own(claim) else 1

    def decrement(self, claim: ContentClaim | ResourceClaim) -> int:
        return self.replicas.decrement(claim) if self._own(claim) else 1

    def claimant_count(self, claim: ContentClaim | ResourceClaim) -> int:
        return self.replicas.claimant_count(claim) if self._own(claim) else 0

    def sync(self) -> None:
        self.replicas.sync()

    def check_durable(self, claims: Iterable[ContentClaim]) -> None:
        self.replicas.check_durable(claims)

    def recover(self, live_claims: Iterable[ContentClaim]) -> RecoveryReport:
        return self.replicas.recover([claim for claim in live_claims if self._own(claim)])

    def collect(self) -> CollectReport:
        return self.replicas.collect()

    def retire_aged(self) -> list[ResourceClaim]:
        """The resources no writer came back to within RESOURCE_MAX_AGE_S, retired and
        closed on both replicas (`ReplicatingContentRepository.retire_aged`)."""
        return self.replicas.retire_aged()

    def age_off(self) -> list[ResourceClaim]:
        return self.replicas.age_off()

    def close(self) -> None:
        try:
            self.replicas.close()
        finally:
            self.foreign.close()

    def abandon(self, reason: str = "its incarnation is dead") -> None:
        """The incarnation died: stop at once, whatever HDFS does. This container's files
        are let go unsynced and open on HDFS (`ReplicatingContentRepository.abandon`),
        where whoever adopts its FlowFiles recovers their leases as it reads them
        (`prepare_adopted`, `recover_dead_writer`); the local replica, which the next
        incarnation deletes, is closed on a thread of its own. Never waits; every later
        write fails."""
        self.replicas.abandon(reason)
        self.foreign.close()  # read-only: no file of its is open for writing

    # -- beyond the protocol -----------------------------------------------------------------
    def exists(self, claim: ContentClaim | ResourceClaim) -> bool:
        return self.replicas.exists(claim)

    def take_file(self, path: str, checksums: str) -> ContentClaim:
        """A whole file on this node's HDFS (Spark's output), with its checksum file,
        moved into this incarnation's container as a new resource: an HDFS-only claim,
        collected as any other of this container (`ReplicatingContentRepository.take_file`)."""
        return self.replicas.take_file(path, checksums, replica=HDFS_REPLICA)

    def spark_location(self) -> ContentLocation:
        """Where a Spark executor reads and writes this cluster's content on HDFS."""
        hdfs = self.replicas.replicas[HDFS_REPLICA]
        return ContentLocation(self.foreign.storage.address, self.foreign.base, hdfs.config.checksum_block_size)

    def make_readable(self, claims: Iterable[ContentClaim]) -> None:
        """Every file of `claims` closed on HDFS, so that a reader other than this node
        (a Spark executor) reads each claim whole: this node's own resources are sealed
        (`ReplicatingContentRepository.seal`: no more appends, synced, closed), other
        incarnations' files have their leases recovered. Raises `ContentUnavailable`
        when that cannot be done now."""
        resources = {claim.resource for claim in claims}
        hdfs = self.replicas.replicas[HDFS_REPLICA]
        still_open = self.replicas.seal_all(resources & hdfs.open_resources())
        if still_open:
            resource = min(still_open, key=lambda each: each.relative_path)
            raise ContentUnavailable(
                f"{resource.relative_path} is still open on HDFS; its claims cannot be read from there yet",
                claim=resource,
            )
        try:
            self.foreign.make_readable(resources)
        except StorageError as error:
            raise ContentUnavailable(
                f"the content files of other incarnations cannot be closed on HDFS now: {error}", claim=None
            ) from error

    def prepare_adopted(self, claims: Iterable[ContentClaim], heads: Iterable[ContentClaim] = ()) -> threading.Thread:
        """In the background, make the content of an adopted shard's dead incarnations
        readable ahead of its first reads (`ForeignContainers.recover_newest`; the
        thread returned), and beside that read `heads` (the claims of its queues' first
        FlowFiles, mostly in older files, closed) into the node's read windows
        (`ForeignContainers.read_ahead`), so that its first tasks find them in memory."""
        resources = {claim.resource for claim in claims}
        ahead = list(heads)
        if ahead:
            name = f"content-read-ahead {self.container}"
            threading.Thread(target=self.foreign.read_ahead, args=(ahead,), name=name, daemon=True).start()
        return _in_background(
            f"content-leases {self.container}",
            lambda: self.foreign.recover_newest(resources),
            "content files of adopted FlowFiles",
        )

    def recover_dead_writer(self, container: str | None) -> threading.Thread | None:
        """In the background, recover the leases of the newest files `container` (the
        dead last owner of a shard being fenced) left open
        (`ForeignContainers.recover_newest_written`): beside the fencing of the shard's
        WAL (once the fence has asked for the shard's own files, which the WAL's
        recovery waits for), rather than after it, at the adopted shard's first reads."""
        if container is None or container == self.container:
            return None
        return _in_background(
            f"content-leases {container}",
            lambda: self.foreign.recover_newest_written(container),
            f"newest content files of {container} while fencing",
        )


def _in_background(name: str, recover: Callable[[], int], what: str) -> threading.Thread:
    """Run `recover` (a lease recovery that returns how many files it recovered) on a
    thread of its own, and log what it did."""

    def run() -> None:
        started = time.monotonic()
        files = recover()
        if files:
            log.info("recovered the leases of %d %s in %.2fs", files, what, time.monotonic() - started)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


def _sequence(resource: ResourceClaim) -> int:
    """The resource's place in its writer's order (the id's last field), -1 if none."""
    return _sequence_of(resource.id)


def _sequence_of(resource_id: str) -> int:
    try:
        return int(resource_id.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def open_node_content(
    storage: Storage, layout, incarnation: Incarnation, local_directory: str, archive: ArchivePolicy | None = None
) -> NodeContent:
    """This incarnation's content: a fresh container, local and on HDFS. `archive`
    rules both replicas' archive (on HDFS without the usage rule: that disk is not
    this node's to watch)."""
    container = incarnation.id
    archive = archive or ArchivePolicy()
    _forget_earlier_incarnations(local_directory, incarnation)
    # One sync per session commit (group commit), not one per claim.
    local = open_filesystem_content_repository(
        {container: os.path.join(local_directory, container)},
        ContentRepositoryConfig(
            sync_on_close=False,
            archive=archive,
            max_appendable_claim_size=REPLICATED_RESOURCE_SIZE,
            shared_resource_size=REPLICATED_SHARED_RESOURCE_SIZE,
        ),
        name=f"local:{container}",
    )
    # `hdfs_content_root(base, node)` is base/content/<node>: the base is the cluster's directory.
    storage.mkdir(layout.hdfs_content, parents=True, exist_ok=True)
    hdfs = open_hdfs_content_repository(
        storage,
        layout.hdfs_cluster,
        container,
        (container,),
        dataclasses.replace(
            DEFAULT_HDFS_CONFIG,
            archive=dataclasses.replace(archive, max_usage=None),
            max_appendable_claim_size=REPLICATED_RESOURCE_SIZE,
            shared_resource_size=REPLICATED_SHARED_RESOURCE_SIZE,
        ),
        keep_open=True,
    )
    foreign = ForeignContainers(storage, layout.hdfs_cluster, container)
    replicas = ReplicatingContentRepository(
        [local, hdfs], fallbacks=[foreign], name=f"content {container}", max_resource_age_s=RESOURCE_MAX_AGE_S
    )
    content = NodeContent(replicas, foreign, container)
    content.recover([])
    return content


def _forget_earlier_incarnations(local_directory: str, incarnation: Incarnation) -> None:
    if not os.path.isdir(local_directory):
        make_private_directories(local_directory)
        return
    for name in os.listdir(local_directory):
        try:
            earlier = Incarnation.parse(name)
        except ValueError:
            continue
        if earlier.node == incarnation.node and earlier.epoch < incarnation.epoch:
            shutil.rmtree(os.path.join(local_directory, name), ignore_errors=True)
            log.info("removed the local content of earlier incarnation %s (its claims are on HDFS)", name)
