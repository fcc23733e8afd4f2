"""The sharded tantivy index of provenance events (NiFi's sharded Lucene index, on tantivy).

Each shard is one tantivy index in ``index/shard-<created-ms:015d>`` (named by its
creation time) with a manifest, ``shard.json``, listing the event files it indexed and
the time range they cover. A shard takes new files until it reaches `shard_bytes`
(500 MB by default) or, when events are kept for a time, `shard_max_age_ms` (a
quarter of that time: a shard is then dropped within 1.25 times the retention,
however few events it holds), then it is closed and a new one starts. Queries skip shards
whose time range cannot match. Age-off never deletes from a shard: a shard is
deleted whole once every event file it indexed is gone, and hits in files that are
gone are skipped at query time.

Documents carry only the indexed fields and the event id (a fast field); the event
itself is read from its event file through the TOC. A uuid is indexed by its key
(`index_documents.uuid_key`); the manifest says so (`uuid_terms`: "key"), and a shard
from before keys (no `uuid_terms`) is searched by the whole uuid.

The two high-cardinality fields, uuid and filename, are not in tantivy: each event
file indexed adds a sorted run of each (`sorted_runs`, `run_format`) under the
shard's ``runs/``, listed by the manifest (`runs`; `uuid_index`: "runs"), and runs of
one level are merged into one of the next once `run_fan_in` of them are there (in a
repository, by its runs thread, `merge_runs`, while the index thread goes on). A query
by uuid or filename looks them up in the runs, applies its cursor to the ids, and its
time range and any other field to those ids alone in the fields runs. A shard from
before runs (no `uuid_index`: "tantivy") holds them in tantivy, is searched there,
and takes no new file (it is closed when the first file after it is indexed).

What a crash leaves, and what recovery may delete. An event file's documents are
committed first and the manifest lists ("claims") the file after, so a crash between
the two leaves documents that no manifest claims; the file is indexed again after the
restart. Three rules keep that from losing or doubling a document:
  1. Documents are added to the active shard only (the last one, while not closed),
     and a shard is closed only when it holds no unclaimed document: by the manifest
     save that claims its last file (a shard from before uuid keys: when the first
     file after recovery is indexed). So unclaimed documents are in the active shard
     alone (a new shard that no manifest was saved for is deleted whole when the
     index is opened).
  2. Event files are indexed in increasing order of first id: the merge and index
     queues keep the order of the generations, whose ids only grow, and recovery
     indexes the generations it merges again and the files it indexes again as one
     increasing sequence (`policies.plan_recovery`). So the unclaimed documents all
     lie above the highest id the active shard claims.
  3. `forget_unclaimed`, run by recovery before anything is indexed again, deletes
     the active shard's documents whose ids lie outside every range its manifest
     claims, and nothing else. Under rule 2 that is the one range above the highest
     claimed id, but it spares a claimed file's documents without relying on rule 2:
     deleting "every id from the lowest file to index again" would rely on it alone,
     and one file indexed out of order would lose its claimed documents to the next
     recovery.

Runs follow the same order. An event file's runs are written whole (partial file,
fsync, rename, fsync of the directory) before its documents are committed, and the
manifest save that claims the file lists them; a merged run is written whole before
the manifest save that lists it instead of its inputs, and the inputs are deleted
after. So a crash leaves run files no manifest lists, and nothing else: a writable
opening deletes them (`IndexShard.delete_unlisted_runs`), and every event of a claimed
file is in exactly one listed run of each field it names.

Lock plan: `_lock` guards the shard list and the manifests; each shard's
`_readers_lock` guards its cache of mapped runs; `_merge_lock` is held by whichever
thread merges runs (the runs thread, `merge_runs`, or the indexing thread when it
merges itself), and by age-off dropping shards, always taken before `_lock`. The
active shard's writer and the writing of new runs belong to the indexing thread
(`index_table`) and to recovery before that thread starts (`forget_unclaimed`), under
`_lock` for each manifest update; a merge reads the run list and swaps its inputs for
its output under `_lock`, and indexing only appends to it. Searches take `_lock` only
to copy the shard list, and a shard's runs and files; a run a merge deleted since is
read again from the manifest.
"""

from __future__ import annotations

import json
import os
import re
import struct
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import tantivy

from . import files, run_format
from .errors import CorruptFileError
from .hooks import RunMergeHooks
from .index_documents import uuid_key
from .policies import unclaimed_id_ranges
from .query import ProvenanceQuery
from .sorted_runs import FAN_IN, FieldsReader, RunEntry, RunReader, build_runs, merge_rows, plan_merge

SHARD_PREFIX = "shard-"
MANIFEST = "shard.json"
DEFAULT_SHARD_BYTES = 500 * 1024 * 1024
UUID_TERMS_KEY = "key"  # uuids indexed by uuid_key
UUID_TERMS_WHOLE = "whole"  # shards written before keys
UUID_INDEX_RUNS = "runs"  # events in sorted runs, a summary per file in tantivy
UUID_INDEX_TANTIVY = "tantivy"  # shards written before runs: a document per event
_KEY_FIELDS = ("uuid", "filename")


def build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    # Numbers are fast fields only: range queries and ordering run on the columnar
    # fast field, and skipping their inverted index measurably cuts indexing cost.
    builder.add_unsigned_field("id", fast=True)
    builder.add_integer_field("time", fast=True)
    for name in ("type", "uuid", "filename", "component", "relationship"):
        # Exact-match fields: the raw tokenizer keeps a uuid or a filename whole.
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    return builder.build()


SCHEMA = build_schema()


def build_summary_schema() -> tantivy.Schema:
    """A shard of runs: one document per event file, its first id, its count of events,
    and the set of values of each low-cardinality field in it, so that a query skips
    the files that cannot match."""
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("id", fast=True)
    builder.add_unsigned_field("count", fast=True)
    for name in ("type", "component", "relationship"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    return builder.build()


SUMMARY_SCHEMA = build_summary_schema()


@dataclass
class ShardManifest:
    created_ms: int
    closed: bool = False
    # event file first id -> (last id, min time, max time)
    files: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    uuid_terms: str = UUID_TERMS_KEY
    uuid_index: str = UUID_INDEX_RUNS
    runs: list[RunEntry] = field(default_factory=list)  # of uuid_index "runs"

    @property
    def writable(self) -> bool:
        """Whether new files may go into it: only a shard of this release's kind."""
        return self.uuid_terms == UUID_TERMS_KEY and self.uuid_index == UUID_INDEX_RUNS

    @property
    def min_time_ms(self) -> int | None:
        return min((v[1] for v in self.files.values()), default=None)

    @property
    def max_time_ms(self) -> int | None:
        return max((v[2] for v in self.files.values()), default=None)

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "created_ms": self.created_ms,
                "closed": self.closed,
                "files": {str(k): list(v) for k, v in self.files.items()},
                "uuid_terms": self.uuid_terms,
                "uuid_index": self.uuid_index,
                "runs": [[r.field, r.name, r.level, list(r.files)] for r in self.runs],
            }
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> ShardManifest:
        """The manifest `to_json` wrote; ValueError if `data` is not one."""
        try:
            raw = json.loads(data)
            manifest = cls(
                raw["created_ms"],
                raw["closed"],
                {int(k): tuple(v) for k, v in raw["files"].items()},
                raw.get("uuid_terms", UUID_TERMS_WHOLE),
                raw.get("uuid_index", UUID_INDEX_TANTIVY),
                [RunEntry(f, n, level, tuple(ids)) for f, n, level, ids in raw.get("runs", [])],
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:  # JSONDecodeError, UnicodeDecodeError too
            raise ValueError(f"not a shard manifest: {type(error).__name__}: {error}") from None
        if not (
            _is_int(manifest.created_ms)
            and isinstance(manifest.closed, bool)
            and manifest.uuid_terms in (UUID_TERMS_KEY, UUID_TERMS_WHOLE)
            and manifest.uuid_index in (UUID_INDEX_RUNS, UUID_INDEX_TANTIVY)
            and all(len(v) == 3 and all(map(_is_int, v)) for v in manifest.files.values())
            and all(_is_run(r) for r in manifest.runs)
        ):
            raise ValueError("not a shard manifest: a field has the wrong type")
        return manifest


def _is_int(value) -> bool:
    return type(value) is int


def _is_run(run: RunEntry) -> bool:
    parsed = run_format.parse_name(run.name) if isinstance(run.name, str) else None
    return (
        parsed is not None
        and parsed[0] == run.field
        and _is_int(run.level)
        and bool(run.files)
        and all(map(_is_int, run.files))
        and (parsed[1], parsed[2]) == (min(run.files), max(run.files))
    )


# tantivy ends each file of a segment with a footer: the JSON of the version that wrote
# it, with the crc32 of every byte before the footer, then the JSON's length (u32) and
# a magic number (u32). It checks neither when it opens a file.
_FOOTER_END = struct.Struct("<II")
_FOOTER_MAGIC = 1337
_FOOTER_MOST = 4096  # its JSON is about a hundred bytes: a larger length is damage, not read
_SEGMENT_FILES = (".idx", ".pos", ".term", ".store", ".fast", ".fieldnorm")
_SEGMENT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_CHUNK = 1 << 20


def _damaged(path: str, reason: str) -> CorruptFileError:
    return CorruptFileError(
        path,
        f"{reason}. The index is built from the event files: move the shard's directory "
        "away, and the next start indexes its event files again",
    )


def check_segment_files(shard_path: str) -> None:
    """Raise CorruptFileError unless `meta.json` names segments and every file of each
    segment is whole (its footer's crc32 matches its bytes).

    tantivy trusts the lengths and offsets in these files: a damaged one can make it
    allocate what an offset says, and abort the process, which no handler survives.
    So every file of a shard is read once, in 1 MB chunks, before tantivy opens it:
    about a second per GB of index when a repository is opened."""
    meta = os.path.join(shard_path, "meta.json")
    try:
        segments = json.loads(files.read_all(meta))["segments"]
        names = []
        for segment in segments:
            if not _SEGMENT_ID.fullmatch(segment["segment_id"]):
                raise ValueError(f"segment id {segment['segment_id']!r}")
            stem = segment["segment_id"].replace("-", "")
            names += [stem + suffix for suffix in _SEGMENT_FILES]
            if segment.get("deletes") is not None:
                names.append(f"{stem}.{int(segment['deletes']['opstamp'])}.del")
    except FileNotFoundError:
        raise _damaged(meta, "the tantivy index of a shard with a manifest has no meta.json") from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise _damaged(meta, f"not a tantivy meta.json: {type(error).__name__}: {error}") from None
    for name in names:
        path = os.path.join(shard_path, name)
        if os.path.exists(path):  # a missing one, tantivy reports (as a ValueError)
            _check_footer(path)


def _check_footer(path: str) -> None:
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size >= _FOOTER_END.size:
            handle.seek(size - _FOOTER_END.size)
            length, magic = _FOOTER_END.unpack(handle.read(_FOOTER_END.size))
        if size < _FOOTER_END.size or magic != _FOOTER_MAGIC or length > min(_FOOTER_MOST, size - _FOOTER_END.size):
            raise _damaged(path, "its tantivy footer is missing or damaged")
        body = size - _FOOTER_END.size - length
        handle.seek(body)
        try:
            expected = json.loads(handle.read(length))["crc"]
        except (ValueError, KeyError, TypeError) as error:
            raise _damaged(path, f"its tantivy footer is damaged ({type(error).__name__}: {error})") from None
        handle.seek(0)
        crc, left = 0, body
        while left:
            chunk = handle.read(min(left, _CHUNK))
            crc, left = zlib.crc32(chunk, crc), left - len(chunk)
    if crc != expected:
        raise _damaged(path, "its bytes do not match the crc32 in its tantivy footer")


class IndexShard:
    def __init__(self, path: str, manifest: ShardManifest):
        self.path = path
        self.name = os.path.basename(path)
        self.manifest = manifest
        try:
            self.schema = SUMMARY_SCHEMA if manifest.uuid_index == UUID_INDEX_RUNS else SCHEMA
            self.index = tantivy.Index(self.schema, path=path, reuse=True)
        except (ValueError, OSError) as error:  # tantivy's own checks (a damaged meta.json, a missing file)
            raise _damaged(path, f"tantivy cannot open the shard: {error}") from None
        # The repository reloads after its own commits. A reader that reloads itself
        # whenever meta.json changes would do it from a thread of tantivy's, on any
        # change (a copy, a delete, another process), reading every segment file again
        # unchecked: a file damaged since this check would kill the process from there.
        self.index.config_reader(reload_policy="Manual")
        self.writer: tantivy.IndexWriter | None = None
        self.runs_path = os.path.join(path, run_format.DIRECTORY)
        self._readers: dict[str, RunReader | FieldsReader] = {}  # by run name, loaded on first use
        self._readers_lock = threading.Lock()

    def run_reader(self, run: RunEntry) -> RunReader | FieldsReader:
        """The run's rows, memory-mapped once and kept; FileNotFoundError if a merge
        replaced it and deleted it since the caller read the manifest."""
        with self._readers_lock:
            reader = self._readers.get(run.name)
        if reader is None:
            rows = run_format.read_run(os.path.join(self.runs_path, run.name), run.field)
            reader = FieldsReader(rows) if run.field == "fields" else RunReader(rows)
            with self._readers_lock:
                reader = self._readers.setdefault(run.name, reader)
        return reader

    def run_rows(self, run: RunEntry):
        """The run's rows: those of its kept reader, else mapped afresh (a merge's input,
        soon deleted, is not worth a reader's fence keys)."""
        with self._readers_lock:
            reader = self._readers.get(run.name)
        if reader is not None:
            return reader.rows
        return run_format.read_run(os.path.join(self.runs_path, run.name), run.field)

    def forget_readers(self, names: list[str]) -> None:
        with self._readers_lock:
            for name in names:
                self._readers.pop(name, None)

    def delete_unlisted_runs(self) -> list[str]:
        """Delete the run files the manifest does not list: written by an indexing or a
        merge that a crash stopped before its manifest save, or left by a merge that
        a crash stopped after it (its inputs). Writable openings only."""
        listed = {run.name for run in self.manifest.runs}
        doomed = [name for name in files.list_names(self.runs_path) if name not in listed]
        for name in doomed:
            files.delete(os.path.join(self.runs_path, name))
        if doomed:
            files.fsync_directory(self.runs_path)
        return doomed

    def save_manifest(self) -> None:
        # Written after the tantivy commit it describes: a crash in between leaves
        # documents the manifest does not claim, which recovery deletes and redoes.
        target = os.path.join(self.path, MANIFEST)
        files.delete(target + ".partial")
        files.write_new(target + ".partial", [self.manifest.to_json()])
        files.rename(target + ".partial", target)
        files.fsync_directory(self.path)

    def open_writer(self, heap_bytes: int, threads: int) -> tantivy.IndexWriter:
        if self.writer is None:
            self.writer = self.index.writer(heap_size=heap_bytes, num_threads=threads)
        return self.writer

    def close_writer(self) -> None:
        if self.writer is not None:
            self.writer.wait_merging_threads()
            self.writer = None

    def size(self) -> int:
        return files.tree_size(self.path)


def _tantivy_query(query: ProvenanceQuery, uuid_terms: str) -> tantivy.Query:
    """`query` for a shard from before runs (a document per event)."""
    terms = query.terms()
    if "uuid" in terms and uuid_terms == UUID_TERMS_KEY:
        terms["uuid"] = uuid_key(terms["uuid"])
    clauses = [
        (tantivy.Occur.Must, tantivy.Query.term_query(SCHEMA, name, value, index_option="basic"))
        for name, value in terms.items()
    ]
    if query.start_ms is not None or query.end_ms is not None:
        clauses.append(
            (
                tantivy.Occur.Must,
                tantivy.Query.range_query(SCHEMA, "time", tantivy.FieldType.Integer, query.start_ms, query.end_ms),
            )
        )
    if query.max_event_id is not None:
        clauses.append(
            (
                tantivy.Occur.Must,
                tantivy.Query.range_query(SCHEMA, "id", tantivy.FieldType.Unsigned, 0, query.max_event_id),
            )
        )
    if not clauses:
        return tantivy.Query.all_query()
    if len(clauses) == 1:
        return clauses[0][1]
    return tantivy.Query.boolean_query(clauses)


def _may_match(manifest: ShardManifest, query: ProvenanceQuery) -> bool:
    """Whether the shard can hold a hit: by its time range, and by its lowest id
    (unclaimed documents lie above every claimed id: rule 2)."""
    low, high = manifest.min_time_ms, manifest.max_time_ms
    if low is None or not query.overlaps(low, high):
        return False
    return query.max_event_id is None or min(manifest.files) <= query.max_event_id


def _search_tantivy(shard: IndexShard, tq: tantivy.Query, wanted: int, value: str = "id") -> tuple[list[int], int]:
    """Fast field `value` of the `wanted` newest hits (by id) of `tq` in the shard, and
    how many hits."""
    try:
        searcher = shard.index.searcher()
        # Counting rides along the ordered collection, which visits every match anyway.
        result = searcher.search(tq, max(1, wanted), count=True, order_by_field="id", order=tantivy.Order.Desc)
        addresses = [address for _, address in result.hits]
        found = searcher.fast_field_values(value, addresses) if addresses else []
    except ValueError as error:  # a file damaged since the shard was opened
        raise _damaged(shard.path, f"tantivy cannot search the shard: {error}") from None
    return list(found), result.count


def _summary_query(terms: dict[str, str]) -> tantivy.Query:
    """The files of a shard of runs that hold a value of every term."""
    clauses = [
        (tantivy.Occur.Must, tantivy.Query.term_query(SUMMARY_SCHEMA, name, value, index_option="basic"))
        for name, value in terms.items()
    ]
    if not clauses:
        return tantivy.Query.all_query()
    return clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)


def _summary_document(first_id: int, runs: dict) -> str:
    """The tantivy document of one event file in a shard of runs (`build_summary_schema`)."""
    fields = runs["fields"]
    document: dict[str, object] = {"id": first_id, "count": fields.num_rows}
    for name in ("type", "component", "relationship"):
        values = fields.column(name).combine_chunks().dictionary.to_pylist()
        document[name] = sorted({v for v in values if v})
    return json.dumps(document)


def _concatenated(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def time_range_verdicts(
    ids: np.ndarray, claimed: dict[int, tuple[int, int, int]], start_ms: int | None, end_ms: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(in range, to check) masks over `ids` by the time ranges of the claimed files
    that hold them (first id -> (last id, min time, max time)): a hit of a file wholly
    inside the range is in it, one of a file wholly outside is not, and only the hits of
    a file that straddles a bound (or of no claimed file) need their own time, from the
    fields runs. A range of the last hour holds or misses most files whole."""
    if not claimed or not len(ids):
        return np.zeros(len(ids), dtype=bool), np.ones(len(ids), dtype=bool)
    firsts = np.array(sorted(claimed), dtype=np.uint64)
    files = np.array([claimed[first] for first in sorted(claimed)], dtype=np.int64)  # last id, min, max time
    at = np.searchsorted(firsts, ids, side="right") - 1
    known = at >= 0
    at = np.maximum(at, 0)
    known &= ids <= files[at, 0].astype(np.uint64)
    low, high = files[at, 1], files[at, 2]
    inside = known.copy()
    outside = np.zeros(len(ids), dtype=bool)
    if start_ms is not None:
        inside &= low >= start_ms
        outside |= known & (high < start_ms)
    if end_ms is not None:
        inside &= high <= end_ms
        outside |= known & (low > end_ms)
    return inside, ~(inside | outside)


def _run_hits(
    shard: IndexShard,
    query: ProvenanceQuery,
    runs: list[RunEntry],
    claimed: dict[int, tuple[int, int, int]],
    wanted: int,
) -> tuple[list[int], int]:
    """Hits in a shard of runs. By uuid or filename: the rows of that key in every run of
    the field, then the time range and cursor on those rows, then the other fields in
    the fields runs (which hold every event's time too). Otherwise: the claimed files whose summary holds every field's
    value and whose time range and ids can match, and their rows of the fields runs."""
    terms = {name: value for name, value in query.terms().items() if name not in _KEY_FIELDS}
    fields = [(run, shard.run_reader(run)) for run in runs if run.field == "fields"]
    if query.flowfile_uuid is None and query.filename is None:
        firsts = {
            first
            for first, (_, low, high) in claimed.items()
            if query.overlaps(low, high) and (query.max_event_id is None or first <= query.max_event_id)
        }
        if terms and firsts:
            summary = _summary_query(terms)
            matching, count = _search_tantivy(shard, summary, len(claimed) + 1)
            if count > len(matching):  # more documents than claimed files: unclaimed ones too
                matching, count = _search_tantivy(shard, summary, count)
            firsts &= set(matching)
        pages, total = [], 0
        for run, reader in fields:
            for first in run.files:
                if first in firsts:
                    found = reader.select(
                        first, claimed[first][0], terms, query.start_ms, query.end_ms, query.max_event_id
                    )  # type: ignore[union-attr]
                    total += len(found)
                    pages.append(found[-wanted:] if wanted else found[:0])
        ids = np.sort(np.concatenate(pages))[::-1] if pages else np.empty(0, dtype=np.uint64)
        return ids[:wanted].tolist(), total
    found: dict[str, np.ndarray] = {}
    for name, value in (("uuid", query.flowfile_uuid), ("filename", query.filename)):
        if value is None:
            continue
        if name == "uuid" and shard.manifest.uuid_terms == UUID_TERMS_KEY:
            value = uuid_key(value)
        found[name] = _concatenated([shard.run_reader(run).lookup(value) for run in runs if run.field == name])  # type: ignore[union-attr]
    ids = found.pop("uuid") if "uuid" in found else found.pop("filename")
    keep = np.ones(len(ids), dtype=bool)
    if found:  # both uuid and filename: the events that name both
        keep &= np.isin(ids, found["filename"])
    if query.max_event_id is not None:
        keep &= ids <= query.max_event_id
    ids = ids[keep]
    if (query.start_ms is not None or query.end_ms is not None) and len(ids):
        inside, check = time_range_verdicts(ids, claimed, query.start_ms, query.end_ms)
        ids, check = ids[inside | check], check[inside | check]
    else:
        check = np.zeros(len(ids), dtype=bool)
    if (terms or check.any()) and len(ids):
        # The other fields of every hit, and the time of those whose file straddles the
        # range: in the fields runs whose id range holds any of them.
        asked = ids if terms else ids[check]
        held = np.zeros(len(asked), dtype=bool)
        start_ms, end_ms = (query.start_ms, query.end_ms) if check.any() else (None, None)
        low, high = int(asked.min()), int(asked.max())
        for _, reader in fields:
            if reader.low_id <= high and reader.high_id >= low:  # type: ignore[union-attr]
                held |= reader.holds(asked, terms, start_ms, end_ms)  # type: ignore[union-attr]
        if terms:
            ids = ids[held]
        else:
            ids = np.concatenate([ids[~check], asked[held]])
    ids = np.sort(ids)[::-1]
    return ids[:wanted].tolist(), len(ids)


class IndexHits(NamedTuple):
    ids: list[int]  # the page: newest first, `offset` hits on, at most `limit`
    newest_id: int | None  # the newest hit of the listing (offset aside)
    total: int  # hits of the listing
    shards_searched: int
    shards_skipped: int


def _load_manifest(path: str) -> ShardManifest | None:
    manifest = os.path.join(path, MANIFEST)
    try:
        return ShardManifest.from_json(files.read_all(manifest))
    except FileNotFoundError:
        return None
    except ValueError as error:
        raise _damaged(manifest, str(error)) from None


class ShardedIndex:
    def __init__(
        self,
        directory: str,
        *,
        clock_ms: Callable[[], int],
        shard_bytes: int = DEFAULT_SHARD_BYTES,
        shard_max_age_ms: int | None = None,
        writer_heap_bytes: int = 128_000_000,
        writer_threads: int = 2,
        read_only: bool = False,
        run_fan_in: int = FAN_IN,
        run_hooks: RunMergeHooks | None = None,
    ):
        self.directory = directory
        self._clock_ms = clock_ms
        self.shard_bytes = shard_bytes
        self.shard_max_age_ms = shard_max_age_ms
        self._heap = writer_heap_bytes
        self._threads = writer_threads
        self._read_only = read_only
        self._fan_in = run_fan_in
        self._run_hooks = RunMergeHooks.coerce(run_hooks)
        self._lock = threading.Lock()
        self._merge_lock = threading.Lock()  # one merge of runs at a time; taken before _lock
        self.shards: list[IndexShard] = []
        if not read_only:
            files.ensure_directory(directory)
        for name in files.list_names(directory):
            if not name.startswith(SHARD_PREFIX):
                continue
            path = os.path.join(directory, name)
            manifest = _load_manifest(path)
            if manifest is None:
                if read_only:
                    continue
                # Created, but no file ever committed to it: start it afresh.
                files.delete_tree(path)
                continue
            check_segment_files(path)
            shard = IndexShard(path, manifest)
            if not read_only:
                shard.delete_unlisted_runs()
            self.shards.append(shard)

    # -- writing (indexing thread only) ---------------------------------------------

    def _active(self) -> IndexShard:
        if self.shards and not self.shards[-1].manifest.closed:
            if self.shards[-1].manifest.writable:
                return self.shards[-1]
            # Written before uuid keys or before sorted runs: a shard holds one kind of
            # uuid term, in one kind of index, only.
            last = self.shards[-1]
            with self._lock:
                last.manifest.closed = True
                last.save_manifest()
                last.close_writer()
        created = self._clock_ms()
        if self.shards:
            created = max(created, self.shards[-1].manifest.created_ms + 1)
        path = os.path.join(self.directory, f"{SHARD_PREFIX}{created:015d}")
        files.ensure_directory(path)
        shard = IndexShard(path, ShardManifest(created))
        with self._lock:
            self.shards.append(shard)
        return shard

    def index_table(
        self,
        first_id: int,
        last_id: int,
        min_time_ms: int,
        max_time_ms: int,
        table,
        before_commit: Callable[[], None] | None = None,
        before_manifest: Callable[[], None] | None = None,
        timings: dict | None = None,
        merge_runs: bool = True,
    ) -> None:
        """Index the events of one event file and commit; searchable when this returns.
        Files must come in increasing order of first id (rule 2 of the module docstring).
        With `merge_runs`, the shard's full levels of runs are merged before this
        returns; without, the caller has `merge_runs()` called (the runs thread)."""
        shard = self._active()
        writer = shard.open_writer(self._heap, self._threads)
        started = time.perf_counter()
        # The runs are written whole before the commit and the manifest that claim
        # them: a crash before the manifest save leaves run files it does not list,
        # which the next writable opening deletes (`delete_unlisted_runs`).
        runs = []
        files.ensure_directory(shard.runs_path)
        built = build_runs(table)
        for name, rows in built.items():
            if rows.num_rows:
                written = run_format.write_run(shard.runs_path, name, [first_id], rows)
                runs.append(RunEntry(name, written, 0, (first_id,)))
        ran = time.perf_counter()
        writer.add_json(_summary_document(first_id, built))
        added = time.perf_counter()
        if before_commit is not None:
            before_commit()
        writer.commit()
        shard.index.reload()
        if timings is not None:
            timings["index_runs"] = timings.get("index_runs", 0.0) + ran - started
            timings["index_documents"] = timings.get("index_documents", 0.0) + added - ran
            timings["index_commit"] = timings.get("index_commit", 0.0) + time.perf_counter() - added
        if before_manifest is not None:
            before_manifest()
        with self._lock:
            shard.manifest.files[first_id] = (last_id, min_time_ms, max_time_ms)
            shard.manifest.runs = shard.manifest.runs + runs
            shard.save_manifest()
        if merge_runs:
            merging = time.perf_counter()
            with self._merge_lock:
                self._merge_runs(shard)
            if timings is not None:
                timings["index_merge"] = timings.get("index_merge", 0.0) + time.perf_counter() - merging
        with self._lock:
            aged = (
                self.shard_max_age_ms is not None
                and self._clock_ms() - shard.manifest.created_ms >= self.shard_max_age_ms
            )
            if aged or shard.size() >= self.shard_bytes:
                shard.manifest.closed = True
                shard.save_manifest()
                shard.close_writer()

    def merge_runs(self) -> int:
        """Merge the runs of every shard of runs while a level holds `run_fan_in` of them
        (the runs thread: `background`); returns how many merges ran.

        Concurrent with indexing, which only appends runs to the active shard's
        manifest: a merge plans on a copy of the list, and swaps its inputs for the
        merged run under `_lock`; the inputs are still listed then, as nothing else
        removes a run."""
        merges = 0
        with self._merge_lock:
            with self._lock:
                shards = [s for s in self.shards if s.manifest.uuid_index == UUID_INDEX_RUNS]
            for shard in shards:
                merges += self._merge_runs(shard)
        return merges

    def _merge_runs(self, shard: IndexShard) -> int:
        """Merge the shard's runs while a level holds `run_fan_in` of them (the indexing
        thread after the manifest save that claimed the last file, or the runs thread;
        `_merge_lock` held).

        The merged run is written whole, then one manifest save lists it instead of its
        inputs, then the inputs are deleted: a crash before the save leaves the merged
        run unlisted, after it the inputs, and the next writable opening deletes what is
        unlisted. No event is ever in no listed run, nor in two."""
        merges = 0
        while True:
            with self._lock:
                group = plan_merge(shard.manifest.runs, self._fan_in)
            if group is None:
                return merges
            merges += 1
            field_name = group[0].field
            rows = merge_rows(field_name, [shard.run_rows(run) for run in group])
            first_ids = sorted(first for run in group for first in run.files)
            name = run_format.write_run(shard.runs_path, field_name, first_ids, rows)
            merged = RunEntry(field_name, name, group[0].level + 1, tuple(first_ids))
            self._run_hooks.runs_merged(name=name)
            with self._lock:
                shard.manifest.runs = [run for run in shard.manifest.runs if run not in group] + [merged]
                shard.save_manifest()
            self._run_hooks.runs_swapped(name=name)
            shard.forget_readers([run.name for run in group])
            for run in group:
                files.delete(os.path.join(shard.runs_path, run.name))
            files.fsync_directory(shard.runs_path)

    def forget_unclaimed(self) -> int:
        """Delete the active shard's documents that its manifest does not claim (recovery
        only, before anything is indexed again: rule 3 of the module docstring); returns
        how many events they indexed (a shard of runs has one document per event file,
        which says how many events it has). Commits only when there was one."""
        if not self.shards or self.shards[-1].manifest.closed:
            return 0
        shard = self.shards[-1]
        claimed = [(first, last) for first, (last, _, _) in shard.manifest.files.items()]
        queries = [
            tantivy.Query.range_query(shard.schema, "id", tantivy.FieldType.Unsigned, low, high)
            for low, high in unclaimed_id_ranges(claimed)
        ]
        unclaimed = 0
        for query in queries:
            if shard.manifest.uuid_index == UUID_INDEX_RUNS:
                documents = _search_tantivy(shard, query, 1)[1]
                unclaimed += sum(_search_tantivy(shard, query, documents, "count")[0]) if documents else 0
            else:
                unclaimed += _search_tantivy(shard, query, 1)[1]
        if unclaimed:
            writer = shard.open_writer(self._heap, self._threads)
            for query in queries:
                writer.delete_documents_by_query(query)
            writer.commit()
            shard.index.reload()
        return unclaimed

    def indexed_files(self) -> set[int]:
        with self._lock:
            return {fid for s in self.shards for fid in s.manifest.files}

    def drop_shards_without_files(self, existing: set[int]) -> list[str]:
        """Delete every closed shard none of whose event files exist any more (after any
        merge of runs under way: it may be writing into one)."""
        dropped = []
        with self._merge_lock, self._lock:
            keep = []
            for shard in self.shards:
                gone = shard.manifest.files and not (set(shard.manifest.files) & existing)
                if gone and shard.manifest.closed:
                    shard.close_writer()
                    files.delete_tree(shard.path)
                    dropped.append(shard.name)
                else:
                    keep.append(shard)
            self.shards = keep
        return dropped

    def close(self) -> None:
        with self._lock:
            for shard in self.shards:
                shard.close_writer()

    # -- searching ------------------------------------------------------------------

    def search(self, query: ProvenanceQuery) -> IndexHits:
        """The ids of `query`'s page, newest first, and how many hits the listing has."""
        with self._lock:
            shards = list(self.shards)
        ids: list[int] = []
        searched = skipped = total = 0
        wanted = query.offset + query.limit
        for shard in reversed(shards):
            if not _may_match(shard.manifest, query):
                skipped += 1
                continue
            searched += 1
            if shard.manifest.uuid_index == UUID_INDEX_RUNS:
                found, count = self._search_runs(shard, query, wanted)
            else:
                found, count = _search_tantivy(shard, _tantivy_query(query, shard.manifest.uuid_terms), wanted)
            total += count
            ids.extend(found)
        ids.sort(reverse=True)
        return IndexHits(ids[query.offset : wanted], ids[0] if ids else None, total, searched, skipped)

    def _search_runs(self, shard: IndexShard, query: ProvenanceQuery, wanted: int) -> tuple[list[int], int]:
        """The `wanted` newest hits of `query` in a shard of runs, and how many hits."""
        for attempt in range(3):
            with self._lock:
                runs = list(shard.manifest.runs)
                claimed = dict(shard.manifest.files)
            try:
                return _run_hits(shard, query, runs, claimed, wanted)
            except FileNotFoundError:
                # A merge replaced a run since the manifest was read: read it again.
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def refresh(self) -> None:
        """Pick up shards and commits made by another process (read-only users)."""
        fresh = ShardedIndex(self.directory, clock_ms=self._clock_ms, shard_bytes=self.shard_bytes, read_only=True)
        with self._lock:
            self.shards = fresh.shards
