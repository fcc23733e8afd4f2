"""Records in and out of Spark: which reader a FlowFile's content needs, how a staged
batch becomes one DataFrame, and how a result is written so that a rerun writes the
same files.

Formats: JSON lines ("json"), CSV with a header line ("csv"), Parquet ("parquet").
A FlowFile's format is the processor's `record_format`, or with "auto" its `mime.type`
(`MIME_FORMATS`), else its filename's extension.

A staged input is one file per FlowFile, `in-<index>.<format>` (or, passed by
reference, the resource file its claim fills whole): each record's file name tells
its FlowFile, so the FlowFiles' attributes can be joined to their records as
`_attr_<name>` columns. A batch that asks for none may have small JSON-lines inputs
staged together in one file (`joined_name`; `flow.spark.by_reference`).
Readers run in FAILFAST mode: a record that does not parse fails the batch (it goes
to `failure`), it is never dropped or read as nulls.

A deterministic result (`arrange`) is one a rerun of the batch writes again record
for record, file for file, on any node and any cluster size. Two ways to it:

* A query that moves no record between partitions (no shuffle: projections, filters,
  broadcast joins; every expression deterministic) keeps the order its inputs were
  read in. The read is planned the same way every time (`fixed_read_plan`): splits
  sized from the batch's bytes and the partition count asked for, never from the
  cores Spark has, and grouped by index, never by where HDFS keeps the blocks. The
  result is then coalesced, without a shuffle, and costs nothing more than the query.
* Any other query (aggregations, sorts, shuffled joins) is hash-partitioned by every
  column and each partition sorted by every column: a shuffle and a sort.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FORMATS = ("json", "csv", "parquet")
MIME_FORMATS: Mapping[str, str] = {
    "application/json": "json",
    "application/x-ndjson": "json",
    "application/jsonl": "json",
    "application/x-jsonlines": "json",
    "application/json-lines": "json",
    "text/csv": "csv",
    "application/csv": "csv",
    "application/vnd.apache.parquet": "parquet",
    "application/parquet": "parquet",
    "application/x-parquet": "parquet",
}
EXTENSION_FORMATS: Mapping[str, str] = {
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".csv": "csv",
    ".parquet": "parquet",
}
OUTPUT_MIME: Mapping[str, str] = {
    "json": "application/x-ndjson",
    "csv": "text/csv",
    "parquet": "application/vnd.apache.parquet",
}
ATTRIBUTE_PREFIX = "_attr_"
FILE_COLUMN = "_custody_file"


class RecordFormatError(ValueError):
    """A FlowFile whose record format cannot be told; the message says how to tell it."""


def format_of(attributes: Mapping[str, str], configured: str = "auto") -> str:
    if configured != "auto":
        return configured
    mime = attributes.get("mime.type", "").split(";", 1)[0].strip().lower()
    if mime in MIME_FORMATS:
        return MIME_FORMATS[mime]
    extension = posixpath.splitext(attributes.get("filename", ""))[1].lower()
    if extension in EXTENSION_FORMATS:
        return EXTENSION_FORMATS[extension]
    raise RecordFormatError(
        f"cannot tell the record format of FlowFile {attributes.get('uuid') or attributes.get('filename')}: "
        f"mime.type {mime or '(none)'!s} and filename {attributes.get('filename', '')!r} name none of "
        f"{', '.join(FORMATS)}; set mime.type, or the processor's record_format"
    )


def staged_name(index: int, record_format: str) -> str:
    return f"in-{index:06d}.{record_format}"


def joined_name(first: int, last: int) -> str:
    """The staging file of the JSON-lines inputs `first` to `last` copied together."""
    return f"in-{first:06d}-{last:06d}.json"


def attribute_columns(spec: str, attributes: Sequence[Mapping[str, str]]) -> list[str]:
    """The attribute names `spec` asks for ("" none, "*" every one the batch has, else
    a comma-separated list), in a stable order."""
    spec = spec.strip()
    if not spec:
        return []
    if spec == "*":
        return sorted({name for each in attributes for name in each})
    return [name.strip() for name in spec.split(",") if name.strip()]


@dataclass(frozen=True)
class StagedInput:
    index: int
    record_format: str
    uri: str


def read_batch(
    spark,
    inputs: Sequence[StagedInput],
    *,
    infer_csv_schema: bool = True,
    attributes: Mapping[int, Mapping[str, str]] | None = None,
    columns: Sequence[str] = (),
):
    """One DataFrame of every staged input's records (columns of different inputs are
    matched by name, a column one input lacks is null there), with the attribute
    `columns` of each record's FlowFile joined as `_attr_<name>`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    frames = []
    for record_format in FORMATS:
        # Inputs copied into one shared file name it each: it is read once.
        uris = list(dict.fromkeys(each.uri for each in inputs if each.record_format == record_format))
        if not uris:
            continue
        reader = spark.read
        if record_format == "json":
            frame = reader.option("mode", "FAILFAST").json(uris)
        elif record_format == "csv":
            frame = (
                reader.option("mode", "FAILFAST")
                .option("header", True)
                .option("inferSchema", infer_csv_schema)
                .csv(uris)
            )
        else:
            frame = reader.parquet(*uris)
        if columns:
            frame = frame.withColumn(FILE_COLUMN, F.col("_metadata.file_name"))
        frames.append(frame)
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame, allowMissingColumns=True)
    if not columns:
        return combined
    # Each record's FlowFile is the one whose file it was read from: a file of its own
    # in staging, or its claim's whole resource file (passed by reference), each named
    # once in a batch.
    schema = StructType(
        [StructField(FILE_COLUMN, StringType(), False)]
        + [StructField(ATTRIBUTE_PREFIX + name, StringType(), True) for name in columns]
    )
    attributes = attributes or {}
    rows = [
        (posixpath.basename(each.uri), *(attributes.get(each.index, {}).get(name) for name in columns))
        for each in inputs
    ]
    table = spark.createDataFrame(rows, schema)
    return combined.join(F.broadcast(table), FILE_COLUMN, "left").drop(FILE_COLUMN)


# Split sizes Spark's defaults give, fixed here so that a cluster's own settings do
# not change them between a batch and its rerun.
MAX_SPLIT_BYTES = 128 << 20
OPEN_COST_BYTES = 4 << 20


def fixed_read_plan(partitions: int) -> dict[str, str]:
    """Session conf under which Spark splits a batch's files the same way on every run:
    the split size comes from the batch's bytes over `partitions` (Spark takes its
    cores otherwise), and no block locations are listed (a coalesce would otherwise
    group splits by the hosts holding them, which change when HDFS moves a replica)."""
    return {
        "spark.sql.files.maxPartitionBytes": str(MAX_SPLIT_BYTES),
        "spark.sql.files.openCostInBytes": str(OPEN_COST_BYTES),
        "spark.sql.files.minPartitionNum": str(partitions),
        "spark.sql.sources.ignoreDataLocality": "true",
    }


# Unset on a batch's session: when set, it merges splits by a cluster's taste.
UNSET_READ_CONF = ("spark.sql.files.maxPartitionNum",)


def plan_batch_reads(spark, partitions: int) -> None:
    """Apply `fixed_read_plan` to `spark`, a session of the batch's own."""
    for key, value in fixed_read_plan(partitions).items():
        spark.conf.set(key, value)
    for key in UNSET_READ_CONF:
        spark.conf.unset(key)


# No cap on a split's size: Spark's split size is then the batch's bytes (each file
# counted with its open cost) over the partitions asked for.
UNCAPPED_SPLIT_BYTES = 1 << 62


def read_in_one_split_per_partition(spark) -> None:
    """Under `fixed_read_plan`, make `spark` read a batch in about `partitions` splits of
    one size, not in splits of at most 128 MB that a coalesce then groups by count (13
    splits into 4 tasks gave one task a third more records than each other: it ran
    alone at the end). For a narrow query only: it runs in those tasks anyway. A shuffle
    keeps the smaller splits, which feed every core."""
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(UNCAPPED_SPLIT_BYTES))


# Physical plan nodes that move records between partitions, take the first few of
# them (which depends on the order partitions finish in), or read what another
# query left (a cache, partitioned its own way).
SHUFFLING_NODES = frozenset(
    {
        "Exchange",
        "ReusedExchange",
        "ShuffleQueryStage",
        "AQEShuffleRead",
        "CollectLimit",
        "GlobalLimit",
        "TakeOrderedAndProject",
        "CollectTail",
        "TableCacheQueryStage",
        "InMemoryTableScan",
    }
)
_NODE_NAME = re.compile(r"^[\s:+\-|]*(?:\*\(\d+\)\s*)?([A-Za-z]+)")


def keeps_read_order(plan: str) -> bool:
    """True when the physical plan `plan` (its tree string) moves no record between
    partitions: each output partition is its input partition's records, in order."""
    for line in plan.splitlines():
        match = _NODE_NAME.match(line)
        if match and match.group(1) in SHUFFLING_NODES:
            return False
    return True


def is_narrow(frame) -> bool:
    """True when `frame` gives the same records in the same order from the same read
    plan: no shuffle (`keeps_read_order`), and every expression deterministic."""
    execution = frame._jdf.queryExecution()
    return bool(execution.analyzed().deterministic()) and keeps_read_order(execution.executedPlan().toString())


def arrange(frame, partitions: int, deterministic: bool):
    """`frame` in (at most) `partitions` partitions. Deterministic: the same records
    always land in the same partition in the same order: as read, under
    `fixed_read_plan`, when the query is narrow (`is_narrow`); else hash-partitioned
    and sorted by every column, whatever order Spark read them in (an
    AnalysisException when a column cannot be hashed or sorted, a map for instance).
    A narrow query's session then reads in one split per partition
    (`read_in_one_split_per_partition`): it sets the session's conf, before the
    result's write plans its read."""
    columns = frame.columns
    coalesced = frame.coalesce(partitions)  # no shuffle: at most `partitions`, as Spark read them
    narrow = bool(columns) and is_narrow(coalesced)
    if narrow:
        read_in_one_split_per_partition(frame.sparkSession)
    if not deterministic or not columns or narrow:
        return coalesced
    if partitions == 1:
        return frame.coalesce(1).sortWithinPartitions(*columns)
    return frame.repartition(partitions, *columns).sortWithinPartitions(*columns)


def write_records(frame, uri: str, record_format: str) -> None:
    """Write `frame` under `uri` (replacing what an earlier attempt left there)."""
    writer = frame.write.mode("overwrite").format(record_format)
    if record_format == "csv":
        writer = writer.option("header", True)
    writer.save(uri)
