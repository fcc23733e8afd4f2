"""Index documents for a table of events, built column-wise.

tantivy's Python binding takes one call per document; the cheapest call is
`add_json`, whose parsing happens in Rust. The JSON text of every document is built
here with Arrow string kernels rather than a Python loop, so the per-event Python cost
of indexing is a single call. Values that need JSON escaping (quotes, backslashes,
control characters) take a slow exact path through `json.dumps`.

Indexed fields (seed 002): event type, FlowFile uuid (the event's own uuid plus its
parent and child uuids, so a FlowFile is found from the FORK, CLONE or JOIN events
that name it, as NiFi does), filename, component id, relationship, and time.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'


def _escaped(column: pa.Array) -> pa.Array:
    if column.null_count == len(column):
        return column
    if not pc.any(pc.match_substring_regex(column, _NEEDS_ESCAPE)).as_py():
        return column
    return pa.array([None if v is None else json.dumps(v)[1:-1] for v in column.to_pylist()], pa.string())


def _optional(name: str, column: pa.Array) -> pa.Array:
    """`,"name":"value"` where the value is present and non-empty, else ''."""
    column = _escaped(column)
    present = pc.fill_null(pc.greater(pc.utf8_length(column), 0), False)
    fragment = pc.binary_join_element_wise(f',"{name}":"', column, '"', "")
    return pc.if_else(present, fragment, "")


def _uuid_list(column: pa.Array) -> pa.Array:
    """`,"a","b"` for a list of uuids, '' when empty."""
    lengths = pc.fill_null(pc.list_value_length(column), 0)
    flat = pc.list_flatten(column)
    if len(flat) and pc.any(pc.match_substring_regex(flat, _NEEDS_ESCAPE)).as_py():
        joined = pa.array(["".join("," + json.dumps(u) for u in (v or ())) for v in column.to_pylist()], pa.string())
        return joined
    joined = pc.binary_join_element_wise(',"', pc.binary_join(column, '","'), '"', "")
    return pc.if_else(pc.greater(lengths, 0), pc.fill_null(joined, ""), "")


def json_documents(table: pa.Table | pa.RecordBatch) -> list[str]:
    """One JSON document per event of `table` (the stored schema)."""
    if isinstance(table, pa.Table):
        table = table.combine_chunks()

    def col(name):
        c = table.column(name)
        return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c

    after = pc.map_lookup(col("attributes_after"), query_key=pa.scalar("filename"), occurrence="first")
    before = pc.map_lookup(col("attributes_before"), query_key=pa.scalar("filename"), occurrence="first")
    filename = pc.coalesce(after, before)
    docs = pc.binary_join_element_wise(
        '{"id":', pc.cast(col("id"), pa.string()),
        ',"time":', pc.cast(col("time_ms"), pa.string()),
        ',"type":"', col("event_type"),
        '","component":"', _escaped(col("component_id")),
        '","uuid":["', _escaped(col("flowfile_uuid")), '"',
        _uuid_list(col("parent_uuids")), _uuid_list(col("child_uuids")), "]",
        _optional("filename", filename),
        _optional("relationship", col("relationship")),
        "}",
        "",
    )
    return docs.to_pylist()
