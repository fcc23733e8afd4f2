"""Pass by reference: a Spark batch whose content lies on the cluster's HDFS never goes
through the node. The node hands Spark claims (resource file, offset, length); the
executors read and write the bytes.

    content = session.content_store                       # a clustered node's NodeContent
    if isinstance(content, ContentByReference):
        content.make_readable(claims)                     # every file closed on HDFS
        unread = stage_claims(spark, content.spark_location(), staging, directory, items)
        ...                                               # Spark runs the batch
        taken = checksum_outputs(spark, content.spark_location(), part_paths)
        session.check_admitted()                          # the guard, before the renames
        claims = [content.take_file(path, checksums) for path, checksums in taken]

Inputs. The node first makes every input claim readable on HDFS: its own resources
are sealed (no more appends, synced, closed), files a dead incarnation left open have
their leases recovered; hdfs-native reads an open file only to its last finished
block. One Spark job then copies each claim, on the executors, into a file of its
own in the batch's staging directory (`in-<index>.<format>`, as `records` names
them). Each task opens the content on HDFS itself, with its own client, reads the
claim with positioned reads and checks every block against the resource's checksum
file, as a node reads a claim. Why a file of its own: Spark's file readers cannot
start at an offset inside a file other claims share (a resource holds many FlowFiles'
content), and Parquet keeps its footer at its file's end. A claim an executor cannot
read (its HDFS copy damaged, say, where the node's local copy may be whole) comes back
as unread, and the node stages that input itself, through its own reads with their
fallbacks.

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
from typing import Protocol, runtime_checkable

from repositories.claims import ContentClaim

STAGE_CHUNK = 1 << 20
CHECKSUM_SUFFIX = ".crc"


@dataclass(frozen=True)
class ContentLocation:
    """Where an executor finds a cluster's content: `storage.open()` gives it a client
    of the HDFS (`replication.hdfs_storage.HdfsAddress`); incarnation X's container
    is `<base>/content/X/X` (`replication.hdfs_content`); outputs are checksummed in
    blocks of `block_size` bytes. Picklable."""

    storage: object
    base: str
    block_size: int


@runtime_checkable
class ContentByReference(Protocol):
    """A content store whose claims Spark's executors can read and write themselves."""

    def spark_location(self) -> ContentLocation: ...

    def make_readable(self, claims: Iterable[ContentClaim]) -> None: ...

    def take_file(self, path: str, checksums: str) -> ContentClaim: ...


@dataclass(frozen=True)
class ClaimToStage:
    """One input: its place in the batch, its claim, and the staging file it goes to."""

    index: int
    claim: ContentClaim
    target: str


def stage_claims(spark, location: ContentLocation, items: Sequence[ClaimToStage]) -> list[int]:
    """Copy every claim of `items` to its target on the executors; the indexes of the
    items an executor could not read (each to be staged by the node instead)."""
    if not items:
        return []
    context = spark.sparkContext
    slices = max(1, min(len(items), context.defaultParallelism))
    unread = context.parallelize(list(items), slices).mapPartitions(
        functools.partial(_stage_partition, location)).collect()
    return sorted(index for index, _reason in unread)


def _stage_partition(location: ContentLocation, items):
    """On an executor: copy each claim to its target; yield (index, reason) for those
    that could not be read."""
    from replication.hdfs_content import open_hdfs_content_reader
    from repositories.content.errors import ContentRepositoryError

    storage = location.storage.open()
    readers = {}
    try:
        for item in items:
            container = item.claim.resource.container
            try:
                reader = readers.get(container)
                if reader is None:
                    reader = readers[container] = open_hdfs_content_reader(storage, location.base, container,
                                                                            (container,))
                with reader.open_read(item.claim) as source, storage.create(item.target, overwrite=True) as out:
                    while chunk := source.read(STAGE_CHUNK):
                        out.write(chunk)
            except ContentRepositoryError as error:
                yield item.index, f"{type(error).__name__}: {error}"
    finally:
        for reader in readers.values():
            reader.close()


def checksum_outputs(spark, location: ContentLocation, paths: Sequence[str]) -> list[tuple[str, str]]:
    """Write, on the executors, the checksum file of each of `paths` beside it
    (`<path>.crc`); (path, checksum file path) for each, in order."""
    if not paths:
        return []
    context = spark.sparkContext
    slices = max(1, min(len(paths), context.defaultParallelism))
    return context.parallelize(list(paths), slices).map(functools.partial(_write_checksums, location)).collect()


def _write_checksums(location: ContentLocation, path: str) -> tuple[str, str]:
    """On an executor: the checksum file of the whole file at `path`, as a content
    writer makes it for a claim at offset 0 (header, then a record per block)."""
    from repositories.content.checksum_format import pack_header
    from repositories.content.checksums import BlockChecksummer

    storage = location.storage.open()
    target = path + CHECKSUM_SUFFIX
    checksummer = BlockChecksummer(0, location.block_size)
    with storage.open_read(path) as source, storage.create(target, overwrite=True) as out:
        out.write(pack_header(location.block_size))
        while chunk := source.read(STAGE_CHUNK):
            checksummer.update(chunk)
            out.write(checksummer.take())
        checksummer.finish()
        out.write(checksummer.take())
    return path, target
