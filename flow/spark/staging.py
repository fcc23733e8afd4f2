"""Where a Spark batch's files live while Spark works on them: the "spark.staging" service.

    staging = SparkStaging(storage, "/data/spark", "file://")          # a standalone node
    staging = SparkStaging(hdfs, "/custody/main/spark", "hdfs://nn:8020")  # a clustered node
    services.register(STAGING_SERVICE, lambda: staging)
    directory = staging.batch_directory("n1-4", "sql", batch, epoch)    # .../n1-4/sql/<batch>-e<epoch>
    spark.read.json(staging.uri(f"{directory}/in"))

The node gives its processors the filesystem Spark shares with it: the local disk of
a standalone node (Spark runs beside it), the cluster's HDFS for a clustered node (so
that executors on other machines read and write it too). `storage` is the node's
`repositories.storage` view of it, `uri` what Spark calls the same path.

`stage_batch` puts a batch's inputs where Spark reads them: through the node
(`stage_inputs`), or by reference when the content is on the same HDFS
(`flow.spark.by_reference`).

Layout: `<root>/<shard>/<processor>/<batch>-e<epoch>/` (`flow.spark.batches`). A
processor on a shard is the only writer of its directory, so when it is scheduled
everything left there is abandoned (by a crash, or by the shard's previous owner) and
`collect` deletes it.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from repositories.storage import StorageError, StorageFileNotFound, join

from .batches import parse_staging_name, staging_name
from .by_reference import ClaimToStage, ContentByReference, Staged, join_small_claims, stage_claims
from .file_checksums import vouched_by_hdfs
from .records import StagedInput, joined_name, staged_name

if TYPE_CHECKING:
    from flow.session import ProcessSession
    from repositories.content import ContentStore

log = logging.getLogger(__name__)

STAGING_SERVICE = "spark.staging"
STAGE_CHUNK = 1 << 20


@dataclass(frozen=True)
class SparkStaging:
    storage: object  # repositories.storage.Storage
    root: str  # an absolute path in `storage`
    uri_prefix: str  # "file://" or "hdfs://host:port": prefix + path = what Spark reads

    def uri(self, path: str) -> str:
        return f"{self.uri_prefix}{path}"

    def resolve(self, location: str) -> str:
        """The path in `storage` of `location`, given as a path on the node's Spark
        filesystem or as a URI of it; ValueError for a URI of another filesystem."""
        if location.startswith(self.uri_prefix + "/"):
            location = location[len(self.uri_prefix) :]
        elif "://" in location:
            raise ValueError(
                f"{location} is not on this node's Spark filesystem ({self.uri_prefix}/...): give a path on it"
            )
        if not location.startswith("/"):
            raise ValueError(f"{location} is not an absolute path")
        return location.rstrip("/") or "/"

    def processor_directory(self, shard: str, processor: str) -> str:
        return join(self.root, shard, processor)

    def batch_directory(self, shard: str, processor: str, batch: str, epoch: int) -> str:
        return join(self.processor_directory(shard, processor), staging_name(batch, epoch))

    def delete(self, directory: str) -> None:
        """Delete a batch's directory; a failure is logged (`collect` gets it later)."""
        try:
            self.storage.delete(directory, recursive=True)
        except StorageError as error:
            log.warning("could not delete the Spark staging directory %s (collected later): %s", directory, error)

    def collect(self, shard: str, processor: str) -> int:
        """Delete every batch directory of `processor` on `shard` (call it when nothing of
        the processor runs there: they are all abandoned). Returns how many went."""
        directory = self.processor_directory(shard, processor)
        try:
            entries = self.storage.list(directory)
        except StorageFileNotFound:
            return 0
        collected = 0
        for entry in entries:
            if entry.is_dir and parse_staging_name(entry.name) is not None:
                self.delete(entry.path)
                collected += 1
        if collected:
            log.info(
                "collected %d abandoned Spark staging director%s of %s on shard %s",
                collected,
                "y" if collected == 1 else "ies",
                processor,
                shard,
            )
        return collected


def by_reference(session: ProcessSession, staging: SparkStaging):
    """The session's content store when Spark's executors can read and write its claims
    themselves (`flow.spark.by_reference`): content on the HDFS the batch is staged
    on, as on a clustered node. None when the content must go through the node (the
    standalone node's local content)."""
    content = session.content_store
    if not isinstance(content, ContentByReference):
        return None
    return content if content.spark_location().storage == staging.storage.address else None


def stage_inputs(
    session: ProcessSession,
    staging: SparkStaging,
    directory: str,
    inputs,
    indexes: list[int] | None = None,
    *,
    make_directory: bool = True,
) -> list[StagedInput]:
    """Each input FlowFile's content as its own file under `directory`/in, streamed in
    chunks through the node; `inputs` are (FlowFile, record format) in batch order,
    or at the batch places `indexes`. Empty content holds no records and gets no file.
    Without `make_directory`, `directory`/in must be there already."""
    storage = staging.storage
    if make_directory:
        storage.mkdir(f"{directory}/in", parents=True, exist_ok=True)
    staged = []
    for index, (flowfile, record_format) in zip(indexes or range(len(inputs)), inputs, strict=False):
        if not flowfile.size:
            continue
        path = f"{directory}/in/{staged_name(index, record_format)}"
        with storage.create(path, overwrite=True) as out, session.read(flowfile) as source:
            while chunk := source.read(STAGE_CHUNK):
                out.write(chunk)
        staged.append(StagedInput(index, record_format, staging.uri(path)))
    return staged


def stage_batch(
    session: ProcessSession,
    spark,
    content: ContentStore,
    staging: SparkStaging,
    directory: str,
    inputs,
    *,
    join: bool = True,
) -> tuple[list[StagedInput], dict[str, int]]:
    """Where Spark reads each input's records, by batch place, and how many inputs got
    there which way (`in_place`, `copied_by_executors`, `copied_by_node`; of those in
    place, `vouched_by_hdfs`; of those copied by the executors, `joined_by_executors`).
    With `content` (`by_reference`), a claim that fills its resource file (unless
    another input shares that resource) is left in place: unread when HDFS vouches for
    its bytes (`flow.spark.file_checksums`; counted as `vouched_by_hdfs` too), or else
    once the executors have checked it by reading; any other claim the executors copy
    under `directory`/in (`flow.spark.by_reference`): small JSON-lines claims into
    shared files when `join` (a batch whose records need not tell their FlowFile),
    the rest each to a file of its own. Without `content`, and for a claim an executor
    could not read, the node copies the content there itself (`stage_inputs`)."""
    if content is None:
        staged = stage_inputs(session, staging, directory, inputs)
        return staged, {
            "in_place": 0,
            "copied_by_executors": 0,
            "copied_by_node": len(staged),
            "vouched_by_hdfs": 0,
            "joined_by_executors": 0,
        }
    staging.storage.mkdir(f"{directory}/in", parents=True, exist_ok=True)
    claims = [
        (index, flowfile.content_claim, record_format)
        for index, (flowfile, record_format) in enumerate(inputs)
        if flowfile.size
    ]
    content.make_readable(claim for _, claim, _ in claims)
    shared = Counter(claim.resource for _, claim, _ in claims)
    location = content.spark_location()
    items = [
        ClaimToStage(
            index, claim, f"{directory}/in/{staged_name(index, record_format)}", in_place=shared[claim.resource] == 1
        )
        for index, claim, record_format in claims
    ]
    vouched = vouched_by_hdfs(
        spark,
        staging.storage,
        staging.uri,
        [
            (item.index, location.resource_path(item.claim), location.checksum_path(item.claim), item.claim.length)
            for item in items
            if item.in_place and item.claim.offset == 0
        ],
    )
    rest = [item for item in items if item.index not in vouched]
    formats = {index: record_format for index, _, record_format in claims}
    joinable = {
        item.index
        for item in rest
        if join and formats[item.index] == "json" and not (item.in_place and item.claim.offset == 0)
    }
    alone, joined = join_small_claims(
        [item for item in rest if item.index in joinable],
        lambda first, last: f"{directory}/in/{joined_name(first, last)}",
    )
    alone += [item for item in rest if item.index not in joinable]
    results = sorted(
        [Staged(index, path) for index, path in vouched.items()] + stage_claims(spark, location, alone + joined),
        key=lambda each: each.index,
    )
    unread = [each for each in results if each.path is None]
    if unread:
        # Not for a node deposed meanwhile (paused, say): its batch directory may have
        # been collected by the adopter, and is never made again (no `make_directory`).
        session.check_admitted()
        log.warning(
            "%s: %d of %d inputs of a Spark batch could not be read from HDFS on the executors (%s); "
            "the node stages them",
            session.component_id,
            len(unread),
            len(claims),
            unread[0].reason,
        )
    indexes = [each.index for each in unread]
    staged = stage_inputs(
        session, staging, directory, [inputs[index] for index in indexes], indexes=indexes, make_directory=False
    )
    staged += [
        StagedInput(each.index, formats[each.index], staging.uri(each.path))
        for each in results
        if each.path is not None
    ]
    in_place = sum(1 for each in results if each.path is not None and not each.path.startswith(directory))
    shared = {group.target for group in joined}
    return (
        sorted(staged, key=lambda each: each.index),
        {
            "in_place": in_place,
            "copied_by_executors": len(results) - len(unread) - in_place,
            "copied_by_node": len(unread),
            "vouched_by_hdfs": len(vouched),
            "joined_by_executors": sum(1 for each in results if each.path in shared),
        },
    )
