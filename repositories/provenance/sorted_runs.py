"""Sorted runs of uuid and filename keys: built, merged LSM-style, and searched.

Why not tantivy for these two fields: every FlowFile uuid and filename is unique, so
each is a new term of tantivy's dictionary, and adding and committing those terms was
most of tantivy's ~13 us/event (`repositories.provenance`). Here a run is built in
Arrow's C++ kernels and numpy: the keys of an event file's events, with their ids,
sorted once by (key, id) (`build_runs`), written as one Arrow IPC file per field
(`run_format`). A lookup is a binary search: over fence keys (every `FENCE`-th key of
a run, a Python list searched by `bisect`, which is C), then an Arrow comparison over
the one or few fence intervals that can hold the key. No Python loop runs per row.

LSM merge: each indexed file adds a run of level 0 to its shard; once `FAN_IN` runs
of one level are in the shard, they are merged into one run of the next level
(`plan_merge`), so a shard of N files holds at most `FAN_IN - 1` runs per level, about
FAN_IN * log_FAN_IN(N) in all, and every entry is rewritten log_FAN_IN(N) times.
In a repository the merges run on a thread of their own (`background`), not on the
index thread.

Sorting: a run is built by sorting its rows by (key, id) over each key's first 8 bytes
as an integer, in numpy (`_key_id_order`); a merge of runs of consecutive files sorts
their concatenation, by timsort when keys have one width (`merge_rows`); Arrow's sort
by (key, id) is the fallback of both.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import index_documents
from .index_documents import filenames
from .run_format import FIELDS_SCHEMA, KEY_SCHEMA, schema_of

FAN_IN = 8  # runs of one level merged into one of the next
FENCE = 256  # keys between two fence keys


@dataclass(frozen=True)
class RunEntry:
    """A run as a shard manifest lists it."""

    field: str
    name: str
    level: int
    files: tuple[int, ...]  # first ids of the event files it indexes, increasing


def plan_merge(runs: Sequence[RunEntry], fan_in: int = FAN_IN) -> list[RunEntry] | None:
    """The runs to merge next, lowest level first: `fan_in` runs of one field and level
    (those of the lowest files); None when no level of any field holds that many."""
    groups: dict[tuple[int, str], list[RunEntry]] = {}
    for run in runs:
        groups.setdefault((run.level, run.field), []).append(run)
    for key in sorted(groups):
        group = groups[key]
        if len(group) >= fan_in:
            return sorted(group, key=lambda r: r.files[0])[:fan_in]
    return None


def _sorted_unique(keys: pa.Array, ids: pa.Array) -> pa.Table:
    table = pa.table([keys, pc.cast(ids, pa.uint64())], schema=KEY_SCHEMA)
    if table.num_rows == 0:
        return table
    table = table.combine_chunks()
    order = _key_id_order(_array(table, "key"), _array(table, "id").to_numpy(), in_id_order=False)
    if order is None:
        order = pc.sort_indices(table, sort_keys=[("key", "ascending"), ("id", "ascending")])
    table = table.take(order).combine_chunks()
    if table.num_rows < 2:
        return table
    key, ident = table.column("key").chunk(0), table.column("id").chunk(0)
    # A row equal to the one before it (same key, same id) is a duplicate.
    same = pc.and_(
        pc.equal(key.slice(1), key.slice(0, len(key) - 1)),
        pc.equal(ident.slice(1), ident.slice(0, len(ident) - 1)),
    )
    if not pc.any(same).as_py():
        return table
    keep = pa.concat_arrays([pa.array([True]), pc.invert(same)])
    return table.filter(keep)


def uuid_rows(events: pa.Table) -> pa.Table:
    """The uuid run of a table of events (the stored schema): the key of each event's
    own uuid, parent uuids and child uuids, with the event's id."""
    ids = _array(events, "id")
    parts_keys = [index_documents.uuid_keys(_array(events, "flowfile_uuid"))]
    parts_ids = [ids]
    for name in ("parent_uuids", "child_uuids"):
        column = _array(events, name)
        flat = pc.list_flatten(column)
        if len(flat) == 0:
            continue
        owner = pc.list_parent_indices(column)
        parts_keys.append(index_documents.uuid_keys(flat))
        parts_ids.append(pc.take(ids, owner))
    keys = pa.concat_arrays([k.cast(pa.string()) for k in parts_keys])
    valid = pc.fill_null(pc.greater(pc.utf8_length(keys), 0), False)
    return _sorted_unique(keys.filter(valid), pa.concat_arrays(parts_ids).filter(valid))


def filename_rows(events: pa.Table) -> pa.Table:
    """The filename run of a table of events: each event's filename (as `index_documents`
    indexes it: after the change, else before, when not empty) with its id."""
    names = filenames(events)
    present = pc.fill_null(pc.greater(pc.utf8_length(names), 0), False)
    return _sorted_unique(names.filter(present), _array(events, "id").filter(present))


def fields_rows(events: pa.Table) -> pa.Table:
    """The fields run of a table of events: id, time and the low-cardinality fields of
    each event, in id order, strings dictionary-encoded."""
    relationship = _array(events, "relationship")
    named = pc.fill_null(pc.greater(pc.utf8_length(relationship), 0), False)
    relationship = pc.if_else(named, relationship, pa.scalar(None, pa.string()))
    table = pa.table(
        [
            pc.cast(_array(events, "id"), pa.uint64()),
            pc.cast(_array(events, "time_ms"), pa.int64()),
            pc.dictionary_encode(_array(events, "event_type")),
            pc.dictionary_encode(_array(events, "component_id")),
            pc.dictionary_encode(relationship),
        ],
        schema=FIELDS_SCHEMA,
    )
    ids = table.column("id").chunk(0)
    if len(ids) > 1 and not pc.all(pc.less(ids.slice(0, len(ids) - 1), ids.slice(1))).as_py():
        table = table.take(pc.sort_indices(ids))
    return table


def build_runs(events: pa.Table) -> dict[str, pa.Table]:
    """The three runs of one event file's events, by field."""
    return {"uuid": uuid_rows(events), "filename": filename_rows(events), "fields": fields_rows(events)}


def merge_rows(field: str, runs: Sequence[pa.Table]) -> pa.Table:
    """One sorted run of `field` holding every row of `runs` (each sorted; their ids
    disjoint), in this version's schema (a run of version 1 loses its time column).

    When the runs' id ranges do not interleave (the runs of an LSM level index
    consecutive event files, so they never do), taken in order of their ids they are
    already in id order: a fields run is their concatenation, and a key run needs a
    stable sort by key alone. When every key has one length (uuid keys; the filenames
    of many flows), that is numpy's stable sort (timsort, which merges the sorted runs
    it finds, in C) over the keys' bytes viewed as fixed-width strings; otherwise the
    sort over 8-byte prefixes that builds a run (`_key_id_order`); Arrow's sort by
    (key, id) of the concatenation is the last resort. Measured on 8 runs of 250,000
    uuid keys, in us/row of CPU: 0.07 (timsort), 0.14-0.16 (prefixes), 0.12-0.13
    (Arrow). A k-way merge in Python would cost a loop step per row: more than these.
    """
    schema = schema_of(field)
    if not runs:
        return schema.empty_table()
    runs = [r.select(schema.names).cast(schema) for r in runs if r.num_rows]
    if not runs:
        return schema.empty_table()
    ordered = _in_id_order(runs)
    table = pa.concat_tables(ordered if ordered is not None else runs)
    if field == "fields":
        table = table.unify_dictionaries()
    table = table.combine_chunks()
    if field == "fields":
        if ordered is not None:
            return table
        return table.take(pc.sort_indices(table, sort_keys=[("id", "ascending")])).combine_chunks()
    keys = _array(table, "key")
    order = _stable_fixed_width_order(keys) if ordered is not None else None
    if order is None:
        order = _key_id_order(keys, _array(table, "id").to_numpy(), in_id_order=ordered is not None)
    if order is not None:
        return table.take(pa.array(order)).combine_chunks()
    by = [("key", "ascending"), ("id", "ascending")]
    return table.take(pc.sort_indices(table, sort_keys=by)).combine_chunks()


def _in_id_order(runs: Sequence[pa.Table]) -> list[pa.Table] | None:
    """`runs` ordered by their ids, if every id of each is below every id of the next;
    else None."""
    bounds = []
    for run in runs:
        low_high = pc.min_max(run.column("id"))
        bounds.append((low_high["min"].as_py(), low_high["max"].as_py(), run))
    bounds.sort(key=lambda b: b[0])
    for (_, high, _), (low, _, _) in zip(bounds, bounds[1:], strict=False):
        if high >= low:
            return None
    return [run for _, _, run in bounds]


def _stable_fixed_width_order(keys: pa.Array) -> np.ndarray | None:
    """The indices of a stable sort of `keys` (utf8, no nulls) in byte order, when every
    key has the same length in bytes; else None."""
    data = _fixed_width_strings(keys)
    return None if data is None else np.argsort(data, kind="stable")


def _fixed_width_strings(keys: pa.Array) -> np.ndarray | None:
    """`keys` (utf8) viewed without copy as numpy's fixed-width bytes strings, when every
    key has one length in bytes, none is null and no byte is NUL; else None.

    numpy compares bytes strings as memcmp of the width, trailing NULs aside (a key with
    trailing NULs would tie with a shorter one): byte order of the UTF-8, as Arrow sorts."""
    n = len(keys)
    if n == 0 or keys.null_count:
        return None
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32, count=n + 1, offset=keys.offset * 4)
    width = int(offsets[1] - offsets[0])
    if width == 0 or int(offsets[-1] - offsets[0]) != width * n or np.any(np.diff(offsets) != width):
        return None
    if np.any(np.frombuffer(keys.buffers()[2], dtype=np.uint8, count=width * n, offset=int(offsets[0])) == 0):
        return None
    return np.frombuffer(keys.buffers()[2], dtype=f"S{width}", count=n, offset=int(offsets[0]))


def _key_id_order(keys: pa.Array, ids: np.ndarray, *, in_id_order: bool) -> np.ndarray | None:
    """The order of rows (`keys`: utf8 without nulls; `ids`) by (key, id), in numpy;
    None when many distinct keys share their first 8 bytes, for Arrow's sort.

    Each key's first 8 bytes, zero-padded, read as a big-endian integer, order keys as
    their bytes do wherever two of them differ. When few rows share a prefix (keys
    named once, as the uuids and filenames of FlowFiles that each have one event),
    numpy's unstable sort of the prefixes (4-5 times faster than its stable sort) orders
    the rows, and the runs of tied prefixes are sorted by (key, id) with Arrow. When
    many do (keys named again and again), numpy sorts the prefixes stably, the rows
    taken in id order first unless they are, so rows of one key come in id order, and
    only the runs of tied prefixes whose keys differ are sorted with Arrow (rare among
    uuid keys: 32 random bits). On 330,000 keys of the benchmark's mix: 0.04 us/row of
    CPU, 0.15 sorting stably, Arrow's sort by (key, id) 0.29."""
    n = len(keys)
    if n == 0 or keys.null_count:
        return None
    prefixes = _prefixes(keys)
    order = np.argsort(prefixes)
    sorted_prefixes = prefixes[order]
    tied = np.flatnonzero(sorted_prefixes[1:] == sorted_prefixes[:-1])
    if len(tied) <= _few_ties(n):
        return _sort_tied_runs(keys, ids, order, sorted_prefixes, tied)
    by_id = None if in_id_order else np.argsort(ids, kind="stable")
    if by_id is not None:
        prefixes = prefixes[by_id]
    by_prefix = np.argsort(prefixes, kind="stable")
    order = by_prefix if by_id is None else by_id[by_prefix]
    sorted_prefixes = prefixes[by_prefix]
    tied = np.flatnonzero(sorted_prefixes[1:] == sorted_prefixes[:-1])
    if len(tied) == 0:
        return order
    differ = pc.not_equal(keys.take(pa.array(order[tied])), keys.take(pa.array(order[tied + 1])))
    tied = tied[differ.to_numpy(zero_copy_only=False)]
    if len(tied) > _few_ties(n):
        return None
    return _sort_tied_runs(keys, ids, order, sorted_prefixes, tied)


def _few_ties(rows: int) -> int:
    """How many rows tied with the next are few enough to sort their runs with Arrow."""
    return max(64, rows // 64)


def _sort_tied_runs(
    keys: pa.Array, ids: np.ndarray, order: np.ndarray, sorted_prefixes: np.ndarray, tied: np.ndarray
) -> np.ndarray:
    """`order` (rows by prefix) with each run of rows whose prefix is one of those of
    rows `tied` (positions in `order` tied with the next) sorted by (key, id): sorted in
    one Arrow call by (run, key, id) and put back in their places."""
    if len(tied) == 0:
        return order
    spans = sorted(
        set(
            zip(
                np.searchsorted(sorted_prefixes, sorted_prefixes[tied], side="left").tolist(),
                np.searchsorted(sorted_prefixes, sorted_prefixes[tied], side="right").tolist(),
                strict=True,
            )
        )
    )
    places = np.concatenate([np.arange(start, end) for start, end in spans])
    rows = order[places]
    runs = pa.table(
        {
            "run": np.repeat(np.arange(len(spans)), [end - start for start, end in spans]),
            "key": keys.take(pa.array(rows)),
            "id": pa.array(ids[rows]),
        }
    )
    within = pc.sort_indices(runs, sort_keys=[("run", "ascending"), ("key", "ascending"), ("id", "ascending")])
    order[places] = rows[within.to_numpy()]
    return order


def _prefixes(keys: pa.Array) -> np.ndarray:
    """The first 8 bytes of each key (utf8, no nulls), zero-padded, as big-endian uint64."""
    n = len(keys)
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32, count=n + 1, offset=keys.offset * 4)
    data_buffer = keys.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    at = starts[:, None] + np.arange(8, dtype=np.int64)
    if int(lengths.min()) >= 8:
        heads = data[at]
    else:
        inside = np.arange(8, dtype=np.int64) < lengths[:, None]
        heads = np.where(inside, data[np.minimum(at, max(0, len(data) - 1))] if len(data) else 0, 0).astype(np.uint8)
    return np.ascontiguousarray(heads).view(">u8").reshape(n).astype(np.uint64)


def _array(table, name: str) -> pa.Array:
    column = table.column(name)
    if isinstance(column, pa.ChunkedArray):
        # One chunk is returned as it is: combining it would copy a memory-mapped run.
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


class RunReader:
    """Lookups in one run (rows sorted by key, then id); safe to share between threads.

    When every key of the run has one length (uuid keys always; the filenames of many
    flows), a lookup is numpy's binary search over the keys' bytes viewed as fixed-width
    strings, in place: about 3 us, where the fence search and an Arrow comparison over
    the window take 17 (a query by uuid asks every run of its shards, and most hold
    nothing). A key of another length is not in such a run at all."""

    def __init__(self, rows: pa.Table):
        self.rows = rows.combine_chunks() if rows.column("key").num_chunks != 1 else rows
        self._keys = _array(self.rows, "key")
        self._ids = _array(self.rows, "id")
        self._ids_numpy = self._ids.to_numpy()
        self._fixed = _fixed_width_strings(self._keys)
        n = len(self._keys)
        self._fences: list[str] = []
        if n and self._fixed is None:
            self._fences = self._keys.take(pa.array(np.arange(0, n, FENCE, dtype=np.int64))).to_pylist()

    def __len__(self) -> int:
        return len(self._keys)

    def lookup(self, key: str) -> np.ndarray:
        """The ids of the rows whose key is `key`, in increasing id (their times are in
        the fields runs: `FieldsReader.holds`)."""
        if self._fixed is not None:
            encoded = key.encode()
            if len(encoded) != self._fixed.dtype.itemsize or b"\0" in encoded:
                return _NO_IDS
            needle = np.array(encoded, dtype=self._fixed.dtype)
            low = int(self._fixed.searchsorted(needle, side="left"))
            high = int(self._fixed.searchsorted(needle, side="right"))
            return self._ids_numpy[low:high]
        # Fence j is row FENCE*j. Every row below fence (left-1) is less than the key,
        # every row from fence (right) on is greater: the key's rows lie between.
        left = bisect.bisect_left(self._fences, key)
        right = bisect.bisect_right(self._fences, key)
        if right == 0:
            return _NO_IDS
        low = max(0, (left - 1) * FENCE)
        high = min(len(self._keys), right * FENCE)
        window = self._keys.slice(low, high - low)
        where = pc.indices_nonzero(pc.equal(window, key)).to_numpy() + low
        if len(where) == 0:
            return _NO_IDS
        return self._ids_numpy[where]


_NO_IDS = np.empty(0, dtype=np.uint64)


class FieldsReader:
    """Matches of the low-cardinality fields, time range and cursor in one fields run
    (rows sorted by id), in numpy over the dictionary codes; safe to share."""

    def __init__(self, rows: pa.Table):
        rows = rows.combine_chunks() if rows.column("id").num_chunks != 1 else rows
        self.rows = rows
        self.ids = _array(rows, "id").to_numpy()
        self.times = _array(rows, "time_ms").to_numpy()
        self.low_id = int(self.ids[0]) if len(self.ids) else 0  # an empty run: low above high
        self.high_id = int(self.ids[-1]) if len(self.ids) else -1
        self._codes: dict[str, np.ndarray] = {}
        self._values: dict[str, list] = {}
        for name in ("type", "component", "relationship"):
            column = _array(rows, name)
            self._codes[name] = pc.fill_null(column.indices, -1).to_numpy()
            self._values[name] = column.dictionary.to_pylist()

    def __len__(self) -> int:
        return len(self.ids)

    def _match(self, where: slice | np.ndarray, terms: dict[str, str], start_ms, end_ms, max_id) -> np.ndarray:
        keep = np.ones(len(self.ids[where]), dtype=bool)
        for name, value in terms.items():
            codes = [i for i, v in enumerate(self._values[name]) if v == value]
            keep &= np.isin(self._codes[name][where], codes)
        if start_ms is not None:
            keep &= self.times[where] >= start_ms
        if end_ms is not None:
            keep &= self.times[where] <= end_ms
        if max_id is not None:
            keep &= self.ids[where] <= max_id
        return keep

    def select(self, low_id: int, high_id: int, terms: dict[str, str], start_ms, end_ms, max_id) -> np.ndarray:
        """Ids in [low_id, high_id] whose fields are `terms`, in the time range, at most
        `max_id` (None: no bound)."""
        low = int(np.searchsorted(self.ids, low_id, side="left"))
        high = int(np.searchsorted(self.ids, high_id, side="right"))
        where = slice(low, high)
        return self.ids[where][self._match(where, terms, start_ms, end_ms, max_id)]

    def holds(self, ids: np.ndarray, terms: dict[str, str], start_ms=None, end_ms=None) -> np.ndarray:
        """Which of `ids` this run holds with fields `terms`, in the time range (None: no
        bound), as a mask over `ids`. A query by uuid or filename asks every fields run
        of a shard about its few hits, which most runs cannot hold: their id range says so."""
        if len(self.ids) == 0 or len(ids) == 0 or ids.max() < self.low_id or ids.min() > self.high_id:
            return np.zeros(len(ids), dtype=bool)
        where = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
        return (self.ids[where] == ids) & self._match(where, terms, start_ms, end_ms, None)
