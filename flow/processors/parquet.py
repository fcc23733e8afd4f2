"""PutParquet: writes batches of record FlowFiles into a Parquet dataset through Spark,
each FlowFile's records exactly once, even when the batch is retried.

The dataset is a directory on the node's Spark filesystem (local disk on a standalone
node, the cluster's HDFS on a clustered one: `flow.spark.staging`), partitioned by
`partition_by` when given. A batch's files are written by Spark into its staging
directory, named by the batch (`part-<batch>-<n>.parquet`), and committed by the
rename of the batch's manifest into the dataset (`flow.spark.datasets`); the node's
ownership of the shard is checked just before that rename, so a node paused through a
takeover cannot commit a batch its adopter also writes.

A retry (the session commit failed after the manifest's rename, the node died, the
shard moved) finds its FlowFiles in a committed manifest, whatever batch they come in
now: they go to `success` without being written again. The FlowFiles that reach
`success` carry `parquet.batch.id`, the batch whose files hold their records.

A FlowFile whose content cannot be read is set aside before its batch is committed
(to `failure`, penalized, `content.error`: `content_failures`), and the batch is
written without it, under the batch id of the FlowFiles left: no manifest ever names it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repositories.storage import files_under, join

from ..errors import UnreadableContent
from ..processor import PropertyDescriptor
from ..spark.batches import batch_id
from ..spark.datasets import DEFAULT_RETENTION_S, ParquetDataset
from ..spark.manifest_format import BatchManifest
from ..spark.staging import stage_inputs
from .content_failures import ContentFailures
from .spark import INPUT_PROPERTIES, RETRY_PROPERTIES, SparkBatchProcessor, time_limit

if TYPE_CHECKING:
    from ..session import ProcessSession

BATCH_ATTRIBUTE = "parquet.batch.id"


class PutParquet(SparkBatchProcessor):
    type_name = "PutParquet"
    description = "Writes batches of record FlowFiles into a Parquet dataset through Spark, exactly once."
    properties = (
        INPUT_PROPERTIES
        + RETRY_PROPERTIES
        + (
            PropertyDescriptor(
                "directory",
                "string",
                required=True,
                description="the dataset: a path on the node's Spark filesystem (HDFS when clustered)",
            ),
            PropertyDescriptor("partition_by", "string", default="", description="a column to partition the files by"),
            PropertyDescriptor("compression", "choice", default="snappy", choices=("snappy", "zstd", "gzip", "none")),
            PropertyDescriptor(
                "manifest_retention",
                "duration",
                default=f"{int(DEFAULT_RETENTION_S)} sec",
                description="how long a batch whose FlowFiles never came back is remembered",
            ),
        )
    )
    relationships = ("success", "failure")

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._datasets: dict[str, ParquetDataset] = {}
        self._seen: dict[str, set[str]] = {}  # batch -> FlowFiles of its manifest seen leaving their queue

    def process_batch(self, context, session: ProcessSession, spark, staging, inputs) -> None:
        try:
            dataset = self._dataset(staging, context)
            committed = dataset.committed()
        except Exception as error:  # noqa: BLE001 - a bad directory, an unreadable manifest, storage down
            self._after_failure(context, session, "(dataset)", [flowfile for flowfile, _ in inputs], error)
            return
        done = [(flowfile, committed[flowfile.id]) for flowfile, _ in inputs if flowfile.id in committed]
        fresh = [(flowfile, record_format) for flowfile, record_format in inputs if flowfile.id not in committed]
        members: dict[str, tuple[BatchManifest, set[str]]] = {}  # batch -> (manifest, its FlowFiles here)
        for flowfile, manifest in done:
            members.setdefault(manifest.batch, (manifest, set()))[1].add(flowfile.id)
        try:
            for manifest, _ in members.values():
                dataset.roll_forward(manifest)
        except Exception as error:  # noqa: BLE001 - storage: retry the whole batch later
            self._after_failure(context, session, "(roll forward)", [flowfile for flowfile, _ in inputs], error)
            return
        for flowfile, manifest in done:
            session.transfer(session.put_attribute(flowfile, BATCH_ATTRIBUTE, manifest.batch), "success")
        directory = None
        unreadable = ContentFailures(self.id, context, session)
        while fresh:
            batch_key = batch_id(flowfile.id for flowfile, _ in fresh)
            directory = staging.batch_directory(session.shard_id, self.id, batch_key, session.epoch)
            try:
                with time_limit(spark, directory, context["job_timeout"]):
                    manifest = self._write(context, session, spark, staging, dataset, directory, batch_key, fresh)
            except UnreadableContent as error:  # met staging, before the manifest: run the rest again
                staging.delete(directory)
                directory = None
                left = [each for each in fresh if each[0].id != error.flowfile.id]
                if len(left) == len(fresh):
                    raise
                unreadable.set_aside(error.flowfile, error)
                fresh = left
                continue
            except Exception as error:  # noqa: BLE001 - the batch's fault or Spark's, sorted there
                staging.delete(directory)
                self._after_failure(context, session, batch_key, [flowfile for flowfile, _ in fresh], error, spark)
                unreadable.log()
                return
            break
        unreadable.log()
        if fresh:
            members[manifest.batch] = (manifest, {flowfile.id for flowfile, _ in fresh})
            for flowfile, _ in fresh:
                session.transfer(session.put_attribute(flowfile, BATCH_ATTRIBUTE, manifest.batch), "success")
            self._succeeded(batch_key)
        try:
            session.commit()
        finally:
            if directory is not None:  # the batch's files were moved into the dataset already
                staging.delete(directory)
        # These FlowFiles left their queue for good: a manifest all of whose FlowFiles
        # did is not needed to recognise a retry any more.
        for batch, (manifest, here) in members.items():
            seen = self._seen.setdefault(batch, set())
            seen |= here
            if seen >= set(manifest.flowfiles):
                del self._seen[batch]
                dataset.forget(manifest)

    def _dataset(self, staging, context) -> ParquetDataset:
        root = staging.resolve(context["directory"])
        dataset = self._datasets.get(root)
        if dataset is None:
            dataset = self._datasets[root] = ParquetDataset(staging.storage, root, context["manifest_retention"])
        return dataset

    def _write(
        self, context, session: ProcessSession, spark, staging, dataset, directory, batch_key, fresh
    ) -> BatchManifest:
        """Write the batch with Spark into staging and commit it; the committed manifest."""
        staged = stage_inputs(session, staging, directory, fresh)
        output = f"{directory}/out"
        files = []
        if staged:
            _, frame = self.read_frame(context, spark, fresh, staged)
            writer = frame.write.mode("overwrite").option("compression", context["compression"])
            column = context["partition_by"].strip()
            if column:
                writer = writer.partitionBy(column)
            writer.parquet(staging.uri(output))
            data = sorted(
                path
                for path in files_under(staging.storage, output)
                if path.endswith(".parquet") and not path.rsplit("/", 1)[-1].startswith((".", "_"))
            )
            for number, path in enumerate(data):
                relative = path[len(output) + 1 :]
                folder = relative.rpartition("/")[0]
                final = (
                    join(dataset.root, folder, f"part-{batch_key}-{number:05d}.parquet")
                    if folder
                    else join(dataset.root, f"part-{batch_key}-{number:05d}.parquet")
                )
                files.append((path, final))
        manifest = BatchManifest(
            batch_key, session.shard_id, session.epoch, tuple(flowfile.id for flowfile, _ in fresh), tuple(files)
        )
        staged_manifest = f"{directory}/manifest.json"
        with staging.storage.create(staged_manifest, overwrite=True) as out:
            out.write(manifest.encode())
            out.sync()
        session.check_admitted()  # a node that lost the shard must not commit into the dataset
        manifest = dataset.commit(manifest, staged_manifest)
        dataset.roll_forward(manifest)
        return manifest
