"""Nothing Custody deletes on HDFS leaves a block counted against its DataNodes.

The NameNode counts each block it hands a DataNode until the DataNode reports it
finished, and takes that count, times the new file's block size, off the DataNode's
free space when it places a block. A block never finished (its file deleted while open)
stays counted while other blocks keep being finished: a long compose drill counted
2,500 on one DataNode (most come from DataNode deaths: the cluster page).

On a fresh HDFS of their own with one DataNode (so that the count is these tests' alone):

- Attempts at a new file's first sync that lose their race (`replication.new_files`,
  `replication.left_open`): a hedge whose sync answers after the race is closed before
  it is deleted; the file itself, when a hedge takes its name, is moved aside and
  deleted once HDFS has recovered its lease. Every first sync is hedged at once (hedge
  delay 0, whatever the storage's typical hsync); once every file is closed at most one
  block a race a hedge won is counted (an attempt given up empty). Before, every losing
  hedge stayed counted (26 blocks for ten files), and later each file a hedge replaced
  (1 and 3 in two runs).
- A dead incarnation's content, collected by the leader (`cluster.failover.collector`):
  the file its writer, SIGKILLed, left open is deleted only once its lease is recovered.
  Before, the collector deleted it open and its block stayed counted.
- A file let go open (`repositories.storage.discard`: a swap file whose write failed, a
  journal or snapshot of a failed checkpoint): it leaves the listing at once, its name
  is free, and it is deleted once HDFS has recovered its lease.
"""

from __future__ import annotations

import subprocess
import sys

import hdfs_native
import pytest

from cluster.core.layout import ClusterLayout
from cluster.failover.collector import ContentCollector, container_directory
from cluster.services.hdfs import blocks_scheduled
from cluster.services.process import wait_until
from cluster.zk.membership import new_incarnation
from cluster.zk.store import ClusterStore
from replication import new_files, pipeline_suspicion
from replication.hdfs_storage import HdfsStorage
from repositories.storage import discard
from tests.conftest import own_hdfs

pytestmark = [pytest.mark.hdfs]


FILES = 10
SETTLED = 30.0  # the losers' closes and deletes, and the DataNode's reports


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with own_hdfs(tmp_path_factory.mktemp("blocks") / "services", datanodes=1) as cluster:
        yield cluster


def scheduled(cluster) -> int:
    return blocks_scheduled(cluster.ports["namenode_http"])


def test_hedges_that_lose_leave_no_block_counted(cluster, monkeypatch):
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_AFTER_S", 0.0)
    monkeypatch.setattr(pipeline_suspicion, "HEDGE_TYPICAL_FACTOR", 0.0)  # however fast the syncs before
    storage = HdfsStorage(cluster.url, cluster.client_config, io_timeout=5.0)
    storage.mkdir("/hedged")
    before = scheduled(cluster)
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

    # Every hedge that lost ends, is closed, or abandoned and deleted once HDFS closed
    # it, as is each file a hedge took the name of. A block with data is then finished;
    # an attempt given up before any byte of it reached the DataNode leaves an empty
    # block, which HDFS's own recovery deletes without taking it off (the cluster page):
    # at most one a race a hedge won, as before (in six runs here: none; a CI run: some).
    wait_until(lambda: not hedges_left(), SETTLED, "the hedges that lost to be deleted")
    wait_until(lambda: scheduled(cluster) - before <= counts.won, SETTLED, "the losing attempts' blocks to be finished")
    print(f"\n{FILES} files hedged, {counts.won} won by a hedge; blocks still counted: {scheduled(cluster) - before}")
    assert sorted(status.name for status in storage.list("/hedged")) == sorted(f"file-{n}" for n in range(FILES))


WRITER = """
import sys, hdfs_native
writer = hdfs_native.Client(sys.argv[1], {}).create(sys.argv[2])
writer.write(b"claims of a resource " * 50)
writer.hsync()
print("synced", flush=True)
sys.stdin.read()
"""


def left_open_by_a_killed_writer(cluster, path: str) -> None:
    """`path` written and hsynced by a process SIGKILLed before it closed it."""
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, cluster.url, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().strip() == "synced"
    finally:
        writer.kill()
        writer.wait()


@pytest.mark.zookeeper
def test_a_dead_incarnations_file_left_open_is_deleted_once_closed(cluster, zk_client, tmp_path):
    """An incarnation SIGKILLed while writing a content file leaves it open; once no
    shard references its container, the leader's collector deletes the container, and
    the file's block is no longer counted against its DataNode."""
    layout = ClusterLayout("c1", "/custody")
    store = ClusterStore(zk_client, layout)
    store.ensure_paths()
    dead = new_incarnation(zk_client, layout, "d").id
    new_incarnation(zk_client, layout, "a")  # a newer start: the dead one is not the newest drawn
    storage = HdfsStorage(cluster.url, cluster.client_config, io_timeout=5.0)
    container = container_directory(layout, dead)
    storage.mkdir(f"{container}/{dead}/0", parents=True)
    before = scheduled(cluster)
    left_open_by_a_killed_writer(cluster, f"{container}/{dead}/0/1")
    assert scheduled(cluster) == before + 1, "the open file's block is counted until it is finished"
    collector = ContentCollector(store, storage)

    def collected() -> bool:
        assert collector.collect().containers == (dead,)
        return not storage.exists(container)

    wait_until(collected, SETTLED, f"the container of {dead} to be collected")
    wait_until(lambda: scheduled(cluster) == before, SETTLED, "the dead writer's block to be finished")


def test_a_file_let_go_open_leaves_its_name_at_once_and_is_deleted_once_closed(cluster):
    """What a failed writer leaves open (a swap file, a WAL journal or snapshot of a
    failed checkpoint) is let go with `discard`: on HDFS it leaves the listing at once,
    and its block is finished before the file is deleted."""
    storage = HdfsStorage(cluster.url, cluster.client_config, io_timeout=5.0)
    storage.mkdir("/let-go")
    before = scheduled(cluster)
    left_open_by_a_killed_writer(cluster, "/let-go/journal-0")
    assert scheduled(cluster) == before + 1
    discard(storage, "/let-go/journal-0")
    assert storage.list("/let-go") == []
    with storage.create("/let-go/journal-0") as file:  # the name is free again at once
        file.write(b"a new journal")
        file.sync()
    raw = hdfs_native.Client(cluster.url, {})
    wait_until(lambda: len(list(raw.list_status("/let-go"))) == 1, SETTLED, "the file let go to be deleted")
    wait_until(lambda: scheduled(cluster) == before, SETTLED, "the block of the file let go to be finished")
