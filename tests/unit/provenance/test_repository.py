import os
import threading

import pytest

from repositories.provenance import EventNotFoundError, EventType, ProvenanceQuery
from repositories.provenance.event_file import EventFile
from repositories.provenance.policies import RolloverPolicy

from .conftest import event


def test_many_threads_write_all_journals_round_robin_with_unique_increasing_ids(open_repo, tmp_path):
    repo = open_repo()
    results, lock = [], threading.Lock()

    def writer(n):
        for _ in range(25):
            ids = repo.register_events([event("CREATE") for _ in range(3)])
            with lock:
                results.append(ids)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_ids = [i for r in results for i in r]
    assert sorted(all_ids) == list(range(1, 451))
    # 2 containers x 2 journals, each got frames: writes are spread round-robin.
    for container in ("c0", "c1"):
        journals = os.listdir(tmp_path / container / "journals")
        assert len(journals) == 2
        assert all(os.path.getsize(tmp_path / container / "journals" / j) > 32 for j in journals)
    repo.sync()
    assert [e.event_id for e in repo.events(1, 1000)] == list(range(1, 451))


def test_rollover_by_time_with_injected_clock(open_repo, clock):
    repo = open_repo(rollover=RolloverPolicy(max_age_s=30, max_bytes=None))
    assert not repo.maybe_rollover()  # empty generation never rolls
    repo.register_events([event() for _ in range(5)])
    clock.advance(29)
    assert not repo.maybe_rollover()
    clock.advance(1)
    assert repo.maybe_rollover()
    repo.wait_idle(30)
    (entry,) = repo.event_files()
    assert os.path.basename(entry.path) == f"{1:020d}.prov" and entry.last_id == 5


def test_rollover_by_size_from_the_writer(open_repo):
    repo = open_repo(rollover=RolloverPolicy(max_age_s=None, max_bytes=20_000))
    for _ in range(10):
        repo.register_events([event() for _ in range(20)])
    repo.sync()
    files = repo.event_files()
    assert len(files) >= 3
    # Named after their first id; ranges never overlap; events stored in order.
    for previous, current in zip(files, files[1:], strict=False):
        assert previous.last_id < current.first_id
    assert [e.event_id for e in repo.events(1, 500)] == list(range(1, 201))
    # Event files are spread over the containers, like the journals.
    assert {os.path.dirname(os.path.dirname(f.path)) for f in files} == set(repo.containers)


def test_event_file_blocks_and_get_reads_one_block(open_repo, monkeypatch):
    repo = open_repo(block_bytes=16_384)
    repo.register_events([event(details="x" * 200) for _ in range(600)])
    repo.sync()
    (entry,) = repo.event_files()
    blocks = entry.reader.blocks
    assert len(blocks) > 5
    assert blocks[0].first_id == 1 and [b.first_id for b in blocks] == sorted(b.first_id for b in blocks)
    reads = []
    original = EventFile.read_block
    monkeypatch.setattr(EventFile, "read_block", lambda self, i: reads.append(i) or original(self, i))
    assert repo.get(444).event_id == 444
    assert reads == [entry.reader.block_index_for(444)]
    with pytest.raises(EventNotFoundError):
        repo.get(601)


def test_sequential_retrieval_crosses_files(open_repo):
    repo = open_repo()
    for _ in range(3):
        repo.register_events([event() for _ in range(10)])
        repo.rollover()
    repo.wait_idle()
    assert [e.event_id for e in repo.events(8, 15)] == list(range(8, 23))
    assert repo.events(31, 5) == []


def test_queries_by_each_indexed_field_time_and_limit(open_repo, clock):
    repo = open_repo()
    t0 = int(clock() * 1000)
    repo.register_events(
        [
            event("RECEIVE", "uuid-a", component_id="getter", attributes_after={"filename": "a.csv"}, event_time_ms=t0),
            event("ROUTE", "uuid-a", component_id="router", relationship="matched", event_time_ms=t0 + 10),
            event("FORK", "uuid-a", component_id="splitter", child_uuids=("uuid-b",), event_time_ms=t0 + 20),
            event("SEND", "uuid-b", component_id="sender", event_time_ms=t0 + 30),
        ]
    )
    repo.sync()

    def ids(**q):
        return [e.event_id for e in repo.query(ProvenanceQuery(**q)).events]

    assert ids(flowfile_uuid="uuid-a") == [3, 2, 1]
    assert ids(flowfile_uuid="uuid-b") == [4, 3]  # the FORK names it as a child
    assert ids(event_type=EventType.SEND) == [4]
    assert ids(filename="a.csv") == [1]
    assert ids(component_id="router") == [2]
    assert ids(relationship="matched") == [2]
    assert ids(start_ms=t0 + 10, end_ms=t0 + 20) == [3, 2]
    assert ids(flowfile_uuid="uuid-a", start_ms=t0 + 15) == [3]
    assert ids(flowfile_uuid="uuid-a", start_ms=t0 + 5, end_ms=t0 + 15) == [2]  # the file straddles both
    assert ids(flowfile_uuid="uuid-a", start_ms=t0, end_ms=t0 + 30) == [3, 2, 1]  # the file inside
    assert ids(flowfile_uuid="uuid-a", start_ms=t0 + 31) == []  # the file outside
    assert ids(flowfile_uuid="uuid-a", component_id="splitter", start_ms=t0 + 5) == [3]
    assert ids(flowfile_uuid="uuid-a", component_id="router", start_ms=t0 + 15) == []
    assert ids(filename="a.csv", end_ms=t0 + 5) == [1] and ids(filename="a.csv", start_ms=t0 + 5) == []
    assert ids(flowfile_uuid="uuid-a", limit=2) == [3, 2]
    assert ids(flowfile_uuid="nobody") == []
    graph = repo.lineage("uuid-b")
    assert graph.ancestors == {"uuid-a"}


def test_shards_by_size_named_by_creation_time_and_skipped_by_time(open_repo, clock, tmp_path):
    repo = open_repo(shard_bytes=1)  # every file closes its shard
    for _hour in range(3):
        repo.register_events([event(event_time_ms=int(clock() * 1000)) for _ in range(5)])
        repo.sync()
        clock.advance(3600)
    shards = sorted(os.listdir(tmp_path / "c0" / "index"))
    assert len(shards) == 3
    assert [int(s.split("-")[1]) for s in shards] == sorted(int(s.split("-")[1]) for s in shards)
    start = int((clock() - 3600) * 1000)
    result = repo.query(ProvenanceQuery(start_ms=start - 1000, end_ms=start + 1000))
    assert [e.event_id for e in result.events] == [15, 14, 13, 12, 11]
    assert (result.shards_searched, result.shards_skipped) == (1, 2)


def test_age_off_by_age_drops_files_then_whole_shards(open_repo, clock, tmp_path):
    repo = open_repo(shard_bytes=1, max_age_s=3600)
    for _ in range(3):
        repo.register_events([event("CREATE", "same-uuid", event_time_ms=int(clock() * 1000))])
        repo.sync()
        clock.advance(1800)
    assert repo.age_off() == [1]  # newest event of file 1 is 90 min old
    assert len(os.listdir(tmp_path / "c0" / "index")) == 2
    assert [e.event_id for e in repo.query(ProvenanceQuery(flowfile_uuid="same-uuid")).events] == [3, 2]
    with pytest.raises(EventNotFoundError):
        repo.get(1)


def test_index_shards_close_after_a_quarter_of_the_retention_so_age_off_drops_them(open_repo, clock, tmp_path):
    # Far below the shard size: only time closes the shards, or age-off could never
    # drop one and the index would grow for as long as the node runs.
    repo = open_repo(max_age_s=400)
    for _ in range(6):
        repo.register_events([event("CREATE", "u", event_time_ms=int(clock() * 1000))])
        repo.sync()
        clock.advance(60)
    # A shard closes once it is 100 s old (a quarter of 400): events at 0, 60, 120 s, then 180, 240, 300 s.
    assert len(os.listdir(tmp_path / "c0" / "index")) == 2
    clock.advance(600)
    repo.register_events([event("CREATE", "u", event_time_ms=int(clock() * 1000))])
    repo.sync()
    assert repo.age_off() == [1, 2, 3, 4, 5, 6]
    assert len(os.listdir(tmp_path / "c0" / "index")) == 1  # only the shard of the newest event is left
    assert [e.event_id for e in repo.query(ProvenanceQuery(flowfile_uuid="u")).events] == [7]


def test_age_off_by_size_to_ninety_percent_and_skips_hits_in_gone_files(open_repo):
    repo = open_repo()
    for _ in range(10):
        repo.register_events([event("CREATE", "shared") for _ in range(20)])
        repo.sync()
    sizes = [f.size for f in repo.event_files()]
    limit = int(sum(sizes) * 0.75)
    repo = repo  # same repository, new limit
    object.__setattr__(repo.config, "max_bytes", limit)
    doomed = repo.age_off()
    remaining = repo.storage_bytes()
    assert remaining <= limit * 0.9
    assert doomed == [f for f in range(1, 200, 20)][: len(doomed)]  # oldest first
    # The shard still holds documents of destroyed files: they are skipped, not errors.
    result = repo.query(ProvenanceQuery(flowfile_uuid="shared", limit=1000))
    assert result.skipped_missing == 20 * len(doomed)
    assert len(result.events) == 200 - 20 * len(doomed) and not result.errors


def test_uuids_sharing_an_index_key_are_told_apart(open_repo, clock):
    # Keys keep the first 8 and last 12 hex digits: these two uuids share one.
    a = "0f8fad5b-0000-4000-8000-70867728950e"
    b = "0f8fad5b-1111-4111-9111-70867728950e"
    repo = open_repo()
    t0 = int(clock() * 1000)
    repo.register_events(
        [event("CREATE", a, event_time_ms=t0)]
        + [event("CREATE", b, event_time_ms=t0) for _ in range(5)]
        + [event("FORK", b, child_uuids=(a,), event_time_ms=t0)]
    )
    repo.sync()

    def ids(**q):
        return [e.event_id for e in repo.query(ProvenanceQuery(**q)).events]

    assert ids(flowfile_uuid=a) == [7, 1]
    assert ids(flowfile_uuid=a, limit=1) == [7]
    # Only false candidates in the first answer: the query asks again until it finds one.
    repo.register_events([event("CREATE", b, event_time_ms=t0) for _ in range(3)])
    repo.sync()
    assert ids(flowfile_uuid=a, limit=2) == [7, 1]
    assert ids(flowfile_uuid=b, limit=3) == [10, 9, 8]
    assert ids(flowfile_uuid="0f8fad5b-2222-4222-a222-70867728950e") == []


def test_a_shard_from_before_uuid_keys_is_searched_by_whole_uuid_and_closed(tmp_path, clock, monkeypatch):
    import json

    from repositories.provenance import ProvenanceRepository, index_documents

    from .conftest import make_config

    old = "0f8fad5b-d9cb-469f-a165-70867728950e"
    new = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    # Index as before keys: whole uuids, and a manifest without `uuid_terms`.
    monkeypatch.setattr(index_documents, "uuid_keys", lambda column: column)
    repo = ProvenanceRepository(make_config(tmp_path), clock=clock)
    repo.register_events([event("CREATE", old, event_time_ms=int(clock() * 1000))])
    repo.close()
    monkeypatch.undo()
    [shard] = [p for p in (tmp_path / "c0" / "index").iterdir()]
    manifest = json.loads((shard / "shard.json").read_text())
    del manifest["uuid_terms"]
    (shard / "shard.json").write_text(json.dumps(manifest))

    repo = ProvenanceRepository(make_config(tmp_path), clock=clock)
    try:
        assert [e.event_id for e in repo.query(ProvenanceQuery(flowfile_uuid=old)).events] == [1]
        clock.advance(1)
        repo.register_events(
            [
                event("CREATE", new, event_time_ms=int(clock() * 1000)),
                event("FORK", new, child_uuids=(old,), event_time_ms=int(clock() * 1000)),
            ]
        )
        repo.sync()
        assert len(repo.index.shards) == 2 and repo.index.shards[0].manifest.closed
        assert [e.event_id for e in repo.query(ProvenanceQuery(flowfile_uuid=old)).events] == [3, 1]
        assert [e.event_id for e in repo.query(ProvenanceQuery(flowfile_uuid=new)).events] == [3, 2]
    finally:
        repo.close()
