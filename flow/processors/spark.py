"""Spark in a flow: ExecuteSparkSQL and SparkTransform, over batches of record FlowFiles.

Each trigger takes up to `batch_size` FlowFiles whose content is records (JSON lines,
CSV with a header, Parquet: `flow.spark.records`), gives them to the node's Spark
session as one DataFrame (the view `flowfiles` for SQL), and turns the result into
new FlowFiles: one for the batch (`output_partitions` = 1) or one per non-empty
partition.

Exactly once: the inputs leave their queue in the same session commit that creates
the outputs, so a node that dies mid-job leaves the inputs queued and whoever runs the
shard next (the node after a restart, or the adopter) runs them again; nothing of the
first attempt was ever a FlowFile. The batch's identity, staging directory and output
ids derive from the input ids (`flow.spark.batches`), so a rerun of the same FlowFiles
gives the same output ids; the outputs are the same records, file for file, only when
`deterministic` (`flow.spark.records.arrange`: a narrow query keeps a fixed read order,
any other is hash-partitioned and sorted), otherwise output ids are random.

Data path: each input's content reaches the batch's staging directory
(`flow.spark.staging`: local disk on a standalone node, HDFS on a clustered one),
through the node or by reference, Spark reads it there and writes its result there,
and the result's part files are renamed into the content repository with checksum
files of their own (`flow.spark.outputs`; copied in when staging is on another
filesystem). Content is streamed in chunks; no whole batch is held in the node's
memory. The staging directory is deleted after the batch and, for anything
a crash left, when the processor first runs on the shard.

Lineage: every output's parents are the batch's inputs (a JOIN event; a FORK for a
batch of one), and the inputs go to `original`.

Failures (`flow.spark.failures`): a batch the input breaks goes to `failure` whole,
each FlowFile with the reason in `spark.error`; when Spark itself fails (its master is
down) the session rolls back and the processor waits `retry_backoff`, doubling up to
`MAX_BACKOFF_S`, and says why in the log. A FlowFile whose record format cannot be
told goes to `failure` alone, and so does one whose content cannot be read (damaged or
gone: `content.error`, `content_failures`): the batch is run again without it, under
the batch id of the FlowFiles left.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
import time
import weakref
from typing import TYPE_CHECKING

from ..errors import NotAdmitted, ServiceError, UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from ..spark.batches import batch_id, output_id, part_index
from ..spark.by_reference import checksum_outputs
from ..spark.failures import ERROR_ATTRIBUTE, BatchInputError, describe, is_input_error, is_spark_unavailable
from ..spark.outputs import checksum_local_parts, local_taker
from ..spark.records import (
    FORMATS,
    OUTPUT_MIME,
    RecordFormatError,
    StagedInput,
    arrange,
    attribute_columns,
    format_of,
    plan_batch_reads,
    read_batch,
    write_records,
)
from ..spark.session import SPARK_SERVICE
from ..spark.staging import STAGING_SERVICE, by_reference, stage_batch
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from repositories.content import ContentStore

    from ..session import ProcessSession

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0
MAX_REMEMBERED_BATCHES = 1000  # batches whose Spark failures are counted
VIEW = "flowfiles"


INPUT_PROPERTIES = (
    PropertyDescriptor("batch_size", "integer", default=100, description="FlowFiles per Spark job"),
    PropertyDescriptor(
        "record_format",
        "choice",
        default="auto",
        choices=("auto",) + FORMATS,
        description="auto: from mime.type, else the filename's extension",
    ),
    PropertyDescriptor(
        "infer_csv_schema",
        "boolean",
        default=True,
        description="CSV columns typed from their values (false: all strings)",
    ),
    PropertyDescriptor(
        "attribute_columns",
        "string",
        default="",
        description="attributes given as _attr_<name> columns: a comma-separated list, or *",
    ),
)
OUTPUT_PROPERTIES = (
    PropertyDescriptor("output_format", "choice", default="json", choices=FORMATS),
    PropertyDescriptor(
        "output_partitions",
        "integer",
        default=1,
        description="1: one output FlowFile per batch; N: one per non-empty partition",
    ),
    PropertyDescriptor(
        "deterministic",
        "boolean",
        default=True,
        description="a rerun writes the same outputs under the same ids (a query "
        "that shuffles has its output hash-partitioned and sorted by all "
        "columns for it)",
    ),
)
RETRY_PROPERTIES = (
    PropertyDescriptor(
        "job_timeout",
        "duration",
        default="10 min",
        description="a batch's Spark jobs are cancelled after this (a cluster with no "
        "executors would otherwise hold the batch forever); it is retried",
    ),
    PropertyDescriptor(
        "retry_backoff",
        "duration",
        default="1 sec",
        description="first wait after Spark itself failed (it doubles, up to a minute)",
    ),
    PropertyDescriptor(
        "max_attempts", "integer", default=5, description="Spark failures of one batch before it goes to failure"
    ),
)


# Once a batch is past its time, its group is cancelled again at this interval until the
# batch returns: Spark cancels only the jobs active at that moment, and a batch can be
# between jobs when its time runs out (planning the next one, or waiting on the driver).
RECANCEL_INTERVAL_S = 1.0


@contextlib.contextmanager
def time_limit(spark, group: str, seconds: float):
    """The Spark jobs this thread starts inside are cancelled after `seconds` (their
    group is `group`), and so is any it starts after that; the job then fails with
    Spark's "cancelled" error."""
    context = spark.sparkContext
    context.setJobGroup(group, f"custody batch {group}", interruptOnCancel=True)
    done = threading.Event()

    def cancel_when_late() -> None:
        if done.wait(seconds):
            return
        while True:
            try:
                context.cancelJobGroup(group)
            except Exception as error:  # noqa: BLE001 - a stopped context has nothing left to cancel
                log.debug("cancelling Spark job group %s: %s", group, error)
            if done.wait(RECANCEL_INTERVAL_S):
                return

    canceller = threading.Thread(target=cancel_when_late, name=f"spark-time-limit-{group[-20:]}", daemon=True)
    canceller.start()
    try:
        yield
    finally:
        done.set()
        context.setLocalProperty("spark.jobGroup.id", None)


def has_executors(spark) -> bool:
    """True when the session has somewhere to run tasks: always for a local master,
    else at least one executor besides the driver."""
    try:
        context = spark.sparkContext
        if context.master.startswith("local"):
            return True
        return len(context._jsc.sc().statusTracker().getExecutorInfos()) > 1
    except Exception:  # noqa: BLE001 - a session that cannot answer has none
        return False


# A session with no executors is waiting for its cluster, or was forgotten by it: a
# standalone master that restarted does not know the application any more, and Spark
# waits for it forever. A session that ran a job before, or has waited this long, is
# taken as forgotten; a new one is given the time its executors take to start (a
# loaded machine starts an executor's JVM in more than a short job_timeout).
ORPHAN_GRACE_S = 120.0
_FIRST_SEEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # session -> monotonic time
_RAN_A_JOB: weakref.WeakSet = weakref.WeakSet()


def forgotten_by_its_cluster(spark, now: float | None = None) -> bool:
    """True when `spark` should be replaced: no executors, and either it ran a job
    before (its executors are gone) or it has had none for `ORPHAN_GRACE_S`."""
    if has_executors(spark):
        return False
    now = time.monotonic() if now is None else now
    return spark in _RAN_A_JOB or now - _FIRST_SEEN.get(spark, now) >= ORPHAN_GRACE_S


class SparkBatchProcessor(Processor):
    """What ExecuteSparkSQL and SparkTransform share; `transform(context, spark, frame)`
    is theirs."""

    properties = INPUT_PROPERTIES + OUTPUT_PROPERTIES + RETRY_PROPERTIES
    relationships = ("success", "original", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        problems = []
        if properties["batch_size"] < 1:
            problems.append(("batch_size", "must be at least 1"))
        if properties.get("output_partitions", 1) < 1:
            problems.append(("output_partitions", "must be at least 1"))
        if properties["max_attempts"] < 1:
            problems.append(("max_attempts", "must be at least 1"))
        return problems

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._lock = threading.Lock()
        self._collected: set[str] = set()  # shards whose abandoned staging is gone
        self._by_reference: set[str] = set()  # shards whose batches went by reference (said once)
        self._retry_at = 0.0
        self._backoff = 0.0
        self._attempts: dict[str, int] = {}  # batch -> Spark failures so far
        # Where the last batch's time went: the node staging it, Spark, the node
        # importing the result (seconds; for benchmarks and profiles).
        self.last_batch_seconds: dict[str, float] = {}
        # How the last batch's inputs reached Spark: read in place (by reference), copied
        # to staging by the executors (by reference) or by the node.
        self.last_batch_inputs: dict[str, int] = {}

    def transform(self, context: ProcessContext, spark, frame):
        raise NotImplementedError

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        if time.monotonic() < self._retry_at:
            context.yield_()
            return
        batch = session.get_batch(context["batch_size"])
        if not batch:
            context.yield_()
            return
        inputs = []
        for flowfile in batch:
            try:
                inputs.append((flowfile, format_of(flowfile.attributes, context["record_format"])))
            except RecordFormatError as error:
                self._fail(session, [flowfile], str(error))
        if not inputs:
            return
        try:
            spark = context.service(SPARK_SERVICE)
            staging = context.service(STAGING_SERVICE)
        except ServiceError as error:
            self._back_off(context, session, f"the node's Spark session is not available: {error}")
            return
        self._collect_abandoned(staging, session)
        unreadable = ContentFailures(self.id, context, session)
        while inputs:
            try:
                self.process_batch(context, session, spark, staging, inputs)
                break
            except UnreadableContent as error:
                # Staging met it, before Spark ran and before anything was routed.
                left = [each for each in inputs if each[0].id != error.flowfile.id]
                if len(left) == len(inputs):
                    raise
                unreadable.set_aside(error.flowfile, error)
                inputs = left
        unreadable.log()

    def process_batch(self, context, session: ProcessSession, spark, staging, inputs) -> None:
        """Run `inputs` ((FlowFile, record format) pairs) on Spark and route them. Raises
        `UnreadableContent`, having routed nothing, for an input whose content cannot be
        read: the caller sets it aside and runs the others."""
        # In the order of their ids: a rerun stages the same files in the same order
        # however its queue gave it the batch, so Spark reads them the same way.
        inputs = sorted(inputs, key=lambda each: each[0].id)
        batch_key = batch_id(flowfile.id for flowfile, _ in inputs)
        _FIRST_SEEN.setdefault(spark, time.monotonic())
        parents = [flowfile for flowfile, _ in inputs]
        directory = staging.batch_directory(session.shard_id, self.id, batch_key, session.epoch)
        content = by_reference(session, staging)
        began = time.perf_counter()
        try:
            with time_limit(spark, directory, context["job_timeout"]):
                staged = self._stage(context, session, spark, content, staging, directory, inputs)
                staged_at = time.perf_counter()
                outputs = self._run(context, spark, staging, directory, inputs, staged)
                ran_at = time.perf_counter()
                taker = content if content is not None else local_taker(session, staging, directory)
                parts = self._parts(spark, content, taker, staging, outputs)
        except UnreadableContent:
            staging.delete(directory)
            raise
        except Exception as error:  # noqa: BLE001 - sorted below: the batch's fault or Spark's
            staging.delete(directory)
            self._after_failure(context, session, batch_key, parents, error, spark)
            return
        _RAN_A_JOB.add(spark)
        try:
            self._emit(context, session, staging, taker, batch_key, parents, parts)
        except NotAdmitted as error:
            self._after_failure(context, session, batch_key, parents, error, spark)
            return
        finally:
            staging.delete(directory)
        self.last_batch_seconds = {
            "stage": staged_at - began,
            "spark": ran_at - staged_at,
            "import": time.perf_counter() - ran_at,
        }
        log.debug(
            "%s: batch %s of %d FlowFile(s) on shard %s: staged in %.2f s, Spark %.2f s, imported in %.2f s "
            "(inputs %s)",
            self.id,
            batch_key,
            len(parents),
            session.shard_id,
            *self.last_batch_seconds.values(),
            self.last_batch_inputs,
        )
        self._succeeded(batch_key)

    # -- the steps of a batch --------------------------------------------------------

    def _collect_abandoned(self, staging, session: ProcessSession) -> None:
        """Before the first batch of this processor on the shard: whatever is staged is
        abandoned. Under the lock, so that no other task stages a batch meanwhile."""
        with self._lock:
            if session.shard_id not in self._collected:
                staging.collect(session.shard_id, self.id)
                self._collected.add(session.shard_id)

    def _stage(
        self, context, session: ProcessSession, spark, content: ContentStore, staging, directory: str, inputs
    ) -> list[StagedInput]:
        """Where Spark reads each input's records (`flow.spark.staging.stage_batch`): small
        inputs may share a staging file unless their records must tell their FlowFile."""
        if content is not None and session.shard_id not in self._by_reference:
            self._by_reference.add(session.shard_id)
            log.info(
                "%s: batches of shard %s go to Spark by reference: the executors read the claims and write "
                "the results on HDFS",
                self.id,
                session.shard_id,
            )
        staged, self.last_batch_inputs = stage_batch(
            session, spark, content, staging, directory, inputs, join=not context["attribute_columns"].strip()
        )
        return staged

    @staticmethod
    def _parts(spark, content: ContentStore, taker, staging, output: str | None) -> list[tuple[int, str, str | None]]:
        """(partition, path, checksum file or None) of each non-empty file of the result,
        by partition. A checksum file is there when the content store takes the part
        files in whole (`flow.spark.outputs`): written by the executors by reference,
        by the node on its local disk."""
        parts = []
        if output is not None:
            for entry in staging.storage.list(output):
                index = part_index(entry.name)
                if index is not None and entry.length:
                    parts.append((index, entry.path))
        parts.sort()
        paths = [path for _, path in parts]
        if content is not None:
            taken = dict(checksum_outputs(spark, content.spark_location(), paths))
        elif taker is not None:
            taken = dict(checksum_local_parts(taker, staging, paths))
        else:
            return [(index, path, None) for index, path in parts]
        return [(index, path, taken[path]) for index, path in parts]

    def _succeeded(self, batch_key: str) -> None:
        self._attempts.pop(batch_key, None)
        self._backoff = 0.0

    @staticmethod
    def read_frame(context, spark, inputs, staged):
        """(a Spark session of the batch's own, the batch's records as one DataFrame).
        Its own session: its temporary view `flowfiles` is seen by no other batch (the
        SparkContext, and so the executors, are shared)."""
        spark = spark.newSession()
        plan_batch_reads(spark, context.get("output_partitions", 1))
        columns = attribute_columns(context["attribute_columns"], [flowfile.attributes for flowfile, _ in inputs])
        frame = read_batch(
            spark,
            staged,
            infer_csv_schema=context["infer_csv_schema"],
            attributes={
                index: {**flowfile.attributes, "uuid": flowfile.id} for index, (flowfile, _) in enumerate(inputs)
            },
            columns=columns,
        )
        return spark, frame

    def _run(self, context, spark, staging, directory: str, inputs, staged) -> str | None:
        """Run the batch on Spark; the storage path of its output directory (None when no
        input holds a record)."""
        if not staged:
            return None
        spark, frame = self.read_frame(context, spark, inputs, staged)
        try:
            result = self.transform(context, spark, frame)
        except Exception as error:  # noqa: BLE001 - SQL that does not compile, a function that raises
            if is_input_error(error):
                raise
            raise BatchInputError(f"{type(error).__name__}: {error}") from error
        if result is None or not hasattr(result, "write"):
            raise BatchInputError(f"the transform returned {type(result).__name__}, not a DataFrame")
        output = f"{directory}/out"
        write_records(
            arrange(result, context["output_partitions"], context["deterministic"]),
            staging.uri(output),
            context["output_format"],
        )
        return output

    def _emit(self, context, session: ProcessSession, staging, taker, batch_key, parents, parts) -> None:
        record_format = context["output_format"]
        if taker is not None and parts:
            # Renames into the content container are this batch's effect outside the
            # session: a node that may no longer commit for the shard makes none.
            session.check_admitted()
        for index, path, checksums in parts:
            identity = output_id(batch_key, index) if context["deterministic"] else None
            flowfile = session.create(
                parents,
                {
                    "mime.type": OUTPUT_MIME[record_format],
                    "filename": f"{batch_key}-{index}.{record_format}",
                    "spark.batch.id": batch_key,
                    "spark.partition": str(index),
                },
                identity=identity,
            )
            if checksums is not None:
                flowfile = session.attach_content(flowfile, taker.take_file(path, checksums))
            else:
                with staging.storage.open_read(path) as stream:
                    flowfile = session.import_from(flowfile, stream)
            session.transfer(flowfile, "success")
        for flowfile in parents:
            session.transfer(flowfile, "original")

    # -- failures --------------------------------------------------------------------

    def _after_failure(
        self, context, session: ProcessSession, batch_key: str, batch, error: BaseException, spark=None
    ) -> None:
        message = describe(error)
        if isinstance(error, NotAdmitted):
            log.warning("%s: %s; batch %s rolls back", self.id, error, batch_key)
            session.rollback()
            context.yield_()
            return
        if is_input_error(error):
            log.warning("%s: batch %s of %d FlowFile(s) goes to failure: %s", self.id, batch_key, len(batch), message)
            self._fail(session, batch, message)
            return
        if is_spark_unavailable(error):
            if spark is not None and forgotten_by_its_cluster(spark):
                context.discard_service(SPARK_SERVICE, "its cluster gave it no executors")
            self._back_off(context, session, f"Spark is not available for batch {batch_key}: {message}")
            return
        attempts = self._attempts[batch_key] = self._attempts.pop(batch_key, 0) + 1
        while len(self._attempts) > MAX_REMEMBERED_BATCHES:  # the least recently failed go first
            del self._attempts[next(iter(self._attempts))]
        if attempts >= context["max_attempts"]:
            log.error(
                "%s: batch %s failed on Spark %d times; it goes to failure: %s", self.id, batch_key, attempts, message
            )
            self._attempts.pop(batch_key, None)
            self._fail(session, batch, f"failed on Spark {attempts} times: {message}")
            return
        self._back_off(
            context,
            session,
            f"Spark failed running batch {batch_key} (attempt {attempts} of {context['max_attempts']}): {message}",
        )

    def _back_off(self, context, session: ProcessSession, reason: str) -> None:
        session.rollback()
        self._backoff = min(MAX_BACKOFF_S, max(context["retry_backoff"], self._backoff * 2))
        self._retry_at = time.monotonic() + self._backoff
        log.warning("%s: %s; the session rolled back, retrying in %.1f s", self.id, reason, self._backoff)
        context.yield_()

    @staticmethod
    def _fail(session: ProcessSession, batch, message: str) -> None:
        for flowfile in batch:
            session.transfer(session.put_attribute(flowfile, ERROR_ATTRIBUTE, message), "failure")


class ExecuteSparkSQL(SparkBatchProcessor):
    type_name = "ExecuteSparkSQL"
    description = "Runs SQL over a batch of record FlowFiles (the view `flowfiles`) on the node's Spark session."
    properties = SparkBatchProcessor.properties + (
        PropertyDescriptor("sql", "string", required=True, description="a query over the view `flowfiles`"),
    )

    def transform(self, context, spark, frame):
        frame.createOrReplaceTempView(VIEW)
        return spark.sql(context["sql"])


class SparkTransform(SparkBatchProcessor):
    type_name = "SparkTransform"
    description = (
        "Runs a Python function `module:function(df, params) -> DataFrame` over a batch of record "
        "FlowFiles on the node's Spark session; dynamic properties are its params."
    )
    properties = SparkBatchProcessor.properties + (
        PropertyDescriptor("function", "string", required=True, description="module:function"),
    )
    dynamic_properties = True

    @classmethod
    def validate(cls, properties, dynamic):
        problems = super().validate(properties, dynamic)
        module, colon, name = properties["function"].partition(":")
        if not colon or not module.strip() or not name.strip():
            problems.append(("function", f"expected module:function, got {properties['function']!r}"))
        return problems

    def transform(self, context, spark, frame):
        module_name, _, name = context["function"].partition(":")
        try:
            function = getattr(importlib.import_module(module_name.strip()), name.strip())
        except (ImportError, AttributeError) as error:
            raise BatchInputError(f"cannot load the function {context['function']}: {error}") from None
        params = {key: expression.evaluate() for key, expression in context.dynamic.items()}
        return function(frame, params)
