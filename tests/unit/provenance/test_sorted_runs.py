"""Sorted runs of uuid and filename keys: what a run holds, lookups against a plain
Python answer, the merge plan, the file format and its damage, and what a crash in a
merge of runs leaves (each event found once, no file left over)."""

from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pytest

from repositories.provenance import EventBatch, EventType, ProvenanceEvent, ProvenanceQuery
from repositories.provenance import run_format as rf
from repositories.provenance.errors import CorruptFileError
from repositories.provenance.hooks import RunMergeHooks
from repositories.provenance.index import ShardedIndex
from repositories.provenance.index_documents import uuid_key
from repositories.provenance.sorted_runs import (
    FENCE,
    FieldsReader,
    RunEntry,
    RunReader,
    build_runs,
    merge_rows,
    plan_merge,
)

T0_MS = 1_700_000_000_000
A = "0f8fad5b-d9cb-469f-a165-70867728950e"
B = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def table_of(events: list[ProvenanceEvent], first_id: int) -> pa.Table:
    return pa.Table.from_batches([EventBatch.from_events(events, now_ms=T0_MS).with_ids(first_id)])


def rows_of(table: pa.Table) -> list[tuple[str, int]]:
    return list(zip(*(table.column(n).to_pylist() for n in ("key", "id")), strict=True))


def test_a_run_holds_each_named_uuid_and_filename_once_per_event_sorted():
    events = [
        ProvenanceEvent(EventType.CREATE, A, "c", attributes_after={"filename": "z.txt"}, event_time_ms=T0_MS + 1),
        # Its own uuid also as its child: one row. B as parent and child: one row.
        ProvenanceEvent(EventType.FORK, A, "c", child_uuids=(A, B), parent_uuids=(B,), event_time_ms=T0_MS + 2),
        ProvenanceEvent(EventType.DROP, "not-canonical", "c", attributes_before={"filename": "a.txt"}),
        ProvenanceEvent(EventType.CREATE, B, "c", attributes_after={"filename": ""}),  # empty: not indexed
    ]
    runs = build_runs(table_of(events, 10))
    assert rows_of(runs["uuid"]) == sorted(
        [(uuid_key(A), 10), (uuid_key(A), 11), (uuid_key(B), 11), ("not-canonical", 12), (uuid_key(B), 13)]
    )
    assert rows_of(runs["filename"]) == [("a.txt", 12), ("z.txt", 10)]
    assert runs["uuid"].schema.names == runs["filename"].schema.names == ["key", "id"]  # times: the fields run's


def test_the_fields_run_answers_each_low_cardinality_field_time_and_cursor():
    kinds = [EventType.ROUTE, EventType.DROP, EventType.ATTRIBUTES_MODIFIED, EventType.SEND]
    events = [
        ProvenanceEvent(
            kind,
            A,
            f"comp-{i % 2}",
            relationship=("matched" if i == 0 else "" if i == 2 else None),
            transit_uri="https://peer.example/x" if kind is EventType.SEND else None,
            event_time_ms=T0_MS + i,
        )
        for i, kind in enumerate(kinds)
    ]
    first = build_runs(table_of(events, 20))["fields"]
    second = build_runs(table_of(events[:2], 30))["fields"]
    reader = FieldsReader(merge_rows("fields", [second, first]))
    assert reader.ids.tolist() == [20, 21, 22, 23, 30, 31]

    def select(low=0, high=99, start=None, end=None, cursor=None, **terms):
        return reader.select(low, high, terms, start, end, cursor).tolist()

    assert select(type="ROUTE") == [20, 30]
    assert select(type="ROUTE", component="comp-0") == [20, 30] and select(component="comp-0") == [20, 22, 30]
    assert select(relationship="matched") == [20, 30]
    assert select(relationship="") == []  # an empty relationship is not indexed, as in tantivy
    assert select(type="FETCH") == [] and select(component="nobody") == []
    assert select(low=21, high=29) == [21, 22, 23]
    assert select(start=T0_MS + 1, end=T0_MS + 2) == [21, 22, 31]
    assert select(cursor=22, component="comp-0") == [20, 22]
    held = reader.holds(np.array([20, 21, 25, 30, 99], dtype=np.uint64), {"type": "ROUTE"})
    assert held.tolist() == [True, False, False, True, False]


def test_lookups_match_a_plain_scan_across_fences():
    rng = random.Random(3)
    # Keys that span several fence intervals, keys on a fence, keys of one row.
    keys = ["m"] * (3 * FENCE + 5) + [f"k{rng.randrange(400):03d}" for _ in range(5 * FENCE)] + ["a", "zz"]
    table = pa.table(
        {
            "key": pa.array(keys, pa.string()),
            "id": pa.array(range(len(keys)), pa.uint64()),
            "time_ms": pa.array([T0_MS + i for i in range(len(keys))], pa.int64()),
        }
    )
    reader = RunReader(merge_rows("uuid", [table]))
    for key in sorted(set(keys)) + ["", "0", "k0005", "l", "mm", "zzz"]:
        expected = [i for i, k in enumerate(keys) if k == key]
        assert reader.lookup(key).tolist() == expected, key


def test_lookups_in_a_run_of_one_key_width_match_a_plain_scan(tmp_path):
    # Every key 4 bytes of UTF-8 (uuid keys are all of one width): the binary search over
    # the keys' bytes in place. Keys of many rows across fences, a 2-byte character,
    # keys that differ only in their last byte.
    rng = random.Random(5)
    pairs = ["aa", "ab", "ba", "bb", "é"]  # two bytes each
    keys = [rng.choice(pairs) + rng.choice(pairs) for _ in range(6 * FENCE)] + ["zzzz"] * (2 * FENCE + 3)
    table = pa.table({"key": pa.array(keys, pa.string()), "id": pa.array(range(len(keys)), pa.uint64())})
    name = rf.write_run(str(tmp_path), "uuid", [0], merge_rows("uuid", [table]))
    reader = RunReader(rf.read_run(str(tmp_path / name), "uuid"))
    assert reader._fixed is not None  # the path under test
    for key in sorted(set(keys)) + ["aaa", "aaaaa", "", "abz", "zzzy", "zzz\0", "\0\0\0\0", "ébé"]:
        expected = [i for i, k in enumerate(keys) if k == key]
        assert reader.lookup(key).tolist() == expected, key


def test_a_run_whose_keys_differ_in_width_or_hold_a_nul_is_searched_by_its_fences():
    for keys in (["abcd", "abc", "abce"], ["ab\0d", "abcd", "abce"]):
        table = pa.table({"key": pa.array(keys, pa.string()), "id": pa.array(range(3), pa.uint64())})
        reader = RunReader(merge_rows("uuid", [table]))
        assert reader._fixed is None
        assert [reader.lookup(k).tolist() for k in keys] == [[0], [1], [2]]


def test_the_merge_plan_takes_fan_in_runs_of_the_lowest_level_oldest_first():
    def run(field, level, first):
        return RunEntry(field, rf.run_name(field, [first]), level, (first,))

    runs = [run("uuid", 1, 1), *(run("uuid", 0, f) for f in (9, 5, 7)), run("filename", 0, 5)]
    assert plan_merge(runs, fan_in=4) is None
    assert [r.files for r in plan_merge(runs, fan_in=3)] == [(5,), (7,), (9,)]
    assert plan_merge(runs + [run("uuid", 1, 2)], fan_in=2)[0].level == 0
    assert [r.files for r in plan_merge([run("uuid", 1, 1), run("uuid", 1, 2)], fan_in=2)] == [(1,), (2,)]


def test_a_run_file_reads_back_and_names_itself(tmp_path):
    rows = build_runs(table_of([ProvenanceEvent(EventType.CREATE, A, "c")], 4))["uuid"]
    name = rf.write_run(str(tmp_path), "uuid", [4, 2], rows)
    assert name == f"uuid-{2:020d}-{4:020d}.run" and rf.parse_name(name) == ("uuid", 2, 4)
    assert rf.parse_name(name + ".partial") is None and os.listdir(tmp_path) == [name]
    assert rows_of(rf.read_run(str(tmp_path / name), "uuid")) == rows_of(rows)
    with pytest.raises(CorruptFileError, match="not that of a sorted run"):
        rf.read_run(str(tmp_path / name), "filename")


def test_a_damaged_run_file_is_refused(tmp_path):
    rows = build_runs(table_of([ProvenanceEvent(EventType.CREATE, A, "c")], 1))["uuid"]
    name = rf.write_run(str(tmp_path), "uuid", [1], rows)
    whole = (tmp_path / name).read_bytes()
    for cut in (0, 7, len(whole) // 2, len(whole) - 1):
        (tmp_path / name).write_bytes(whole[:cut])
        with pytest.raises(CorruptFileError, match="index is built from the event files"):
            rf.read_run(str(tmp_path / name), "uuid")


# -- a crash in a merge of runs --------------------------------------------------------


class Crash(Exception):
    pass


def crash(**_where) -> None:
    raise Crash()


def open_index(tmp_path, **seams) -> ShardedIndex:
    return ShardedIndex(
        str(tmp_path / "index"),
        clock_ms=lambda: T0_MS,
        writer_heap_bytes=15_000_000,
        writer_threads=1,
        run_fan_in=2,
        run_hooks=RunMergeHooks(**seams),
    )


def index_file(index: ShardedIndex, first_id: int) -> None:
    events = [ProvenanceEvent(EventType.CREATE, A if i % 2 else B, "c") for i in range(3)]
    index.index_table(first_id, first_id + 2, T0_MS, T0_MS, table_of(events, first_id))


def run_files(tmp_path) -> list[str]:
    [shard] = [p for p in (tmp_path / "index").iterdir()]
    return sorted(os.listdir(shard / "runs"))


@pytest.mark.parametrize("seam", sorted(RunMergeHooks.seam_names()))
def test_a_crash_in_a_merge_of_runs_leaves_every_event_in_one_listed_run(tmp_path, seam):
    index = open_index(tmp_path)
    index_file(index, 1)
    index.close()
    index = open_index(tmp_path, **{seam: crash})
    with pytest.raises(Crash):
        index_file(index, 4)  # the second run of each field: a merge of two
    index.close()

    index = open_index(tmp_path)
    [shard] = index.shards
    assert sorted(run_files(tmp_path)) == sorted(run.name for run in shard.manifest.runs)
    assert index.indexed_files() == {1, 4}
    for uuid, ids in ((A, [5, 2]), (B, [6, 4, 3, 1])):
        assert index.search(ProvenanceQuery(flowfile_uuid=uuid)).ids == ids
    index_file(index, 7)  # the merges go on from what the crash left
    assert index.search(ProvenanceQuery(flowfile_uuid=A)).ids == [8, 5, 2]
    # No filename in these events: no filename run. Files 1 and 4 merged, 7 alone.
    runs = sorted((run.field, run.level, run.files) for run in index.shards[0].manifest.runs)
    assert runs == [(field, level, files) for field in ("fields", "uuid") for level, files in ((0, (7,)), (1, (1, 4)))]
    assert len(run_files(tmp_path)) == 4
    index.close()
