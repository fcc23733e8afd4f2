"""Adoption on real HDFS, in process: a whole shard with swap files (their
registrations follow the fenced directory), and a divvied shard whose slices
together hold every FlowFile and swap file exactly once."""

from __future__ import annotations

import pytest

from cluster.core import ownership as own
from cluster.core.layout import ClusterLayout
from cluster.core.ownership import HASH_SPACE
from cluster.errors import FencedError
from cluster.failover.adoption import WalOptions, adopt_shard, open_home_shard, slice_hash
from cluster.failover.fencing import fence
from repositories.flowfile import FlowFileRecord, Put, SwapFile, SwapOut
from repositories.swap import SwapStore

pytestmark = [pytest.mark.hdfs]
OPTIONS = WalOptions(partitions=2, checkpoint_interval=None)


def record(index: int, queue: str = "q") -> FlowFileRecord:
    return FlowFileRecord(f"ff-{index}", {"i": str(index)}, None, queue, 10, index, index)


@pytest.fixture
def layout(hdfs_store):
    layout = ClusterLayout("c1", hdfs_store.root)
    hdfs_store.storage.mkdir(layout.hdfs_shards, parents=True)
    return layout


def fill_home_shard(storage, layout, shard_id: str, epoch: int, live: int, swapped: list[list[int]]):
    """A home shard with `live` queued FlowFiles and one swap file per list in `swapped`."""
    home = own.new_shard(shard_id, shard_id, epoch, at=0.0)
    handle = open_home_shard(storage, layout, home, OPTIONS)
    wal = handle.open_wal()
    wal.recover()
    wal.update([Put(record(i)) for i in range(live)])
    store = SwapStore(storage, handle.swap_directory)
    store.prepare()
    for batch in swapped:
        wal.update([Put(record(i)) for i in batch])
        summary = store.write("q", [record(i) for i in batch])
        wal.update(
            [SwapOut(SwapFile(summary.location, "q", summary.count, summary.size), tuple(f"ff-{i}" for i in batch))]
        )
    wal.close()
    return home


def test_an_adopted_shard_keeps_its_swap_files_under_the_fenced_directory(hdfs_store, layout):
    storage = hdfs_store.storage
    home = fill_home_shard(storage, layout, "n1-4", 4, live=20, swapped=[list(range(100, 110)), list(range(200, 205))])
    moved = own.reassign(home, "n2-5", expected_epoch=4, at=1.0)
    handle = adopt_shard(storage, layout, moved, OPTIONS)
    assert handle.directory == layout.fenced_directory("n1-4", 5)
    wal = handle.open_wal()
    records = wal.recover()
    assert sorted(records) == sorted(f"ff-{i}" for i in range(20))
    store = SwapStore(storage, handle.swap_directory)
    swapped = {}
    for location, _swap_file in wal.swap_files.items():
        assert location.startswith(handle.directory + "/swap/"), location
        summary = store.read_summary(location)  # registered, not loaded
        swapped[location] = summary.count
    assert sorted(swapped.values()) == [5, 10]
    assert sorted(store.locations()) == sorted(swapped)  # nothing looks orphaned
    wal.close()


def test_a_home_shard_fenced_before_its_node_opened_it_is_refused(hdfs_store, layout):
    storage = hdfs_store.storage
    fence(storage, layout, "n3-8", 9)  # the node was declared dead before it got going
    with pytest.raises(FencedError, match="you are dead"):
        open_home_shard(storage, layout, own.new_shard("n3-8", "n3-8", 8, at=0.0), OPTIONS)


def test_divvy_slices_hold_every_flowfile_and_swap_file_exactly_once(hdfs_store, layout):
    storage = hdfs_store.storage
    batches = [list(range(1000 + 10 * b, 1010 + 10 * b)) for b in range(6)]
    home = fill_home_shard(storage, layout, "n1-4", 4, live=200, swapped=batches)
    middle = HASH_SPACE // 3
    parent, children = own.split(
        home, [("n1-4.e5s0", "a-6", 0, middle), ("n1-4.e5s1", "b-7", middle, HASH_SPACE)], expected_epoch=4, at=1.0
    )
    # The first adopter of slice 0 crashes after copying (before it was marked seeded):
    adopt_shard(storage, layout, children[0], OPTIONS)
    # ...so its next adopter (epoch moved on) throws the copy away and copies again.
    retried = own.reassign(children[0], "c-8", expected_epoch=5, at=2.0)
    assert not retried.seeded
    handles = [adopt_shard(storage, layout, retried, OPTIONS), adopt_shard(storage, layout, children[1], OPTIONS)]
    seen_records, seen_swapped = [], []
    for handle, child in zip(handles, (retried, children[1]), strict=False):
        wal = handle.open_wal()
        records = wal.recover()
        assert all(child.source.contains(slice_hash(record_id)) for record_id in records)
        seen_records += list(records)
        store = SwapStore(storage, handle.swap_directory)
        for location in wal.swap_files:
            assert location.startswith(handle.directory + "/")
            _, swapped = store.read(location)
            seen_swapped += [r.id for r in swapped]
        wal.close()
    assert sorted(seen_records) == sorted(f"ff-{i}" for i in range(200))
    assert sorted(seen_swapped) == sorted(f"ff-{i}" for batch in batches for i in batch)
    assert len(seen_records) == len(set(seen_records)) and len(seen_swapped) == len(set(seen_swapped))
    # The parent's fenced data was only read: it still holds everything as its owner left it.
    assert parent.state is own.ShardState.SPLIT
