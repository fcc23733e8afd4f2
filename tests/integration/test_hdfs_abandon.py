"""`HdfsWritableFile.abandon` on real HDFS whose DataNodes (or NameNode) stand still
(SIGSTOP): it returns at once while an hsync of the file hangs, nothing written after it
reaches HDFS (each call fails at once), its close does nothing, and dropping the file
costs nothing. Once HDFS runs again, lease recovery closes the file with what was synced
before (and, at most, what the hsync in flight at the abandon carried), never more."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from replication.hdfs_storage import HdfsStorage
from repositories.storage import StorageAbandoned, join
from repositories.storage.leases import recover_leases

pytestmark = [pytest.mark.hdfs]

# The product's bound: a death is over within 2 s of its guard's decision.
AT_ONCE = 2.0


@pytest.mark.parametrize("frozen", ["datanodes", "namenode"])
def test_abandon_returns_at_once_and_nothing_after_it_reaches_hdfs(hdfs_cluster, hdfs_store, frozen):
    storage = HdfsStorage(hdfs_cluster.url, io_timeout=20.0)
    path = join(hdfs_store.root, f"abandoned-while-{frozen}-frozen")
    file = storage.create(path)
    file.write(b"a" * 10000)
    file.sync()
    paused = hdfs_cluster.datanodes if frozen == "datanodes" else [hdfs_cluster.namenode]
    returned = threading.Event()

    def in_flight():
        try:
            for _ in range(1000):  # the first calls may still land in socket buffers
                file.write(b"b" * 10000)  # noqa: F821 - ruff: `del file` below, after every call
                file.sync()  # noqa: F821 - ruff: `del file` below, after every call
        except Exception:  # noqa: BLE001 - abandoned, or failed once HDFS ran again
            pass
        finally:
            returned.set()

    for process in paused:
        process.pause()
    try:
        thread = threading.Thread(target=in_flight, daemon=True)
        thread.start()
        # A call stands in HDFS: nothing returned for a second with every daemon frozen.
        assert not returned.wait(1.0)
        began = time.monotonic()
        file.abandon("incarnation n1-7 is dead")
        abandoned_in = time.monotonic() - began
        began = time.monotonic()
        for call in (lambda: file.write(b"c" * 100), file.sync):  # noqa: F821 - ruff: `del file` below, after every call
            with pytest.raises(StorageAbandoned, match="abandoned \\(incarnation n1-7 is dead\\)"):
                call()
        file.close()
        del file
        gc.collect()
        refused_in = time.monotonic() - began
    finally:
        for process in paused:
            process.resume()
    assert abandoned_in < AT_ONCE, f"abandon took {abandoned_in:.2f}s"
    assert refused_in < AT_ONCE, f"the calls after the abandon took {refused_in:.2f}s"
    thread.join(60)
    recover_leases(storage, [path], timeout=60)
    data = storage.read(path)
    assert data.startswith(b"a" * 10000) and b"c" not in data
    assert set(data[10000:]) <= {ord("b")}  # at most what the calls in flight carried
