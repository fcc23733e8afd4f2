"""Pass by reference: a Spark batch whose content lies on the cluster's HDFS never goes
through the node. The node hands Spark claims (resource file, offset, length); the
executors read and write the bytes.

    content = session.content_store                       # a clustered node's NodeContent
    if isinstance(content, ContentByReference):
        content.make_readable(claims)                     # every file closed on HDFS
        vouched = vouched_by_hdfs(...)                    # in place, unread: HDFS's CRC agrees
        staged = stage_claims(spark, content.spark_location(), rest)  # read and checked; copied or in place
        ...                                               # Spark runs the batch
        taken = checksum_outputs(spark, content.spark_location(), part_paths)
        session.check_admitted()                          # the guard, before the renames
        claims = [content.take_file(path, checksums) for path, checksums in taken]

Inputs. The node first makes every input claim readable on HDFS: its own resources
are sealed (no more appends, synced, closed), files a dead incarnation left open have
their leases recovered; hdfs-native reads an open file only to its last finished
block. A claim that fills its resource file whole, and whose bytes HDFS vouches for
(`flow.spark.file_checksums`: HDFS's whole-file CRC-32C equals the one its checksum
records compose), is read by Spark in place with no pass before. One Spark job then
stages every other claim on the executors. Each task opens the content on HDFS
itself, with its own client, and reads the claim with positioned reads, checking
every block against the resource's checksum file as a node reads a claim. A claim
that fills its resource file whole (offset 0, the file's length: a large FlowFile's
content usually does) is left where it is, and Spark reads that file; any
other claim is copied into a file of its own in the batch's staging directory
(`in-<index>.<format>`, as `records` names them), because Spark's file readers cannot
start at an offset inside a file other claims share and Parquet keeps its footer at
its file's end. Small JSON-lines claims (up to `JOIN_MAX_CLAIM` each) are copied
together instead, in batch order, into shared staging files of up to `JOIN_MAX_BYTES`
(`in-<first>-<last>.json`), each claim ending with a newline: on HDFS every file costs
a create and a close, and a close syncs the file on each DataNode of its pipeline,
which for a batch of a hundred small FlowFiles took longer than Spark's job. Joined
claims lose their file names, so a batch that asks for attribute columns is never
joined. A resource two inputs share is never read in place. A claim an
executor cannot read (its HDFS copy damaged, say, where the node's local copy may be
whole) comes back unread, and the node stages that input itself, through its own
reads with their fallbacks.

Outputs. Spark writes the result into staging as for any batch. A second job computes,
on the executors, the checksum file of each part file (`checksum_format`, one claim
from offset 0, blocks of the node's checksum block size). Then the node checks that it
may still commit for the shard and moves each part file with its checksum file into
its own content container (`take_file`, a rename: no byte copied): HDFS-only claims,
read, counted and collected as any other claim of the container, and read by an
adopter from HDFS as every claim of a dead incarnation is. A paused node woken after
a takeover fails the check and renames nothing; if it is deposed between the check
and the rename, what it moved lies unreferenced in the container of an incarnation
that is over, which is collected whole.

Durability: the part files are closed by Spark's writers, not hsynced. A closed HDFS
file is on every DataNode of its pipeline; the harness and the compose cluster run
their DataNodes with `dfs.datanode.synconclose`, so closing it also syncs it to disk.

The executors import this module (cloudpickle sends the functions by reference), so
Custody must be installed where they run: it is for `local[*]`, and in the compose
cluster's Spark image.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from repositories.claims import ContentClaim

if TYPE_CHECKING:
    from repositories.storage import Storage

STAGE_CHUNK = 1 << 20
JOIN_MAX_CLAIM = 1 << 20  # a claim up to this size may share a staging file
JOIN_MAX_BYTES = 64 << 20  # the claims of one shared staging file, together


@dataclass(frozen=True)
class ContentLocation:
    """Where an executor finds a cluster's content: `storage.open()` gives it a client
    of the HDFS (`replication.hdfs_storage.HdfsAddress`); incarnation X's container
    is `<base>/content/X/X` (`replication.hdfs_content`); outputs are checksummed in
    blocks of `block_size` bytes. Picklable."""

    storage: object
    base: str
    block_size: int

    def resource_path(self, claim: ContentClaim) -> str:
        """Where the resource file of `claim` lies on the HDFS (live, not archived)."""
        from repositories.content.format import resource_path

        return resource_path(self._container_root(claim), claim.resource)

    def checksum_path(self, claim: ContentClaim) -> str:
        """Where the checksum file of `claim`'s resource lies on the HDFS."""
        from repositories.content.format import checksum_path

        return checksum_path(self._container_root(claim), claim.resource)

    def _container_root(self, claim: ContentClaim) -> str:
        from replication.hdfs_content import hdfs_content_root
        from repositories.storage import join

        container = claim.resource.container
        return join(hdfs_content_root(self.base, container), container)


@runtime_checkable
class ContentByReference(Protocol):
    """A content store whose claims Spark's executors can read and write themselves."""

    def spark_location(self) -> ContentLocation: ...

    def make_readable(self, claims: Iterable[ContentClaim]) -> None: ...

    def take_file(self, path: str, checksums: str) -> ContentClaim: ...


@dataclass(frozen=True)
class ClaimToStage:
    """One input: its place in the batch, its claim, the staging file it goes to, and
    whether Spark may read it in place when the claim fills its resource file whole."""

    index: int
    claim: ContentClaim
    target: str
    in_place: bool = True


@dataclass(frozen=True)
class ClaimsToJoin:
    """Small JSON-lines claims copied, in this order, into one staging file `target`."""

    indexes: tuple[int, ...]
    claims: tuple[ContentClaim, ...]
    target: str


def join_small_claims(items: Sequence[ClaimToStage], target_of) -> tuple[list[ClaimToStage], list[ClaimsToJoin]]:
    """(the items copied alone, the groups copied together) of `items`, every one a JSON
    lines claim that cannot be read in place: each claim up to `JOIN_MAX_CLAIM` joins
    the group of the claims before it, by index, until the group would pass
    `JOIN_MAX_BYTES`. `target_of(first, last)` names a group's staging file. The same
    items always give the same groups, so a rerun stages the same files."""
    alone, groups, group, size = [], [], [], 0
    for item in sorted(items, key=lambda each: each.index):
        if item.claim.length > JOIN_MAX_CLAIM:
            alone.append(item)
            continue
        if group and size + item.claim.length > JOIN_MAX_BYTES:
            groups.append(group)
            group, size = [], 0
        group.append(item)
        size += item.claim.length
    if group:
        groups.append(group)
    joined = []
    for members in groups:
        if len(members) == 1:
            alone.append(members[0])
        else:
            joined.append(
                ClaimsToJoin(
                    tuple(each.index for each in members),
                    tuple(each.claim for each in members),
                    target_of(members[0].index, members[-1].index),
                )
            )
    return sorted(alone, key=lambda each: each.index), joined


@dataclass(frozen=True)
class Staged:
    """Where an input's records are for Spark (`path` on the content's storage: its
    staging file, or its resource file read in place), or why an executor could not
    read it (`path` None, `reason`)."""

    index: int
    path: str | None
    reason: str = ""


def stage_claims(spark, location: ContentLocation, items: Sequence[ClaimToStage | ClaimsToJoin]) -> list[Staged]:
    """Stage every claim of `items` on the executors; one `Staged` per claim, by index."""
    if not items:
        return []
    context = spark.sparkContext
    slices = max(1, min(len(items), context.defaultParallelism))
    staged = (
        context.parallelize(list(items), slices).mapPartitions(functools.partial(_stage_partition, location)).collect()
    )
    return sorted(staged, key=lambda each: each.index)


def _stage_partition(location: ContentLocation, items):
    """On an executor: each claim checked block by block against its checksums, and
    either left in place (it fills its resource file whole, and `in_place` allows:
    Spark reads that file) or copied to its target."""
    from replication.hdfs_content import open_hdfs_content_reader
    from repositories.content.errors import ContentRepositoryError
    from repositories.storage import StorageError

    storage = location.storage.open()
    readers = {}

    def reader_of(claim: ContentClaim):
        container = claim.resource.container
        reader = readers.get(container)
        if reader is None:
            reader = readers[container] = open_hdfs_content_reader(storage, location.base, container, (container,))
        return reader

    try:
        for item in items:
            if isinstance(item, ClaimsToJoin):
                yield from _join_claims(storage, reader_of, item)
                continue
            claim = item.claim
            try:
                reader = reader_of(claim)
                path = location.resource_path(claim)
                if item.in_place and claim.offset == 0 and storage.status(path).length == claim.length:
                    with reader.open_read(claim) as source:
                        while source.read(STAGE_CHUNK):
                            pass  # checked, and read by Spark where it is
                    yield Staged(item.index, path)
                    continue
                with reader.open_read(claim) as source, storage.create(item.target, overwrite=True) as out:
                    while chunk := source.read(STAGE_CHUNK):
                        out.write(chunk)
                yield Staged(item.index, item.target)
            except (ContentRepositoryError, StorageError) as error:
                yield Staged(item.index, None, f"{type(error).__name__}: {error}")
    finally:
        for reader in readers.values():
            reader.close()


def _join_claims(storage: Storage, reader_of, item: ClaimsToJoin) -> list[Staged]:
    """On an executor: the claims of `item`, each read and checked whole before a byte
    of it is written, copied into one staging file, each ending with a newline (a
    record never runs into the next claim's first). A claim that cannot be read is
    left out and reported; if the staging file cannot be written, every claim is."""
    from repositories.content.errors import ContentRepositoryError
    from repositories.storage import StorageError

    copied, unread = [], []
    try:
        with storage.create(item.target, overwrite=True) as out:
            for index, claim in zip(item.indexes, item.claims, strict=False):
                try:
                    with reader_of(claim).open_read(claim) as source:
                        data = b"".join(iter(functools.partial(source.read, STAGE_CHUNK), b""))
                except (ContentRepositoryError, StorageError) as error:
                    unread.append(Staged(index, None, f"{type(error).__name__}: {error}"))
                    continue
                out.write(data if data.endswith(b"\n") else data + b"\n")
                copied.append(Staged(index, item.target))
    except StorageError as error:
        return [Staged(index, None, f"{type(error).__name__}: {error}") for index in item.indexes]
    return copied + unread


def checksum_outputs(spark, location: ContentLocation, paths: Sequence[str]) -> list[tuple[str, str]]:
    """Write, on the executors, the checksum file of each of `paths` beside it
    (`<path>.crc`); (path, checksum file path) for each, in order."""
    if not paths:
        return []
    context = spark.sparkContext
    slices = max(1, min(len(paths), context.defaultParallelism))
    return context.parallelize(list(paths), slices).map(functools.partial(_write_checksums, location)).collect()


def _write_checksums(location: ContentLocation, path: str) -> tuple[str, str]:
    """On an executor: the checksum file of the whole file at `path`
    (`flow.spark.outputs.checksum_file`)."""
    from .outputs import checksum_file

    return path, checksum_file(location.storage.open(), path, location.block_size)
