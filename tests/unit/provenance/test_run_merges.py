"""Merges of sorted runs: the merge of runs, and the uuid run built from events, against
a plain Python sort by (key, id), on each path the sort takes; and the runs thread of the
repository (indexing goes on while a merge runs; a failed merge stops the repository)."""

from __future__ import annotations

import random
import threading
import uuid as uuidlib

import numpy as np
import pyarrow as pa
import pytest

from cluster.services.process import wait_until
from repositories.provenance import EventBatch, ProvenanceQuery, ProvenanceRepository
from repositories.provenance.errors import ProvenanceError
from repositories.provenance.hooks import RunMergeHooks
from repositories.provenance.index_documents import uuid_key
from repositories.provenance.sorted_runs import build_runs, merge_rows

from .conftest import event, make_config

T0_MS = 1_700_000_000_000


def key_run(rows: list[tuple[str, int]]) -> pa.Table:
    """A run of version 1 (with a time column, which a merge leaves out)."""
    rows = sorted(rows, key=lambda r: (r[0].encode(), r[1]))
    return pa.table(
        {
            "key": pa.array([k for k, _ in rows], pa.string()),
            "id": pa.array([i for _, i in rows], pa.uint64()),
            "time_ms": pa.array([T0_MS + i for _, i in rows], pa.int64()),
        }
    )


def merged(runs: list[pa.Table]) -> list[tuple[str, int]]:
    table = merge_rows("uuid", runs)
    assert table.schema.names == ["key", "id"]
    return list(zip(*(table.column(n).to_pylist() for n in ("key", "id")), strict=True))


def expected(runs: list[pa.Table]) -> list[tuple[str, int]]:
    columns = [[run.column(n).to_pylist() for n in ("key", "id")] for run in runs]
    rows = [row for keys, ids in columns for row in zip(keys, ids, strict=True)]
    return sorted(rows, key=lambda r: (r[0].encode(), r[1]))


@pytest.mark.parametrize(
    "keys",
    [
        "one width",  # numpy's stable sort of the keys' bytes (a merge in id order)
        "distinct prefixes",  # numpy's sort of the first 8 bytes decides
        "a few shared prefixes",  # and Arrow puts the runs of tied prefixes right
        "one shared prefix",  # Arrow's sort by (key, id) of everything
    ],
)
@pytest.mark.parametrize("ids", ["consecutive", "interleaved"])
def test_a_merge_is_the_rows_of_its_runs_sorted_by_key_then_id(keys, ids):
    rng = random.Random(7)
    pool = [f"{rng.randrange(16**10):010x}" for _ in range(40)] + ["é0000000", "zzzzzzzzz"]  # é: two bytes
    if keys == "one width":
        pool = pool[:40] + ["é00000000"]  # é: two bytes, so ten in all, as the others
    if keys == "a few shared prefixes":
        # Shorter than 8 bytes (zero-padded: "ab" ties "ab\x00"), one prefix and
        # different tails, and a tail that is a NUL byte.
        pool += ["a", "ab", "ab\x00", "zz", "file-000.txt", "file-000", "file-0001.txt", "file-0002.json"]
    if keys == "one shared prefix":
        pool = [f"prefix--{rng.randrange(1000)}" for _ in range(40)]
    runs, next_id = [], 0
    for _ in range(5):
        rows = []
        for _ in range(60):  # keys repeat within a run and across runs: ties broken by id
            rows.append((rng.choice(pool), next_id if ids == "consecutive" else rng.randrange(10**6)))
            next_id += 1
        runs.append(key_run(list({(k, i): None for k, i in rows})))
    rng.shuffle(runs)  # the merge takes them in any order
    assert merged(runs) == expected(runs)


def test_a_uuid_run_built_from_events_naming_uuids_again_is_sorted_by_key_then_id():
    rng = random.Random(11)
    uuids = [str(uuidlib.UUID(int=rng.getrandbits(128), version=4)) for _ in range(300)]
    # Keys that tie on their first 8 bytes and differ after (the first 8 hex digits of
    # a uuid are its key's prefix), and names that are not canonical uuids; each named
    # again by a few events.
    uuids += [uuids[0][:8] + "-0000-4000-8000-" + f"{i:012x}" for i in range(5)] + ["x", "x-1", "not-a-uuid"]
    events = [
        event(uuid=uuids[i % len(uuids)], child_uuids=(rng.choice(uuids),), parent_uuids=(rng.choice(uuids),))
        for i in range(400)
    ]
    table = pa.Table.from_batches([EventBatch.from_events(events, now_ms=T0_MS).with_ids(100)])
    run = build_runs(table)["uuid"]
    rows = list(zip(run.column("key").to_pylist(), run.column("id").to_pylist(), strict=True))
    named = {
        (uuid_key(u), 100 + i) for i, e in enumerate(events) for u in (e.flowfile_uuid, *e.child_uuids, *e.parent_uuids)
    }
    assert rows == sorted(named, key=lambda r: (r[0].encode(), r[1]))


def test_a_merge_of_fields_runs_is_in_id_order_whether_or_not_their_ids_interleave():
    def fields_run(ids: list[int], component: str) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(ids, pa.uint64()),
                "time_ms": pa.array([T0_MS] * len(ids), pa.int64()),
                "type": pa.array(["ROUTE"] * len(ids)).dictionary_encode(),
                "component": pa.array([component] * len(ids)).dictionary_encode(),
                "relationship": pa.array([None] * len(ids), pa.string()).dictionary_encode(),
            }
        )

    later, earlier = fields_run([10, 11, 12], "b"), fields_run([1, 2, 3], "a")
    table = merge_rows("fields", [later, earlier])
    assert table.column("id").to_pylist() == [1, 2, 3, 10, 11, 12]
    assert table.column("component").to_pylist() == ["a"] * 3 + ["b"] * 3
    table = merge_rows("fields", [fields_run([2, 5], "b"), fields_run([1, 3], "a")])
    assert table.column("id").to_pylist() == [1, 2, 3, 5]
    assert table.column("component").to_pylist() == ["a", "b", "a", "b"]


# -- the runs thread -------------------------------------------------------------------


def open_with(tmp_path, hooks: RunMergeHooks) -> ProvenanceRepository:
    config = make_config(tmp_path, run_fan_in=2, max_pending_rollovers=8)
    return ProvenanceRepository(config, run_hooks=hooks)


def generation(repository: ProvenanceRepository, n: int = 20) -> dict[str, int]:
    events = [event(uuid=str(uuidlib.uuid4())) for _ in range(n)]
    ids = repository.register_events(events, now_ms=T0_MS)
    repository.rollover()
    return {e.flowfile_uuid: i for e, i in zip(events, ids, strict=True)}


def test_files_are_indexed_while_the_runs_thread_is_in_a_merge(tmp_path):
    entered, release = threading.Event(), threading.Event()
    merging_threads = []

    def hold(**_where) -> None:
        merging_threads.append(threading.current_thread().name)
        entered.set()
        release.wait(30)

    repository = open_with(tmp_path, RunMergeHooks(runs_merged=hold))
    try:
        ids = generation(repository) | generation(repository)  # the second file's runs: a merge of two
        wait_until(entered.is_set, timeout=30, what="the merge of the first two files' runs")
        third = generation(repository)
        some = next(iter(third))
        # The merge is still held, and the third file is indexed and searchable all the same.
        wait_until(
            lambda: [e.event_id for e in repository.query(ProvenanceQuery(flowfile_uuid=some)).events] == [third[some]],
            timeout=30,
            what="the third file indexed while the merge waits",
        )
        assert not release.is_set() and merging_threads == ["provenance-runs"]
        release.set()
        repository.wait_idle(30)
        runs = sorted((r.field, r.level, r.files) for r in repository.index.shards[-1].manifest.runs)
        firsts = sorted({f for r in runs for f in r[2]})
        assert [r for r in runs if r[0] == "uuid"] == [("uuid", 0, (firsts[2],)), ("uuid", 1, tuple(firsts[:2]))]
        for uuid, event_id in (ids | third).items():
            assert [e.event_id for e in repository.query(ProvenanceQuery(flowfile_uuid=uuid)).events] == [event_id]
    finally:
        release.set()
        repository.close(timeout=30)


class Broken(Exception):
    pass


def test_a_failed_merge_of_runs_stops_the_repository_and_a_restart_finishes_it(tmp_path):
    def fail(**_where) -> None:
        raise Broken()

    repository = open_with(tmp_path, RunMergeHooks(runs_merged=fail))
    ids = generation(repository) | generation(repository)
    with pytest.raises(ProvenanceError):
        repository.wait_idle(30)
    repository.close(timeout=30)

    repository = open_with(tmp_path, RunMergeHooks())
    try:
        repository.wait_idle(30)  # the start's merge pass finishes what the failure left
        runs = repository.index.shards[-1].manifest.runs
        assert sorted((r.field, r.level) for r in runs) == [("fields", 1), ("filename", 1), ("uuid", 1)]
        for uuid, event_id in ids.items():
            assert [e.event_id for e in repository.query(ProvenanceQuery(flowfile_uuid=uuid)).events] == [event_id]
    finally:
        repository.close(timeout=30)


@pytest.mark.parametrize("ties", ["none", "a few", "many"])
def test_rows_of_keys_named_once_are_sorted_by_key_then_id_whether_their_prefixes_tie_or_not(ties):
    # Keys named once take numpy's unstable sort of their 8-byte prefixes, the runs of
    # tied prefixes sorted after; keys named again and again the stable sort.
    from repositories.provenance.sorted_runs import _key_id_order

    rng = random.Random(5)
    keys = list({f"{rng.randrange(16**16):016x}": None for _ in range(2000)})
    if ties == "a few":  # shorter than 8 bytes (zero-padded), and one prefix, tails differing
        keys += ["ab", "ab\x00", "a", "file-000.txt", "file-000", "file-0001.txt", "file-0002.json"]
    if ties == "many":
        keys += [keys[i % 50] for i in range(1000)]
    ids = list(range(len(keys)))
    rng.shuffle(ids)
    order = _key_id_order(pa.array(keys, pa.string()), np.array(ids, dtype=np.uint64), in_id_order=False)
    assert order is not None
    rows = [(keys[i].encode(), ids[i]) for i in order]
    assert rows == sorted(zip((k.encode() for k in keys), ids, strict=True))
