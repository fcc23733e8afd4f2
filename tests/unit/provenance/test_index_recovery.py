"""What index recovery may delete: the documents no shard manifest claims, and only those."""

from __future__ import annotations

import pyarrow as pa
import pytest

from repositories.provenance import EventBatch, EventType, ProvenanceEvent, ProvenanceQuery
from repositories.provenance.index import ShardedIndex

T0_MS = 1_700_000_000_000


class Crash(Exception):
    pass


def file_of(first_id: int, count: int) -> pa.Table:
    events = [ProvenanceEvent(EventType.CREATE, f"uuid-{first_id + i}", "indexed") for i in range(count)]
    return pa.Table.from_batches([EventBatch.from_events(events, now_ms=T0_MS + first_id).with_ids(first_id)])


def open_index(tmp_path) -> ShardedIndex:
    return ShardedIndex(str(tmp_path / "index"), clock_ms=lambda: T0_MS, writer_heap_bytes=15_000_000, writer_threads=1)


def index_file(index: ShardedIndex, first_id: int, count: int, **seams) -> None:
    index.index_table(
        first_id, first_id + count - 1, T0_MS + first_id, T0_MS + first_id, file_of(first_id, count), **seams
    )


def crash():
    raise Crash()


def found_ids(index: ShardedIndex) -> list[int]:
    return sorted(index.search(ProvenanceQuery(component_id="indexed", limit=1000)).ids)


def test_forgetting_spares_the_claimed_documents_of_files_indexed_out_of_order(tmp_path):
    # Rule 2 broken on purpose: files 1-5 and 11-15 claimed, then 6-10 committed and
    # never claimed. Forgetting must delete 6-10 and keep both claimed files.
    index = open_index(tmp_path)
    index_file(index, 1, 5)
    index_file(index, 11, 5)
    with pytest.raises(Crash):
        index_file(index, 6, 5, before_manifest=crash)
    index.close()

    index = open_index(tmp_path)
    assert index.indexed_files() == {1, 11}
    assert index.forget_unclaimed() == 5
    assert found_ids(index) == [*range(1, 6), *range(11, 16)]
    assert index.forget_unclaimed() == 0
    index_file(index, 6, 5)
    assert found_ids(index) == list(range(1, 16))
    index.close()
