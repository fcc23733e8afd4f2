"""A file closed through HdfsStorage reads whole at once, from another client too.

The harness's NameNode closes a file whose last block is still COMMITTED
(`dfs.namenode.file.close.num-committed-allowed=1`), and until a DataNode reports that
block, milliseconds later, readers are given a length without it: without the wait in
`HdfsStorage`'s close, about one read in forty made right after a close read nothing
(a swap file read back, a WAL recovered at once, would have looked damaged)."""

from __future__ import annotations

from replication.hdfs_storage import HdfsStorage
from repositories.storage import join

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


def test_an_appended_file_reads_whole_right_after_its_close(hdfs_cluster, hdfs_store):
    writer, root = hdfs_store.storage, hdfs_store.root
    path = join(root, "appended")
    with writer.create(path) as file:
        file.write(b"a" * 1000)
    expected = b"a" * 1000
    for round_ in range(20):
        with writer.append(path) as file:
            file.write(b"b" * (round_ + 1))
        expected += b"b" * (round_ + 1)
        assert writer.read(path) == expected
