"""Cluster-wide provenance analysis on Spark, over the Parquet export of every node
(`repositories.provenance.parquet_export`: `<root>/node=<node>/hour=<hour>/*.parquet`).

    events = load_events(spark, "hdfs://namenode:8020/custody/c1/provenance")
    graph = lineage(events, uuid)      # ancestors, descendants, edges and events, as a dict
    rows = per_minute(events)          # per component and minute: counts by type, latency

Lineage follows `repositories.provenance.lineage` (what `custody provenance lineage`
finds on one node), over the events of every node at once, so a lineage that crosses
nodes (a FlowFile forked by the node that adopted its shard) is found whole: FORK and
CLONE belong to the parent and list `child_uuids`, JOIN belongs to the child and lists
`parent_uuids`, REPLAY links both ways; an event without the explicit list stands for
its own FlowFile. Ancestors are found walking up only, descendants walking down only
(siblings are not part of a lineage). The events kept are, for every FlowFile of the
lineage, its own events and the lineage events that name it. Event ids are unique per
node only: an event is named by (node, event_id).

Latency, per minute: for each event, its time minus the FlowFile's entry time, taken
as the earliest event of the whole cluster that names the FlowFile as its own or as a
child of a FORK or CLONE (the moment it came into being as far as provenance knows).
Events carry no lineage start date, so this is time since the FlowFile itself
appeared, not since its oldest ancestor did. p50 is exact (Spark's `percentile`, the
mean of the two middle values when there are two).

The walk runs one small Spark job per generation of the lineage, on the cached edges
(lineage events only); lineages are shallow, and the frontier stays on the driver.
"""

from __future__ import annotations

import datetime as dt

from repositories.provenance.event import LINEAGE_TYPES

from ..errors import FlowError
from .failures import describe

MINUTE_MS = 60_000
LINEAGE_TYPE_NAMES = sorted(t.value for t in LINEAGE_TYPES)


class ProvenanceAnalysisError(FlowError):
    """The analysis cannot answer; the message names what (the source, the uuid)."""


class SourceUnreadable(ProvenanceAnalysisError):
    def __init__(self, source: str, reason: str):
        self.source = source
        super().__init__(f"cannot read provenance events from {source}: {reason}")


class UnknownFlowFile(ProvenanceAnalysisError):
    def __init__(self, uuid: str, source: str):
        self.uuid, self.source = uuid, source
        super().__init__(f"no provenance event names FlowFile {uuid} in {source}")


def load_events(spark, source: str):
    """The exported events under `source` (every node, every hour) as a DataFrame.

    The `node` column comes from the files, so partition discovery is off; files not
    named `*.parquet` (partials being written) are left out."""
    try:
        events = spark.read.option("recursiveFileLookup", "true").option("pathGlobFilter", "*.parquet").parquet(source)
    except Exception as error:  # noqa: BLE001 - Spark's and py4j's errors share no root
        raise SourceUnreadable(source, describe(error)) from None
    if "event_id" not in events.columns:
        raise SourceUnreadable(source, "it holds no exported provenance events (no event_id column)")
    return events


def lineage_edges(events):
    """One row per (parent, child) link of a lineage event: parent, child, node, event_id, event_type."""
    from pyspark.sql import functions as F

    def own_if_empty(column):
        return F.when(F.size(F.coalesce(F.col(column), F.array())) > 0, F.col(column)).otherwise(
            F.array(F.col("flowfile_uuid"))
        )

    linking = events.where(F.col("event_type").isin(LINEAGE_TYPE_NAMES))
    return (
        linking.select(
            F.explode(own_if_empty("parent_uuids")).alias("parent"),
            own_if_empty("child_uuids").alias("kids"),
            "node",
            "event_id",
            "event_type",
        )
        .select("parent", F.explode("kids").alias("child"), "node", "event_id", "event_type")
        .where(F.col("parent") != F.col("child"))
    )


def lineage(events, uuid: str, *, source: str = "the events given", max_flowfiles: int = 10_000) -> dict:
    """The cluster-wide lineage of `uuid`; raises UnknownFlowFile (naming `source`) if
    no event names it."""
    from pyspark.sql import functions as F

    edges = lineage_edges(events).cache()
    try:
        ancestors, up = _walk(edges, uuid, "child", "parent", max_flowfiles)
        descendants, down = _walk(edges, uuid, "parent", "child", max_flowfiles - len(ancestors))
    finally:
        edges.unpersist()
    flowfiles = sorted({uuid} | ancestors | descendants)
    named = F.array(*[F.lit(u) for u in flowfiles])
    kept = events.where(
        F.col("flowfile_uuid").isin(flowfiles)
        | (
            F.col("event_type").isin(LINEAGE_TYPE_NAMES)
            & (
                F.arrays_overlap(F.coalesce("parent_uuids", F.array()), named)
                | F.arrays_overlap(F.coalesce("child_uuids", F.array()), named)
            )
        )
    )
    found = [_event_dict(row) for row in kept.collect()]
    if not found:
        raise UnknownFlowFile(uuid, source)
    found.sort(key=lambda e: (e["event_time_ms"], e["node"], e["event_id"]))
    links = sorted(set(up) | set(down))
    return {
        "root": uuid,
        "ancestors": sorted(ancestors),
        "descendants": sorted(descendants),
        "edges": [{"parent": p, "child": c, "node": n, "event_id": i, "event_type": t} for p, c, n, i, t in links],
        "nodes": sorted({e["node"] for e in found}),
        "events": found,
        "truncated": len(ancestors) + len(descendants) >= max_flowfiles,
    }


def _walk(edges, root: str, near: str, far: str, limit: int) -> tuple[set[str], list[tuple]]:
    """FlowFiles reached from `root` along edges `near` -> `far`, generation by generation."""
    from pyspark.sql import functions as F

    found: set[str] = set()
    links: list[tuple] = []
    frontier = {root}
    while frontier and len(found) < limit:
        rows = edges.where(F.col(near).isin(sorted(frontier))).collect()
        links += [(r["parent"], r["child"], r["node"], r["event_id"], r["event_type"]) for r in rows]
        frontier = set()
        for other in sorted({r[far] for r in rows} - found - {root}):
            if len(found) >= limit:
                break
            found.add(other)
            frontier.add(other)
    return found, links


def _event_dict(row) -> dict:
    out = row.asDict(recursive=True)
    attributes = out.get("attributes_after")
    out["attributes_after"] = dict(attributes) if attributes else {}
    out["parent_uuids"] = list(out.get("parent_uuids") or ())
    out["child_uuids"] = list(out.get("child_uuids") or ())
    return out


def per_minute(events) -> list[dict]:
    """Per component and minute (UTC): event counts by type, and latency p50 and max
    in ms (see the module docstring), sorted by minute then component."""
    from pyspark.sql import functions as F

    own = F.array(F.col("flowfile_uuid"))
    forked = F.when(F.col("event_type").isin("FORK", "CLONE"), F.coalesce("child_uuids", F.array())).otherwise(
        F.array()
    )
    entries = (
        events.select(F.explode(F.concat(own, forked)).alias("uuid"), "event_time_ms")
        .groupBy("uuid")
        .agg(F.min("event_time_ms").alias("entry_ms"))
    )
    timed = (
        events.join(entries, events.flowfile_uuid == entries.uuid)
        .withColumn("latency_ms", F.col("event_time_ms") - F.col("entry_ms"))
        .withColumn("minute_ms", F.floor(F.col("event_time_ms") / MINUTE_MS) * MINUTE_MS)
    ).cache()
    try:
        counts = timed.groupBy("component_id", "minute_ms", "event_type").count().collect()
        latency = (
            timed.groupBy("component_id", "minute_ms")
            .agg(
                F.count(F.lit(1)).alias("events"),
                F.expr("percentile(latency_ms, 0.5)").alias("p50"),
                F.max("latency_ms").alias("max"),
            )
            .collect()
        )
    finally:
        timed.unpersist()
    by_type: dict[tuple, dict[str, int]] = {}
    for row in counts:
        by_type.setdefault((row["component_id"], row["minute_ms"]), {})[row["event_type"]] = row["count"]
    out = [
        {
            "minute": _minute(row["minute_ms"]),
            "component_id": row["component_id"],
            "events": row["events"],
            "by_type": dict(sorted(by_type[(row["component_id"], row["minute_ms"])].items())),
            "latency_p50_ms": float(row["p50"]),
            "latency_max_ms": int(row["max"]),
        }
        for row in latency
    ]
    return sorted(out, key=lambda r: (r["minute"], r["component_id"]))


def _minute(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%MZ")


def format_per_minute(rows: list[dict]) -> str:
    """The per-minute rows as a plain-text table."""
    header = ("minute", "component", "events", "p50 ms", "max ms", "by type")
    lines = [
        [
            r["minute"],
            r["component_id"],
            str(r["events"]),
            f"{r['latency_p50_ms']:g}",
            str(r["latency_max_ms"]),
            " ".join(f"{k}={v}" for k, v in r["by_type"].items()),
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(header)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=False)).rstrip()
        for line in [list(header), *lines]
    )
