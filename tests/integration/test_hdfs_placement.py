"""A DataNode that died gets no new block once it is stale, on the harness's real HDFS
(3 DataNodes, replication 2, cluster/services/hadoop/hdfs-site.properties).

Hadoop 3.4's default placement avoids stale DataNodes for writes only once its
heartbeat monitor's scan, every 5 s, has counted one (the NameNode's
`NumStaleDataNodes`); until then it hands a dead DataNode out for two new blocks in
three, and the nodes' client (hdfs-native) cannot ask for another: the file's first
write or close fails or hangs (here, without the policy, the twelve writes hung past
`WRITE_DEADLINE`). The NameNode runs `FreshTargetsBlockPlacementPolicy`, which
leaves out each DataNode stale at the moment of the placement.

Here, once every DataNode is live and was heard within the last second (earlier tests
of the session pause, kill and restart them), one DataNode is SIGKILLed; as soon as
the NameNode's view shows its last contact a second or more ago (stale), new files are
written and closed one after another with hdfs-native alone (no hedge, no second
try): every one must succeed. The NameNode's `NumStaleDataNodes` is read before and
after: 0 means the files were written in the window where the default policy still
handed the dead DataNode out (the run says so).
The files ask for Custody's block size, as the nodes' do: the NameNode places a block
only on a DataNode whose free space, less a block of that size for each block scheduled
on it and not finished, still holds one, and the session's earlier tests leave blocks
scheduled (files of killed writers).

And when a fresh DataNode has no room for a block, the block gets fewer replicas, not
the stale one: on an HDFS of its own, one block is held scheduled on a DataNode, a file
asks for blocks so large that a DataNode with one scheduled has no room for another,
and after another DataNode's death the file is written to the one with room alone
(the default policy gives the dead DataNode there, and the write hangs)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import hdfs_native
import pytest

from cluster.services.hdfs import HdfsCluster, jmx_bean
from cluster.services.process import wait_until
from replication.block_size import CHECKSUM_CHUNK, DEFAULT_BLOCK_SIZE
from repositories.storage import join
from tests.conftest import own_hdfs

pytestmark = [pytest.mark.hdfs]

FILES = 12  # with the default policy in its window, all twelve would avoid it one time in 500,000
WRITE_DEADLINE = 30.0
# The file's block against the room of a DataNode with one block scheduled (two blocks'
# worth needed) and of one with none (one needed): room for one, with 30 % to spare.
BLOCK_OF_ROOM = 0.7
# The NameNode's largest block (32 GiB by default) raised for the HDFS of the second
# test, whose blocks are most of a disk's free space.
MAX_BLOCK_SIZE = 1 << 40


def stale_datanodes_counted(hdfs_cluster) -> int:
    """The NameNode's count of stale DataNodes, as its heartbeat monitor last took it."""
    state = jmx_bean(hdfs_cluster.ports["namenode_http"], "Hadoop:service=NameNode,name=FSNamesystemState")
    return int(state["NumStaleDataNodes"])


def datanode_view(hdfs_cluster, data_port: int) -> dict | None:
    """The NameNode's view of the DataNode whose data port is `data_port` (None: not live)."""
    for info in hdfs_cluster.live_datanodes_info().values():
        if info.get("xferaddr", "").endswith(f":{data_port}"):
            return info
    return None


def last_contact(hdfs_cluster, data_port: int) -> int | None:
    """Seconds (whole) since the NameNode last heard the DataNode whose data port is `data_port`."""
    view = datanode_view(hdfs_cluster, data_port)
    return None if view is None else int(view["lastContact"])


def every_datanode_fresh(hdfs_cluster) -> bool:
    """Every DataNode live and heard within the last second, and no safe mode: what the
    session's earlier tests (DataNodes paused, killed, restarted) may have left otherwise."""
    views = hdfs_cluster.live_datanodes_info().values()
    return (
        hdfs_cluster.healthy()
        and len(views) == hdfs_cluster.datanode_count
        and all(int(view["lastContact"]) == 0 for view in views)
    )


def datanodes_seen(hdfs_cluster) -> str:
    """Each live DataNode as the NameNode sees it: for a failure's message."""
    return "; ".join(
        f"{view.get('xferaddr')}: last contact {view.get('lastContact')} s, {view.get('blockScheduled')} blocks "
        f"scheduled, {int(view.get('remaining', 0)) >> 20} MiB remaining"
        for view in hdfs_cluster.live_datanodes_info().values()
    )


def block_locations(hdfs_cluster, path: str) -> list[list[str]]:
    """The DataNodes (address:data port) of each block of `path`, from the NameNode (WebHDFS)."""
    url = f"http://127.0.0.1:{hdfs_cluster.ports['namenode_http']}/webhdfs/v1{path}?op=GETFILEBLOCKLOCATIONS"
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.load(response)
    return [sorted(block["names"]) for block in answer["BlockLocations"]["BlockLocation"]]


def written_within(deadline: float, write) -> tuple[bool, float]:
    """Run `write` on a thread of its own: whether it ended within `deadline` seconds, and when."""
    began = time.monotonic()
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(deadline)
    return not writer.is_alive(), time.monotonic() - began


def wait_stale(hdfs_cluster, data_port: int, index: int) -> None:
    wait_until(
        lambda: (seconds := last_contact(hdfs_cluster, data_port)) is not None and seconds >= 1,
        30,
        f"the NameNode to see DataNode {index} silent for a second",
    )


def test_a_killed_datanode_gets_no_new_block_once_it_is_stale(hdfs_cluster, hdfs_store):
    client = hdfs_native.Client(
        hdfs_cluster.url, {**hdfs_cluster.client_config, "dfs.blocksize": str(DEFAULT_BLOCK_SIZE)}
    )
    directory = join(hdfs_store.root, "placement")
    client.mkdirs(directory)
    victim = 0
    data_port = hdfs_cluster.ports[f"dn{victim}_data"]
    failures: list[str] = []
    written: list[str] = []
    wait_until(lambda: every_datanode_fresh(hdfs_cluster), 60, "every DataNode to be live and heard")
    hdfs_cluster.kill_datanode(victim)
    try:
        wait_stale(hdfs_cluster, data_port, victim)
        counted_before = stale_datanodes_counted(hdfs_cluster)

        def write_all() -> None:
            for number in range(FILES):
                path = join(directory, f"file-{number}")
                try:
                    with client.create(path) as file:
                        file.write(b"x" * 1024)
                    written.append(path)
                except Exception as error:  # noqa: BLE001 - each failure is the finding
                    failures.append(f"{path}: {type(error).__name__}: {str(error).splitlines()[0][:200]}")

        ended, took = written_within(WRITE_DEADLINE, write_all)
        counted_after = stale_datanodes_counted(hdfs_cluster)
        assert ended, (
            f"{FILES} one-block files were not written within {WRITE_DEADLINE} s ({len(written)} were); "
            f"the NameNode's DataNodes: {datanodes_seen(hdfs_cluster)}"
        )
    finally:
        hdfs_cluster.restart_datanode(victim)
    print(
        f"\n{len(written)} of {FILES} files written in {took:.2f} s after DataNode {victim} went stale; "
        f"the NameNode's stale count {counted_before} before and {counted_after} after "
        f"({'in' if counted_after == 0 else 'partly past'} the default policy's window)"
    )
    assert not failures, failures
    assert sorted(client.get_file_info(path).length for path in written) == [1024] * FILES


def hold_block_on(cluster: HdfsCluster, client, index: int, directory: str):
    """A file left open whose one replica's block is scheduled on DataNode `index`, and no
    block scheduled on the others (files of one replica made until one lands there; each
    that does not is closed, which finishes its block)."""
    port = cluster.ports[f"dn{index}_data"]

    def nothing_scheduled() -> bool:
        return all(int(view["blockScheduled"]) == 0 for view in cluster.live_datanodes_info().values())

    wait_until(nothing_scheduled, 60, "the blocks of HDFS's warm-up to be reported finished")
    for attempt in range(30):
        file = client.create(join(directory, f"held-{attempt}"), hdfs_native.WriteOptions(replication=1))
        file.write(b"x")
        file.hsync()  # its block is placed now
        scheduled = {view["xferaddr"]: int(view["blockScheduled"]) for view in cluster.live_datanodes_info().values()}
        if scheduled.get(f"127.0.0.1:{port}") == 1 and sum(scheduled.values()) == 1:
            return file
        file.close()
        wait_until(nothing_scheduled, 30, "a closed file's block to be reported finished")
    raise AssertionError(f"no block of 30 new files was placed on DataNode {index}")


def test_a_fresh_datanode_without_room_leaves_the_block_fewer_replicas_not_the_stale_one(tmp_path):
    workdir = tmp_path / "services"
    workdir.mkdir()
    with own_hdfs(workdir, settings={"dfs.namenode.fs-limits.max-block-size": MAX_BLOCK_SIZE}) as cluster:
        client = hdfs_native.Client(cluster.url, cluster.client_config)
        client.mkdirs("/placement")
        victim, full, roomy = 0, 1, 2
        held = hold_block_on(cluster, client, full, "/placement")
        cluster.kill_datanode(victim)
        wait_stale(cluster, cluster.ports[f"dn{victim}_data"], victim)
        room = min(
            int(datanode_view(cluster, cluster.ports[f"dn{index}_data"])["remaining"]) for index in (full, roomy)
        )
        block = int(room * BLOCK_OF_ROOM) // CHECKSUM_CHUNK * CHECKSUM_CHUNK
        path = "/placement/large-blocks"
        failures: list[str] = []
        pipelines: list[list[list[str]]] = []

        def write() -> None:
            try:
                with client.create(path, hdfs_native.WriteOptions(block_size=block, replication=2)) as file:
                    file.write(b"y" * 1024)
                    file.hsync()
                    pipelines.append(block_locations(cluster, path))  # while open: the block's pipeline
            except Exception as error:  # noqa: BLE001 - the finding
                failures.append(f"{type(error).__name__}: {str(error).splitlines()[0][:300]}")

        ended, took = written_within(WRITE_DEADLINE, write)
        assert ended, (
            f"a file of {block >> 20} MiB blocks was not written within {WRITE_DEADLINE} s after DataNode {victim} "
            f"went stale; the NameNode's DataNodes: {datanodes_seen(cluster)}"
        )
        assert not failures, failures
        print(f"\nwritten in {took:.2f} s with {block >> 20} MiB blocks; {datanodes_seen(cluster)}")
        addresses = {index: f"127.0.0.1:{cluster.ports[f'dn{index}_data']}" for index in range(3)}
        assert pipelines == [[[addresses[roomy]]]]
        assert client.get_file_info(path).length == 1024
        # Complete, its one replica is copied again (a finished block is small: room enough).
        wait_until(
            lambda: block_locations(cluster, path) == [sorted([addresses[full], addresses[roomy]])],
            30,
            "the block written with one replica to be copied to the DataNode it had no room on",
        )
        held.close()
