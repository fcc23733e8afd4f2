"""What the index indexes of a table of events, built column-wise: the uuid keys and
filenames the sorted runs hold (`uuid_keys`, `filenames`, used by `sorted_runs`), and
the tantivy documents of a shard from before runs (`json_documents`: the index no
longer writes them; they stay to say what such a shard holds, and are tested).

tantivy's Python binding takes one call per document; the cheapest call is
`add_json`, whose parsing happens in Rust. The JSON text of every document is built
here with Arrow string kernels rather than a Python loop, so the per-event Python cost
of indexing is a single call. Values that need JSON escaping (quotes, backslashes,
control characters) take a slow exact path through `json.dumps`.

Indexed fields (those NiFi indexes by default): event type, FlowFile uuid (the event's own uuid plus its
parent and child uuids, so a FlowFile is found from the FORK, CLONE or JOIN events
that name it, as NiFi does), filename, component id, relationship, and time.

A uuid is indexed by its key (`uuid_key`), not whole. A canonical uuid
(8-4-4-4-12 hex digits) is keyed by its first 8 and last 12 hex digits: 80 bits, all
random in a version 4 uuid, in a 20-character term instead of 36. Every FlowFile
uuid is unique, so uuid terms are most of the term dictionary, and halving their
length measured about half the tantivy commit time (8.3-10.7 -> 3.4-5.6 us/event on
120,000 events of the benchmark mix). Other strings are indexed whole. A key can be
shared by two uuids, so a hit is only a candidate: the repository checks each event
it fetches against the full uuid (`event_names_uuid`).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'
# RE2 (Arrow) and Python agree on this pattern; `$` is end of text in RE2 without the
# m flag, and the Python side uses fullmatch.
_CANONICAL_UUID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
_CANONICAL_UUID_PY = re.compile(_CANONICAL_UUID[1:-1])


def uuid_key(uuid: str) -> str:
    """The index term of a FlowFile uuid (see the module docstring)."""
    if _CANONICAL_UUID_PY.fullmatch(uuid):
        return uuid[:8] + uuid[24:]
    return uuid


def uuid_keys(column: pa.Array) -> pa.Array:
    """`uuid_key` of every value of a string column, in numpy when every value is a
    canonical uuid (as FlowFile uuids are), else in Arrow kernels (a regular expression
    per value: 0.23 us/event of CPU on the benchmark's mix, where numpy takes 0.03)."""
    if len(column) == 0 or column.null_count == len(column):
        return column
    keys = _canonical_uuid_keys(column)
    if keys is not None:
        return keys
    canonical = pc.match_substring_regex(column, _CANONICAL_UUID)
    short = pc.binary_join_element_wise(
        pc.utf8_slice_codeunits(column, 0, 8), pc.utf8_slice_codeunits(column, 24, 36), ""
    )
    return pc.if_else(canonical, short, column)


_DASH_PLACES = np.zeros(36, dtype=bool)
_DASH_PLACES[[8, 13, 18, 23]] = True


def _canonical_uuid_keys(column: pa.Array) -> pa.Array | None:
    """The keys of a string column that holds canonical uuids only (36 bytes each,
    dashes and hex digits in place, no null), cut from its bytes at once; else None."""
    n = len(column)
    if column.null_count or column.type != pa.string():
        return None
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32, count=n + 1, offset=column.offset * 4)
    first = int(offsets[0])
    if int(offsets[-1]) - first != 36 * n or np.any(np.diff(offsets) != 36):
        return None
    text = np.frombuffer(column.buffers()[2], dtype=np.uint8, count=36 * n, offset=first).reshape(n, 36)
    # Byte arithmetic wraps around: below "0" or "a" becomes large.
    hex_digit = (text - np.uint8(ord("0"))) < 10
    hex_digit |= ((text | np.uint8(0x20)) - np.uint8(ord("a"))) < 6  # a-f, A-F
    hex_digit |= _DASH_PLACES
    if not (hex_digit.all() and np.all(text[:, _DASH_PLACES] == ord("-"))):
        return None
    kept = np.concatenate((text[:, :8], text[:, 24:]), axis=1)  # as `uuid_key` keeps
    key_offsets = np.arange(0, 20 * n + 1, 20, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(key_offsets), pa.py_buffer(kept))


def _uuid_list_keys(column: pa.Array) -> pa.Array:
    # from_arrays drops the validity bitmap: a null list becomes an empty one, which
    # indexes the same (no terms).
    return pa.ListArray.from_arrays(column.offsets, uuid_keys(column.values))


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


def _lookup_first(column: pa.MapArray, key: str) -> pa.Array:
    """`pc.map_lookup(column, key, occurrence="first")`, about 5 times faster.

    map_lookup measured 0.4-0.8 us per event on the benchmark's four-attribute maps, the
    largest part of building documents. Here: a running count of key hits over the
    flattened keys, read at each map's offsets, says whether a map has the key and
    which hit is its first.
    """
    offsets = column.offsets
    hit = pc.fill_null(pc.equal(column.keys, key), False)
    before = pa.concat_arrays([pa.array([0], pa.int64()), pc.cumulative_sum(pc.cast(hit, pa.int64()))])
    start = pc.take(before, offsets.slice(0, len(offsets) - 1))
    has = pc.greater(pc.take(before, offsets.slice(1)), start)
    if column.null_count:
        has = pc.and_(has, column.is_valid())
    which = pc.if_else(has, start, pa.scalar(None, pa.int64()))
    return pc.take(column.items, pc.take(pc.indices_nonzero(hit), which))


def _column(table: pa.Table | pa.RecordBatch, name: str) -> pa.Array:
    c = table.column(name)
    return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c


def filenames(table: pa.Table | pa.RecordBatch) -> pa.Array:
    """Each event's filename: its `filename` attribute after the event, else before
    (null when neither has one). Only a non-empty one is indexed."""
    after, before = table.column("attributes_after"), table.column("attributes_before")
    if isinstance(after, pa.ChunkedArray) and [len(c) for c in after.chunks] != [len(c) for c in before.chunks]:
        after, before = after.combine_chunks(), before.combine_chunks()
    if isinstance(after, pa.Array):
        return pc.coalesce(_lookup_first(after, "filename"), _lookup_first(before, "filename"))
    # Chunk by chunk: combining the chunks of two map columns first copied every
    # attribute (a fifth of the cost).
    names = [
        pc.coalesce(_lookup_first(a, "filename"), _lookup_first(b, "filename"))
        for a, b in zip(after.chunks, before.chunks, strict=True)
    ]
    return pa.chunked_array(names, pa.string()).combine_chunks()


def json_documents(table: pa.Table | pa.RecordBatch) -> list[str]:
    """One JSON document per event of `table` (the stored schema), for a shard from
    before sorted runs, which holds every field in tantivy (`index`)."""
    if isinstance(table, pa.Table):
        table = table.combine_chunks()

    def col(name):
        return _column(table, name)

    docs = pc.binary_join_element_wise(
        '{"id":',
        pc.cast(col("id"), pa.string()),
        ',"time":',
        pc.cast(col("time_ms"), pa.string()),
        ',"type":"',
        col("event_type"),
        '","component":"',
        _escaped(col("component_id")),
        '","uuid":["',
        _escaped(uuid_keys(col("flowfile_uuid"))),
        '"',
        _uuid_list(_uuid_list_keys(col("parent_uuids"))),
        _uuid_list(_uuid_list_keys(col("child_uuids"))),
        "]",
        _optional("filename", filenames(table)),
        _optional("relationship", col("relationship")),
        "}",
        "",
    )
    return docs.to_pylist()
