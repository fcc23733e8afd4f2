"""A file closed through HdfsStorage reads whole at once, from another client too.

The harness's NameNode closes a file whose last block is still COMMITTED
(`dfs.namenode.file.close.num-committed-allowed=1`), and until a DataNode reports that
block, milliseconds later, readers are given a length without it: without the wait in
`HdfsStorage`'s close, about one read in forty made right after a close read nothing
(a swap file read back, a WAL recovered at once, would have looked damaged).

A file is never reopened for appending on HDFS (`HdfsStorage.append` refuses): a WAL
recovered right after its close writes new journals."""

from __future__ import annotations

import pytest

from replication.hdfs_storage import HdfsStorage
from repositories.storage import StorageError, join

ROUNDS = 300


def test_a_file_reads_whole_right_after_its_close(hdfs_cluster, hdfs_store):
    writer, root = hdfs_store.storage, hdfs_store.root
    other = HdfsStorage(hdfs_cluster.url)  # another node's client
    short = []
    for round_ in range(ROUNDS):
        data = bytes([round_ % 251]) * (1000 + round_)
        path = join(root, f"file-{round_ % 10}")
        with writer.create(path, overwrite=True) as file:
            file.write(data)
        read_back = other.read(path)
        if read_back != data:
            short.append((round_, len(read_back), len(data)))
    assert short == []


def test_a_wal_reopened_on_hdfs_right_after_its_close_writes_new_journals_and_keeps_every_record(hdfs_store):
    """Reopened at once, twenty times, as a test of appends did: that test failed one
    CI run in a few (an append left a replica out of its pipeline; the next one
    through it failed), and recovery now writes new journals instead."""
    from repositories.flowfile import FlowFileRecord, Put, WriteAheadLog

    storage, directory = hdfs_store.storage, join(hdfs_store.root, "wal")
    storage.mkdir(directory)
    expected: set[str] = set()
    for round_ in range(20):
        wal = WriteAheadLog(storage, directory, partitions=2, checkpoint_interval=None)
        try:
            assert set(wal.recover()) == expected
            if round_:
                assert wal.last_recovery.checkpoint_reasons == ["hdfs storage does not reopen journals"]
            record_id = f"ff-{round_}"
            wal.update([Put(FlowFileRecord(record_id, {"round": str(round_)}, None, "q", 0, 0, 0))])
            expected.add(record_id)
        finally:
            wal.close()
    assert len(expected) == 20


def test_an_append_on_hdfs_is_one_clear_refusal(hdfs_store):
    path = join(hdfs_store.root, "written-once")
    with hdfs_store.storage.create(path) as file:
        file.write(b"a" * 1000)
    with pytest.raises(StorageError, match="HDFS files are not reopened for appending"):
        hdfs_store.storage.append(path)
    assert hdfs_store.storage.read(path) == b"a" * 1000
