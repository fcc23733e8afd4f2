"""Spark step: records/s of one SQL transform over JSON lines through ExecuteSparkSQL, beside plain PySpark.

The same records are written twice: as FlowFiles queued in a durable shard (local
WAL and content, as a node holds them), and as plain files for the anchor. Then, in
one process, on one SparkSession (`--spark-master`, embedded `local[*]` by default),
runs alternate:

  * `custody`: ExecuteSparkSQL takes every queued FlowFile as one batch, as in a
    node, and the session commits. On local disk (a standalone node) the node stages
    the content, Spark runs the query and writes its result, and the node imports the
    result as new FlowFiles. With `--hdfs` the content is a clustered node's (local
    disk and HDFS, `cluster.node.content`) and goes by reference
    (`flow.spark.by_reference`): the executors check each claim on HDFS (and copy
    one that shares its resource file into staging) and checksum the result's files,
    which the node moves into its container. `deterministic` as configured
    (`--deterministic`, default true: what makes a rerun's output ids the same; this
    query is narrow, so its result is coalesced in the order it was read, with no
    shuffle: `flow.spark.records.arrange`).
  * `pyspark`: the same query in plain PySpark, reading the plain files from the
    same filesystem and writing its result back there.

Both sides run once, untimed, over an eighth of the records first (the JVM's JIT
warms up on both code paths), then `--rounds` times each, alternating which goes
first. `ratio_vs_pyspark` = median custody records/s over median pyspark records/s
(the goal is at least 0.8); `round_ratios` are each round's two sides' ratio, which a
machine whose speed drifts during the run disturbs less. Also: the session's start
time, and the peak RSS growth of this Python process (the node's) while
ExecuteSparkSQL runs, over its resident set just before (`node_peak_rss_growth_mb`;
the driver JVM is another process, held to `--driver-memory`).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import tempfile
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from repositories.content import ContentStore
    from repositories.storage import Storage

QUERY = "SELECT id, upper(name) AS name, amount * 2 AS doubled FROM flowfiles"
RECORD = '{{"id": {n}, "name": "record-{n:09d}", "amount": {amount}, "note": "{note}"}}\n'
NOTE = "x" * 40


def add_arguments(parser) -> None:
    parser.add_argument("--total-mb", type=int, help="MB of JSON lines per run (default 1024; --quick 64)")
    parser.add_argument("--flowfile-mb", type=float, default=8.0, help="MB of records per FlowFile")
    parser.add_argument("--rounds", type=int, help="runs of each side, in alternating order (default 3)")
    parser.add_argument("--output-partitions", type=int, default=4, help="ExecuteSparkSQL output_partitions")
    parser.add_argument(
        "--deterministic",
        choices=("true", "false"),
        default="true",
        help="ExecuteSparkSQL deterministic (default true)",
    )
    parser.add_argument("--spark-master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument("--driver-memory", default="512m", help="spark.driver.memory")
    parser.add_argument("--hdfs", metavar="URL", help="stage and read on this HDFS (as a clustered node does)")
    parser.add_argument("--hdfs-base", default="/custody-bench-spark", help="HDFS directory to use (deleted after)")
    parser.add_argument("--dir", help="directory to run in (default: a fresh temporary directory)")


def _records(first: int, size: int) -> bytes:
    lines, total, n = [], 0, first
    while total < size:
        line = RECORD.format(n=n, amount=n % 1000, note=NOTE)
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines).encode()


def _rss_mb() -> float:
    """This process's resident set now (not its high-water mark: the records this
    benchmark holds to load each run would hide any growth under it)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / (1 << 20)


class _PeakRss:
    """The highest resident set seen while the block runs (sampled every 20 ms)."""

    def __enter__(self):
        self.before = self.peak = _rss_mb()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, _rss_mb())

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())

    @property
    def growth_mb(self) -> float:
        return self.peak - self.before


class _Node:
    """A durable shard on local disk with its content, as a node holds its queue."""

    def __init__(self, root: str, content: ContentStore | None = None):
        from flow.commit import DurableCommitter
        from flow.queue import FlowFileQueue
        from flow.shard import open_shard
        from repositories.content import ContentRepositoryConfig, open_filesystem_content_repository
        from repositories.storage import LocalStorage

        self.queue = FlowFileQueue("in", swap_threshold=1 << 30)
        self.shard = open_shard(
            LocalStorage(), os.path.join(root, "shard"), "bench", [self.queue], checkpoint_interval=None
        )
        self.shard.recover()
        if content is None:
            content = open_filesystem_content_repository(
                {"c": os.path.join(root, "content")}, ContentRepositoryConfig(sync_on_close=False)
            )
            content.recover([])
        self.content = content
        self.committer = DurableCommitter(self.shard, self.content, None, outbox=False)

    def session(self, relationships=()):
        from flow.session import ProcessSession

        return ProcessSession(
            component_id="sql",
            component_type="ExecuteSparkSQL",
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            incoming=[self.queue],
            outgoing={"in": [self.queue]},
            auto_terminated=relationships,
            clock_ms=lambda: int(time.time() * 1000),
        )

    def load(self, payloads) -> int:
        session = self.session()
        for payload in payloads:
            flowfile = session.write_bytes(session.create(attributes={"mime.type": "application/x-ndjson"}), payload)
            session.transfer(flowfile, "in")
        session.commit()
        return self.queue.count

    def settle(self) -> None:
        """Wait for the content files being closed in the background to close (a
        clustered node closes a large claim's HDFS file after its commit), as the
        anchor's input files are closed before its clock starts. A file still taking
        appends stays open: sealing it is the processor's, and timed."""
        replicated = getattr(self.content, "replicas", None)
        for replica in getattr(replicated, "replicas", ()):
            for open_resource in replica.open_resources():
                replica.wait_closed(open_resource, 60.0)

    def close(self) -> None:
        self.shard.wal.close()
        self.content.close()


def _clustered_content(storage: Storage, base: str, round_number: int, root: str):
    """A clustered node's content (its container on local disk and on HDFS) under `base`."""
    from cluster.core.incarnation import Incarnation
    from cluster.core.layout import ClusterLayout
    from cluster.node.content import open_node_content

    return open_node_content(
        storage, ClusterLayout("bench", base), Incarnation("bench", round_number + 1), os.path.join(root, "content")
    )


def run(args) -> dict:
    from flow.loading import parse_flow
    from flow.processor import ProcessContext
    from flow.processors.spark import ExecuteSparkSQL
    from flow.services import ServiceRegistry
    from flow.spark.session import build_spark_session
    from flow.spark.staging import SparkStaging
    from repositories.storage import LocalStorage

    total = (args.total_mb or (64 if args.quick else 1024)) << 20
    rounds = args.rounds or 3
    per_flowfile = int(args.flowfile_mb * (1 << 20))
    workdir = args.dir or tempfile.mkdtemp(prefix="custody-bench-spark-")
    os.makedirs(workdir, exist_ok=True)
    if args.hdfs:
        from cluster.clients import ClientFactory, HdfsSettings

        storage = ClientFactory(hdfs=HdfsSettings(args.hdfs)).hdfs_storage()
        base, prefix = args.hdfs_base.rstrip("/"), args.hdfs.rstrip("/")
        storage.mkdir(base, parents=True, exist_ok=True)
    else:
        storage, base, prefix = LocalStorage(), os.path.join(workdir, "fs"), "file://"
        os.makedirs(base, exist_ok=True)

    started = time.monotonic()
    spark = build_spark_session(
        args.spark_master, {"spark.driver.memory": args.driver_memory}, app_name="custody-bench-spark"
    )
    session_start_s = time.monotonic() - started
    services = ServiceRegistry()
    services.register("spark", lambda: spark)
    services.register("spark.staging", lambda: SparkStaging(storage, f"{base}/staging", prefix))
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "sql",
                    "type": "ExecuteSparkSQL",
                    "properties": {
                        "sql": QUERY,
                        "record_format": "json",
                        "batch_size": 1 << 20,
                        "output_partitions": args.output_partitions,
                        "deterministic": args.deterministic == "true",
                    },
                    "auto_terminate": ["success", "original", "failure"],
                }
            ]
        }
    )
    context = ProcessContext("sql", definition.processors["sql"].properties, {}, services=services, has_incoming=True)

    payloads, first = [], 0
    while sum(len(p) for p in payloads) < total:
        payload = _records(first, min(per_flowfile, total - sum(len(p) for p in payloads)))
        first += payload.count(b"\n")
        payloads.append(payload)
    records, size_mb = first, sum(len(p) for p in payloads) / (1 << 20)
    plain = f"{base}/plain"
    storage.mkdir(plain, parents=True, exist_ok=True)
    for index, payload in enumerate(payloads):
        with storage.create(f"{plain}/part-{index:05d}.json", overwrite=True) as out:
            out.write(payload)

    def custody_run(number: int, batch: list[bytes]) -> float:
        """ExecuteSparkSQL over `batch` queued in a fresh node; its seconds."""
        nonlocal rss_growth, inputs_reached
        root = os.path.join(workdir, f"node-{number}")
        node = _Node(root, _clustered_content(storage, base, number, root) if args.hdfs else None)
        try:
            node.load(batch)
            node.settle()
            processor = ExecuteSparkSQL("sql")
            session = node.session(("success", "original", "failure"))
            with _PeakRss() as rss:
                began = time.monotonic()
                processor.on_trigger(context, session)
                if not session.is_closed:
                    session.commit()
                seconds = time.monotonic() - began
            if node.queue.count:
                raise RuntimeError(f"ExecuteSparkSQL left {node.queue.count} FlowFiles queued")
            rss_growth = max(rss_growth, rss.growth_mb)
            phases.append(processor.last_batch_seconds)
            inputs_reached = processor.last_batch_inputs
            return seconds
        finally:
            node.close()
            shutil.rmtree(root, ignore_errors=True)
            if args.hdfs:
                # The round's inputs and outputs, off HDFS: the harness's three DataNodes
                # share one disk, and a run of five rounds left them too little room to
                # take the next round's open files (each holds a whole block in reserve).
                from cluster.core.incarnation import Incarnation
                from cluster.core.layout import ClusterLayout

                storage.delete(
                    f"{ClusterLayout('bench', base).hdfs_content}/{Incarnation('bench', number + 1).id}", recursive=True
                )

    def pyspark_run(paths: list[str]) -> float:
        """The same query in plain PySpark over the plain files `paths`; its seconds."""
        began = time.monotonic()
        spark.read.json([f"{prefix}{path}" for path in paths]).createOrReplaceTempView("flowfiles")
        spark.sql(QUERY).write.mode("overwrite").json(f"{prefix}{base}/anchor-out")
        return time.monotonic() - began

    plain_paths = [f"{plain}/part-{index:05d}.json" for index in range(len(payloads))]
    custody, anchor, rss_growth, phases, inputs_reached = [], [], 0.0, [], {}
    try:
        # Warm-up, not timed: both sides once over an eighth of the records, so that
        # neither pays for the JIT compiling Spark's code paths (the side that ran
        # first in a round paid about 3 s of a 12 s run for it).
        warm = max(1, len(payloads) // 8)
        custody_run(0, payloads[:warm])
        pyspark_run(plain_paths[:warm])
        phases.clear()
        rss_growth = 0.0  # the timed runs' alone
        for round_number in range(1, rounds + 1):
            for side in ("custody", "pyspark") if round_number % 2 else ("pyspark", "custody"):
                if side == "pyspark":
                    anchor.append(records / pyspark_run(plain_paths))
                else:
                    custody.append(records / custody_run(round_number, payloads))
    finally:
        spark.stop()
        storage.delete(base, recursive=True)
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)
    custody_median, anchor_median = statistics.median(custody), statistics.median(anchor)
    return {
        "benchmark": "spark",
        "query": QUERY,
        "filesystem": "hdfs" if args.hdfs else "local",
        "data_path": "by reference" if args.hdfs else "through the node",
        "spark_master": args.spark_master,
        "records": records,
        "megabytes": round(size_mb, 1),
        "flowfiles": len(payloads),
        "rounds": rounds,
        "deterministic": args.deterministic == "true",
        "output_partitions": args.output_partitions,
        "spark_session_start_s": session_start_s,
        "custody_records_per_sec": custody_median,
        "pyspark_records_per_sec": anchor_median,
        "custody_runs": custody,
        "pyspark_runs": anchor,
        "ratio_vs_pyspark": custody_median / anchor_median,
        "round_ratios": [mine / theirs for mine, theirs in zip(custody, anchor, strict=False)],
        "node_peak_rss_growth_mb": rss_growth,
        # How the last custody run's inputs reached Spark (`ExecuteSparkSQL.last_batch_inputs`).
        **{f"inputs_{how}": count for how, count in inputs_reached.items()},
        # Where a custody run's time went (medians): the node staging the content,
        # Spark (read, query, write), the node importing the result.
        **{
            f"custody_{phase}_s": statistics.median(run[phase] for run in phases)
            for phase in ("stage", "spark", "import")
        },
    }
