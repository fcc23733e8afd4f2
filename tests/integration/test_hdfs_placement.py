"""A DataNode that died gets no new block once it is stale, on the harness's real HDFS
(3 DataNodes, replication 2, cluster/services/hadoop/hdfs-site.properties).

Hadoop 3.4's default placement avoids stale DataNodes for writes only once its
heartbeat monitor's scan, every 5 s, has counted one (the NameNode's
`NumStaleDataNodes`); until then it hands a dead DataNode out for two new blocks in
three, and the nodes' client (hdfs-native) cannot ask for another: the file's first
write or close fails or hangs (here, without the policy, the twelve writes hung past
`WRITE_DEADLINE`). The NameNode runs `FreshTargetsBlockPlacementPolicy`, which
leaves out each DataNode stale at the moment of the placement.

Here one DataNode is SIGKILLed; as soon as the NameNode's view shows its last contact
a second or more ago (stale), new files are written and closed one after another with
hdfs-native alone (no hedge, no second try): every one must succeed. The NameNode's
`NumStaleDataNodes` is read before and after: 0 means the files were written in the
window where the default policy still handed the dead DataNode out (the run says so)."""

from __future__ import annotations

import threading
import time

import hdfs_native
import pytest

from cluster.services.hdfs import jmx_bean
from cluster.services.process import wait_until
from repositories.storage import join

pytestmark = [pytest.mark.hdfs]

FILES = 12  # with the default policy in its window, all twelve would avoid it one time in 500,000
WRITE_DEADLINE = 30.0


def stale_datanodes_counted(hdfs_cluster) -> int:
    """The NameNode's count of stale DataNodes, as its heartbeat monitor last took it."""
    state = jmx_bean(hdfs_cluster.ports["namenode_http"], "Hadoop:service=NameNode,name=FSNamesystemState")
    return int(state["NumStaleDataNodes"])


def last_contact(hdfs_cluster, data_port: int) -> int | None:
    """Seconds (whole) since the NameNode last heard the DataNode whose data port is `data_port`."""
    for info in hdfs_cluster.live_datanodes_info().values():
        if info.get("xferaddr", "").endswith(f":{data_port}"):
            return int(info["lastContact"])
    return None


def test_a_killed_datanode_gets_no_new_block_once_it_is_stale(hdfs_cluster, hdfs_store):
    client = hdfs_native.Client(hdfs_cluster.url, hdfs_cluster.client_config)
    directory = join(hdfs_store.root, "placement")
    client.mkdirs(directory)
    victim = 0
    data_port = hdfs_cluster.ports[f"dn{victim}_data"]
    failures: list[str] = []
    written: list[str] = []
    hdfs_cluster.kill_datanode(victim)
    try:
        wait_until(
            lambda: (seconds := last_contact(hdfs_cluster, data_port)) is not None and seconds >= 1,
            30,
            f"the NameNode to see DataNode {victim} silent for a second",
        )
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

        began = time.monotonic()
        writer = threading.Thread(target=write_all, daemon=True)
        writer.start()
        writer.join(WRITE_DEADLINE)
        took = time.monotonic() - began
        counted_after = stale_datanodes_counted(hdfs_cluster)
        assert not writer.is_alive(), f"{FILES} one-block files were not written within {WRITE_DEADLINE} s"
    finally:
        hdfs_cluster.restart_datanode(victim)
    print(
        f"\n{len(written)} of {FILES} files written in {took:.2f} s after DataNode {victim} went stale; "
        f"the NameNode's stale count {counted_before} before and {counted_after} after "
        f"({'in' if counted_after == 0 else 'partly past'} the default policy's window)"
    )
    assert not failures, failures
    assert sorted(client.get_file_info(path).length for path in written) == [1024] * FILES
