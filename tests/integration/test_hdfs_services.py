"""HDFS durability and fencing behaviour that custody's protocol relies on."""

import gc
import threading
import time

import pytest

from replication.hdfs_storage import HdfsStorage
from repositories.storage import LeaseLost, StorageError, StorageUnavailable, join


def test_hsynced_bytes_are_readable_in_full_by_a_second_client_before_close(hdfs_cluster, hdfs_store):
    path = join(hdfs_store.root, "journal")
    writer = hdfs_store.storage.create(path)
    body = b"".join(f"record-{i:06d}\n".encode() for i in range(20000))
    try:
        writer.write(body)
        writer.sync()
        # The second client is Hadoop's own Java client, in another process.
        result = hdfs_cluster.java_client("-cat", path)
        assert result.returncode == 0, result.stderr.decode(errors="replace")[-500:]
        assert result.stdout == body
        # A second hdfs-native client sees the hsynced length at the NameNode.
        assert HdfsStorage(hdfs_cluster.url).status(path).length == len(body)
    finally:
        writer.close()


def recover_until_closed(storage, path, timeout=60.0):
    """Poll recover_lease with backoff, as the fencing protocol does."""
    deadline = time.monotonic() + timeout
    delay = 0.25
    while not storage.recover_lease(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"lease of {path} was not recovered within {timeout}s")
        time.sleep(delay)  # backoff between NameNode calls, not a synchronisation stand-in
        delay = min(delay * 2, 4.0)


def test_recover_lease_fences_the_old_writer(hdfs_cluster, hdfs_store):
    path = join(hdfs_store.root, "wal-partition-0")
    writer_a = hdfs_store.storage.create(path)
    writer_a.write(b"committed-by-a;")
    writer_a.sync()

    client_b = HdfsStorage(hdfs_cluster.url)
    recover_until_closed(client_b, path)

    with pytest.raises(LeaseLost) as caught:
        writer_a.write(b"zombie-write;")
        writer_a.sync()
    assert path in str(caught.value)
    assert "Stop writing" in str(caught.value)
    # Everything A synced before it was fenced survives; nothing after it does.
    assert client_b.read(path) == b"committed-by-a;"
    with pytest.raises(StorageError):
        writer_a.close()


def test_fenced_directory_cannot_be_recreated_by_the_old_writer(hdfs_store):
    storage = hdfs_store.storage
    shard = join(hdfs_store.root, "shard-7")
    storage.mkdir(shard)
    storage.rename(shard, shard + "-fenced-2")
    with pytest.raises(StorageError):
        storage.create(join(shard, "partition-0"))
    assert not storage.exists(shard)


def test_killed_datanode_is_detected_and_writes_continue_after_restart(hdfs_cluster, hdfs_store):
    storage = hdfs_store.storage
    # Its HTTP server's scratch directory is the daemon's own, not /tmp, where a killed
    # DataNode would leave it behind.
    scratch = hdfs_cluster.workdir / "datanode-1" / "tmp"
    assert list(scratch.glob("jetty-*")), f"no Jetty directory under {scratch}"
    hdfs_cluster.kill_datanode(1)
    try:
        hdfs_cluster.wait_healthy(timeout=60, live_datanodes=hdfs_cluster.datanode_count - 1)
    finally:
        hdfs_cluster.restart_datanode(1)
    # Back means registered with the NameNode, not only a process with open ports (the
    # new one opens them about a second before it registers; a recovery reaching it
    # then stalls).
    assert hdfs_cluster.datanode_registered(1)
    path = join(hdfs_store.root, "after-restart")
    with storage.create(path) as handle:
        handle.write(b"ok")
        handle.sync()
    assert storage.read(path) == b"ok"


def test_namenode_restart_keeps_synced_data_and_serves_new_writes(hdfs_cluster, hdfs_store):
    storage = hdfs_store.storage
    before = join(hdfs_store.root, "before-restart")
    with storage.create(before) as handle:
        handle.write(b"durable across a NameNode restart")
        handle.sync()
    hdfs_cluster.restart_namenode()
    # A fresh client: the old one's connection died with the NameNode.
    client = HdfsStorage(hdfs_cluster.url)
    assert client.read(before) == b"durable across a NameNode restart"
    after = join(hdfs_store.root, "after-restart")
    with client.create(after) as handle:
        handle.write(b"new")
        handle.sync()
    assert client.read(after) == b"new"


def test_a_write_pipeline_that_stops_answering_fails_within_the_deadline(hdfs_cluster, hdfs_store):
    """hdfs-native blocks forever on an in-flight write whose DataNodes freeze; custody's
    storage gives up after io_timeout, so a node's session can roll back. Meanwhile the
    blocked call holds no interpreter lock: the node's other threads go on."""
    storage = HdfsStorage(hdfs_cluster.url, io_timeout=3.0)
    path = join(hdfs_store.root, "frozen-pipeline")
    writer = storage.create(path)
    writer.write(b"a" * 10000)
    writer.sync()
    # While hdfs-native blocks, the rest of the process must run (ZooKeeper pings, the
    # session guard): a ticker thread measures the longest gap between its wake-ups.
    gaps, done = [], threading.Event()

    def tick():
        last = time.monotonic()
        while not done.wait(0.02):
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick, daemon=True)
    for index in range(hdfs_cluster.datanode_count):
        hdfs_cluster.pause_datanode(index)
    began = time.monotonic()
    ticker.start()
    try:
        with pytest.raises(StorageUnavailable) as caught:
            for _ in range(1000):  # the first calls may still land in socket buffers
                writer.write(b"b" * 10000)
                writer.sync()
        assert time.monotonic() - began < 30
        done.set()
        ticker.join(5)
        assert gaps and max(gaps) < 1.0, f"the process stood still {max(gaps):.1f}s while hdfs-native blocked"
        assert "did not answer within 3 s" in str(caught.value)
        with pytest.raises(StorageUnavailable):  # abandoned: fails at once from now on
            writer.sync()
    finally:
        done.set()
        for index in range(hdfs_cluster.datanode_count):
            hdfs_cluster.resume_datanode(index)
    fresh = join(hdfs_store.root, "after-thaw")
    with storage.create(fresh) as handle:
        handle.write(b"ok")
        handle.sync()
    assert storage.read(fresh) == b"ok"
    # What was hsynced before the freeze survives, once the lease is recovered.
    recover_until_closed(storage, path)
    assert storage.read(path, 0, 10000) == b"a" * 10000


def test_dropping_a_writer_whose_pipeline_froze_does_not_block_the_thread_that_drops_it(hdfs_cluster, hdfs_store):
    """hdfs-native's FileWriter is an io.RawIOBase, whose finalizer calls close(): on a
    frozen pipeline that blocked for a minute whichever thread happened to drop the last
    reference, or to run the garbage collector (once, a flow thread in the middle of an
    import, holding the import lock for every other thread). Dropping an abandoned or
    unclosed writer must cost nothing; the NameNode's lease recovery finishes the file."""
    storage = HdfsStorage(hdfs_cluster.url, io_timeout=3.0)
    path = join(hdfs_store.root, "dropped-while-frozen")
    writer, unclosed = storage.create(path), storage.create(join(hdfs_store.root, "never-closed"))
    for handle in (writer, unclosed):
        handle.write(b"c" * 10000)
        handle.sync()
    for index in range(hdfs_cluster.datanode_count):
        hdfs_cluster.pause_datanode(index)
    try:
        with pytest.raises(StorageUnavailable):
            for _ in range(1000):  # the first calls may still land in socket buffers
                writer.write(b"d" * 10000)
                writer.sync()
        # What a full collection costs this process anyway (a loaded machine makes it
        # seconds): the drop is charged only for what it adds to one.
        gc.collect()
        began = time.monotonic()
        gc.collect()
        collecting = time.monotonic() - began
        began = time.monotonic()
        del writer, unclosed, handle
        gc.collect()
        dropped_in = time.monotonic() - began - collecting
    finally:
        for index in range(hdfs_cluster.datanode_count):
            hdfs_cluster.resume_datanode(index)
    assert dropped_in < 1.0, (
        f"dropping two writers blocked the dropping thread {dropped_in:.1f}s (a collection alone: {collecting:.1f}s)"
    )
    recover_until_closed(storage, path)
    assert storage.read(path, 0, 10000) == b"c" * 10000
