"""Hedges of a new file's first sync that lose their race leave no block counted against
their DataNodes (`replication.new_files`, `replication.block_size`).

The NameNode counts each block it hands a DataNode until the DataNode reports it
finished, and takes that count, times the new file's block size, off the DataNode's
free space when it places a block. A block never finished (its file deleted while open)
stays counted while other blocks keep being finished: a long compose drill counted
2,500 on one DataNode, some of them hedges that lost and were deleted while open (most
come from DataNode deaths: the cluster page). A hedge whose sync answers after the race
is now closed before it is deleted.

On a fresh HDFS of its own with one DataNode (so that the count is this test's alone),
every first sync is hedged at once (hedge delay 0): each of the files races its hedges,
the losers' syncs answer too, and once every file is closed at most the files a hedge
replaced are still counted (the file itself, overwritten while open). Before, every
losing hedge stayed counted: 26 blocks for ten files."""

from __future__ import annotations

import hdfs_native
import pytest

from cluster.services.hdfs import HdfsCluster, blocks_scheduled
from cluster.services.process import wait_until
from replication import new_files
from replication.hdfs_storage import HdfsStorage
from tests.conftest import service_unavailable

pytestmark = [pytest.mark.hdfs]

FILES = 10
SETTLED = 30.0  # the losers' closes and deletes, and the DataNode's reports


def test_hedges_that_lose_leave_no_block_counted(tmp_path, monkeypatch):
    cluster = HdfsCluster(tmp_path / "services", datanodes=1)
    try:
        try:
            cluster.start()
        except Exception as error:  # noqa: BLE001
            service_unavailable("HDFS", error)

        def scheduled() -> int:
            return blocks_scheduled(cluster.ports["namenode_http"])

        monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_AFTER_S", 0.0)
        storage = HdfsStorage(cluster.url, cluster.client_config, io_timeout=5.0)
        storage.mkdir("/hedged")
        before = scheduled()
        for n in range(FILES):
            file = storage.create(f"/hedged/file-{n}")
            file.write(b"a transaction;" * 8)
            file.sync()
            file.close()
        counts = storage.new_file_hedge_counts
        assert counts.hedged == FILES, "hedge delay 0: every first sync is hedged"

        raw = hdfs_native.Client(cluster.url, {})  # listings of the storage hide hedges

        def hedges_left() -> list[str]:
            names = [status.path.rsplit("/", 1)[-1] for status in raw.list_status("/hedged")]
            return [name for name in names if new_files.is_hedge(name)]

        # Every hedge that lost ends, is closed or abandoned, and is deleted; then only the
        # files a hedge replaced may still be counted.
        wait_until(lambda: not hedges_left(), SETTLED, "the hedges that lost to be deleted")
        wait_until(lambda: scheduled() - before <= counts.won, SETTLED, "the losing hedges' blocks to be finished")
        print(f"\n{FILES} files hedged, {counts.won} won by a hedge; blocks still counted: {scheduled() - before}")
        assert sorted(status.name for status in storage.list("/hedged")) == sorted(f"file-{n}" for n in range(FILES))
    finally:
        cluster.stop()
