"""The Parquet form of provenance events, for Spark: schema, partitions and file names.

This module is I/O-free: it turns event-file rows into export tables and names the
files they go to. `replication.provenance_export` writes them.

Layout, under the cluster's provenance root (`<hdfs root>/<cluster>/provenance`):

    <root>/node=<node>/hour=<YYYY-MM-DDTHH>/events-<first id>-<last id>.parquet

`hour` is the UTC hour of the events' `event_time_ms`, so the events of one event
file that spans an hour boundary go to two files. `first id` and `last id` are the
smallest and largest event id of the rows in that file. A node's event ids only grow,
so the name is unique per node and the same events always get the same name: an
export repeated after a crash finds the file and skips it. A file is written as
`_events-<first id>-<last id>.parquet.partial` in the same directory, then renamed;
Spark and pyarrow ignore names starting with `_`, so no reader ever sees half a file.

Schema (version 1; one row per event; Parquet, zstd). On-disk format: a reader may
rely on every field below, a change that is not an added nullable field is a new
`FORMAT_VERSION`, recorded in the file's key-value metadata `custody.provenance.format`.

    event_id          int64, not null   the event's id on its node (unique per node,
                                        increasing; not unique across the cluster:
                                        (node, event_id) is)
    event_type        string, not null  CREATE, RECEIVE, SEND, FORK, CLONE, JOIN,
                                        ATTRIBUTES_MODIFIED, CONTENT_MODIFIED, ROUTE,
                                        DROP, EXPIRE, REPLAY
    flowfile_uuid     string, not null  the FlowFile the event belongs to (NiFi's rule:
                                        FORK and CLONE belong to the parent, JOIN to the
                                        child it made)
    component_id      string, not null  the processor (or port) that emitted it
    component_type    string            its type, e.g. "UpdateAttribute"
    event_time_ms     int64, not null   when it happened, ms since the epoch (UTC)
    parent_uuids      list<string>      JOIN: its inputs; empty otherwise
    child_uuids       list<string>      FORK, CLONE: the FlowFiles made; empty otherwise
    attributes_after  map<string,string>  the FlowFile's attributes after the event
    relationship      string            ROUTE: the relationship taken; else null
    transit_uri       string            SEND, RECEIVE: where to or from; else null
    details           string            free text the component added, or null
    size              int64             the FlowFile's content size in bytes after it
    node              string, not null  the node whose repository recorded it
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from .event_batch import ATTRIBUTES_TYPE, UUIDS_TYPE

FORMAT_VERSION = 1
FORMAT_KEY = b"custody.provenance.format"
SUFFIX = ".parquet"
PARTIAL_SUFFIX = ".partial"
HOUR_FORMAT = "%Y-%m-%dT%H"  # of UTC times

EXPORT_SCHEMA = pa.schema(
    [
        pa.field("event_id", pa.int64(), nullable=False),
        pa.field("event_type", pa.string(), nullable=False),
        pa.field("flowfile_uuid", pa.string(), nullable=False),
        pa.field("component_id", pa.string(), nullable=False),
        pa.field("component_type", pa.string()),
        pa.field("event_time_ms", pa.int64(), nullable=False),
        pa.field("parent_uuids", UUIDS_TYPE),
        pa.field("child_uuids", UUIDS_TYPE),
        pa.field("attributes_after", ATTRIBUTES_TYPE),
        pa.field("relationship", pa.string()),
        pa.field("transit_uri", pa.string()),
        pa.field("details", pa.string()),
        pa.field("size", pa.int64()),
        pa.field("node", pa.string(), nullable=False),
    ],
    metadata={FORMAT_KEY: str(FORMAT_VERSION).encode()},
)

# Export column <- stored column (`event_batch.SCHEMA`); `node` is added.
_FROM_STORED = {"event_id": "id", "event_time_ms": "time_ms"}
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # whole: `$` passes a trailing newline


def check_node_name(node: str) -> str:
    """A node name fit for a `node=<name>` directory: no '/', '=' or leading dot."""
    if not _NODE_NAME.fullmatch(node or ""):
        raise ValueError(
            f"node name {node!r} cannot name a provenance partition: use letters, digits, '.', '_' "
            "and '-', starting with a letter or digit"
        )
    return node


def export_table(stored: pa.Table | pa.RecordBatch, node: str) -> pa.Table:
    """Rows of an event file (`event_batch.SCHEMA`) as export rows (`EXPORT_SCHEMA`)."""
    check_node_name(node)
    if isinstance(stored, pa.RecordBatch):
        stored = pa.Table.from_batches([stored])
    columns = []
    for field in EXPORT_SCHEMA:
        if field.name == "node":
            columns.append(pa.array([node] * stored.num_rows, pa.string()))
        else:
            columns.append(stored.column(_FROM_STORED.get(field.name, field.name)))
    return pa.Table.from_arrays(columns, schema=EXPORT_SCHEMA)


def hour_of(time_ms: int) -> str:
    """The UTC hour partition of a time: `YYYY-MM-DDTHH`."""
    return dt.datetime.fromtimestamp(time_ms / 1000, dt.UTC).strftime(HOUR_FORMAT)


def file_name(first_id: int, last_id: int) -> str:
    return f"events-{first_id}-{last_id}{SUFFIX}"


def partial_name(first_id: int, last_id: int) -> str:
    return f"_{file_name(first_id, last_id)}{PARTIAL_SUFFIX}"


def partition_directory(root: str, node: str, hour: str) -> str:
    return f"{root.rstrip('/')}/node={check_node_name(node)}/hour={hour}"


@dataclass(frozen=True)
class ExportPart:
    """The rows of one event file that go to one hour partition."""

    hour: str
    first_id: int
    last_id: int
    rows: pa.Table

    def directory(self, root: str, node: str) -> str:
        return partition_directory(root, node, self.hour)

    def path(self, root: str, node: str) -> str:
        return f"{self.directory(root, node)}/{file_name(self.first_id, self.last_id)}"

    def partial_path(self, root: str, node: str) -> str:
        return f"{self.directory(root, node)}/{partial_name(self.first_id, self.last_id)}"


def split_by_hour(rows: pa.Table) -> list[ExportPart]:
    """Export rows split by the UTC hour of their event time, each part in id order."""
    if rows.num_rows == 0:
        return []
    hours = pc.strftime(rows.column("event_time_ms").cast(pa.timestamp("ms")), format=HOUR_FORMAT)
    parts = []
    for hour in sorted(set(hours.combine_chunks().to_pylist())):
        part = rows.filter(pc.equal(hours, hour)).sort_by("event_id")
        ids = part.column("event_id")
        parts.append(ExportPart(hour, pc.min(ids).as_py(), pc.max(ids).as_py(), part))
    return parts
