"""Custody's files ask HDFS for small blocks (`replication.block_size`), so that the
blocks it keeps open or leaves unfinished do not make the NameNode refuse new ones.

The NameNode places a block on a DataNode only if its free space, less one block of the
new file's size for each block scheduled on it and not reported finished, still holds
one. A long compose drill met it with HDFS's 128 MB default: about 310 unfinished
blocks per DataNode (open journals, the hedges that lost, writers given up) against
41 GB free, and every new block was refused. (A DataNode also reserves room for each
replica being written, as large as its own dfs.blocksize: the harness's and compose's
DataNodes say 16m, `cluster/services/hadoop/hdfs-site.properties`.)

Here on a fresh HDFS of its own whose DataNodes have about 1.5 GiB free (the rest of the
disk reserved, `dfs.datanode.du.reserved`): 24 files held open at once, each written
and hsynced, as a node's journals and content files are. With Custody's block size
every one gets its block; with the 128 MB default named in the client settings the
NameNode refuses some, which shows that the room is what decides."""

from __future__ import annotations

import os

import pytest

from replication.block_size import DEFAULT_BLOCK_SIZE
from replication.hdfs_storage import HdfsStorage
from repositories.storage import StorageError, join
from tests.conftest import own_hdfs

pytestmark = [pytest.mark.hdfs]

# What the reservation leaves each DataNode: a DataNode takes a replica only with more
# than its block size plus 1 GiB free (Hadoop's round-robin volume choice keeps 1 GiB
# spare), so 1.5 GiB leaves room for about 30 of Custody's 16 MiB replicas, while the
# NameNode places about 10 blocks of 128 MB on each.
FREE_PER_DATANODE = 3 << 29
OPEN_FILES = 24  # with replication 2 of 3, 16 replicas on each DataNode
HDFS_DEFAULT_BLOCK_SIZE = "128m"
IO_TIMEOUT = 2.0


def reserved_leaving(path, free: int) -> int:
    """`dfs.datanode.du.reserved` that leaves a DataNode on `path`'s disk `free` bytes.

    A DataNode's remaining space is the disk's space available to it, less what is
    reserved and not already used by others: available - (reserved - non-HDFS used),
    with non-HDFS used = total - free-including-root's (its blocks, here, are few)."""
    disk = os.statvfs(path)
    total, all_free, available = (count * disk.f_frsize for count in (disk.f_blocks, disk.f_bfree, disk.f_bavail))
    return available + (total - all_free) - free


def open_files(storage: HdfsStorage, directory: str) -> tuple[list, list[str]]:
    """OPEN_FILES files under `directory`, each written and hsynced and left open."""
    storage.mkdir(directory)
    held, refused = [], []
    for n in range(OPEN_FILES):
        path = join(directory, f"journal-{n}")
        try:
            file = storage.create(path)
            file.write(b"a transaction;" * 64)
            file.sync()
            held.append(file)
        except StorageError as error:
            refused.append(f"{path}: {error}")
    return held, refused


def test_files_held_open_on_a_nearly_full_hdfs_all_get_blocks(tmp_path):
    workdir = tmp_path / "services"
    workdir.mkdir()
    with own_hdfs(
        workdir, settings={"dfs.datanode.du.reserved": reserved_leaving(workdir, FREE_PER_DATANODE)}
    ) as cluster:
        remaining = [node["remaining"] for node in cluster.live_datanodes_info().values()]
        assert all(remaining_bytes < 2 * FREE_PER_DATANODE for remaining_bytes in remaining), remaining

        custody = HdfsStorage(cluster.url, cluster.client_config, io_timeout=IO_TIMEOUT)
        assert custody.block_size == DEFAULT_BLOCK_SIZE
        held, refused = open_files(custody, "/custody-blocks")
        print(
            f"\nremaining per DataNode {remaining}; Custody's {DEFAULT_BLOCK_SIZE >> 20} MiB blocks: "
            f"{len(held)} of {OPEN_FILES} held open, refused {len(refused)}"
        )
        assert not refused, refused
        for file in held:
            file.close()

        # A file larger than a block: written and synced across three blocks, read back.
        chunks = [bytes([n]) * (1 << 20) for n in range(40)]
        path = "/custody-blocks/larger-than-a-block"
        file = custody.create(path)
        for n, chunk in enumerate(chunks):
            file.write(chunk)
            if n in (0, 20):
                file.sync()
        file.close()
        whole = b"".join(chunks)
        assert custody.status(path).length == len(whole)
        assert custody.read(path) == whole
        assert custody.read(path, DEFAULT_BLOCK_SIZE - 3, 6) == whole[DEFAULT_BLOCK_SIZE - 3 : DEFAULT_BLOCK_SIZE + 3]
        with custody.open_read(path) as stream:
            assert stream.read() == whole

        default = HdfsStorage(
            cluster.url, {**cluster.client_config, "dfs.blocksize": HDFS_DEFAULT_BLOCK_SIZE}, io_timeout=IO_TIMEOUT
        )
        held, refused = open_files(default, "/default-blocks")
        print(f"HDFS's {HDFS_DEFAULT_BLOCK_SIZE} blocks: {len(held)} held open, refused {len(refused)}")
        assert refused, "with 128 MB blocks every file got one: the reservation did not leave the room intended"
        for file in held:
            file.close()
