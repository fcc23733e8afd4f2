"""Reads in the second after a DataNode froze are answered by another replica in about
a second, not after the client's socket timeout: hedged reads
(`replication.hedged_reads`), on the real HDFS of the harness.

A frozen DataNode (SIGSTOP) is what a dead machine is to a reader: its address takes
the connection (here: the kernel still accepts on its port) and nothing answers. Every
file has a replica on it (replication 3 of 3 DataNodes), so about one read in three is
sent to it first, and the reads begin at once, before the NameNode finds it stale
(1 s) and sends readers to it last. The client's socket timeout is 10 s here, so a
read that waited for it instead of being asked again would take 10 s or more.

Both ways a file is read: `read` (a whole file or a range: swap files, WAL journals)
and `open_read` (a stream: content claims), whose every buffered read is hedged and
goes on with the reader that answered."""

from __future__ import annotations

import threading
import time

import hdfs_native
import pytest

from cluster.drills.flow_cluster import IO_TIMEOUT
from cluster.drills.harness import HDFS_CLIENT
from replication.hdfs_storage import HdfsStorage
from repositories.storage import join

pytestmark = [pytest.mark.hdfs]

FILES = 24  # about 8 sent to the frozen DataNode first; none is (2/3)^24, 6 in 100,000
SOCKET_TIMEOUT_MS = 10_000
# A read is asked again every 0.4 s, and once the DataNode is stale (1 s) the NameNode
# sends the new reader elsewhere first: about 1.2 s, with room for a loaded machine, and
# half the socket timeout that a read without hedges waits.
READ_BOUND = 5.0
FROZEN = 0  # the harness's DataNode index: every block has a replica there


def read_whole(storage: HdfsStorage, path: str) -> bytes:
    return storage.read(path)


def read_streamed(storage: HdfsStorage, path: str) -> bytes:
    with storage.open_read(path) as stream:
        return stream.read()


@pytest.mark.parametrize("read_file", [read_whole, read_streamed], ids=["read", "open_read"])
def test_reads_in_the_second_after_a_datanode_froze_are_answered_by_another_replica(
    hdfs_cluster, hdfs_store, read_file
):
    config = {**hdfs_cluster.client_config, **HDFS_CLIENT, "dfs.client.socket-timeout": str(SOCKET_TIMEOUT_MS)}
    directory = join(hdfs_store.root, f"hedged-{read_file.__name__}")
    hdfs_store.storage.mkdir(directory)
    writer = hdfs_native.Client(hdfs_cluster.url, config)
    contents = {}
    for number in range(FILES):
        path = join(directory, f"f{number}")
        contents[path] = f"file {number} ".encode() * 100
        with writer.create(path, hdfs_native.WriteOptions(replication=3)) as out:
            out.write(contents[path])
    storage = HdfsStorage(hdfs_cluster.url, config, io_timeout=IO_TIMEOUT)
    read: dict[str, bytes] = {}
    took: dict[str, float] = {}
    errors: list[str] = []

    def reader(path: str) -> None:
        began = time.monotonic()
        try:
            read[path] = read_file(storage, path)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(f"{path}: {error}")
        took[path] = time.monotonic() - began

    readers = [threading.Thread(target=reader, args=(path,), daemon=True) for path in contents]
    hdfs_cluster.pause_datanode(FROZEN)
    try:
        for thread in readers:
            thread.start()
        for thread in readers:
            thread.join(SOCKET_TIMEOUT_MS / 1000 + 20)
    finally:
        hdfs_cluster.resume_datanode(FROZEN)
    slowest = max(took.values(), default=float("nan"))
    print(
        f"\n{FILES} reads ({read_file.__name__}) while DataNode {FROZEN} was frozen: "
        f"slowest {slowest:.2f}s (bound {READ_BOUND}s), "
        f"hedged {storage.hedge_counts.hedged}, answered by a hedge {storage.hedge_counts.won}"
    )
    assert not errors, errors
    assert read == contents, "a read returned other bytes than were written"
    assert slowest <= READ_BOUND, f"a read waited {slowest:.2f}s on the frozen DataNode: {sorted(took.values())}"
    assert storage.hedge_counts.won > 0, "no read was answered by a hedge: none met the frozen DataNode first"
