"""An hsync through a DataNode that died returns once the pipeline is rebuilt on the
DataNodes left, on the harness's real HDFS (3 DataNodes, replication 2) with the nodes'
client as `custody services install` built it (`cluster.services.hdfs_client`).

hdfs-native 0.14.7's release recovers such a pipeline only when its packet sender saw
the failure; when the acknowledgements showed it first (the dead DataNode second in the
pipeline: the first one answers with an error status for it), the recovery waited for
ever, and so did the hsync: a packet in flight when its DataNode died (sent, its
acknowledgement awaited) left the packet sender idle. Here `FILES` files are written
and hsynced in a loop each, on a thread each, so that many packets are in flight when
one DataNode is SIGKILLed (with 24 files, two in three through it); then every writer
must get `AFTER` more hsyncs answered within `DEADLINE` (with the release, writers
through the dead DataNode hung there), and every file must read back whole after its
close."""

from __future__ import annotations

import threading

import hdfs_native
import pytest

from cluster.services.hdfs_client import PATCHED_VERSION, installed_version
from cluster.services.process import ServiceError, wait_until
from repositories.storage import join

pytestmark = [pytest.mark.hdfs]

FILES = 24
AFTER = 3  # hsyncs each writer must get answered after the death
DEADLINE = 30.0  # for all of them; a rebuilt pipeline answers in milliseconds
START_DEADLINE = 60.0  # for every writer's first two hsyncs, on a loaded machine
CHUNK = b"y" * 1024


class LoopingWriter:
    """Writes and hsyncs `CHUNK` to one file until stopped; counts the hsyncs answered."""

    def __init__(self, client: hdfs_native.Client, path: str):
        self.path = path
        self.synced = 0
        self.error: str | None = None
        self._writer = client.create(path)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"writer {path}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._writer.write(CHUNK)
                self._writer.hsync()
                self.synced += 1
        except Exception as error:  # noqa: BLE001 - the finding
            self.error = f"{self.path}: {type(error).__name__}: {str(error).splitlines()[0][:200]}"

    def stop_and_close(self) -> None:
        self._stop.set()
        self._thread.join(DEADLINE)
        assert not self._thread.is_alive(), f"{self.path}: its hsync never returned"
        self._writer.close()


def datanode_warnings(hdfs_cluster, lines: int = 8) -> str:
    """Each DataNode's last warnings and errors: what a failure below needs explained."""
    found = []
    for index, datanode in enumerate(hdfs_cluster.datanodes):
        try:
            with open(datanode.log_path, errors="replace") as log:
                warned = [line.rstrip() for line in log if " WARN " in line or " ERROR " in line]
        except OSError as error:
            warned = [f"(no log: {error})"]
        found.append(f"DataNode {index}:\n" + "\n".join(warned[-lines:]))
    return "\n".join(found)


def wait_for_hsyncs(
    hdfs_cluster, writers: list[LoopingWriter], targets: list[int], when: str, deadline: float = DEADLINE
) -> None:
    """Wait until every writer has `targets[i]` hsyncs answered; any writer's error ends
    the wait at once. Fails naming the writers that failed or are behind, with counts
    and the DataNodes' last warnings."""
    try:
        wait_until(
            lambda: (
                any(writer.error for writer in writers)
                or all(writer.synced >= target for writer, target in zip(writers, targets, strict=True))
            ),
            deadline,
            f"every writer's hsyncs {when}",
        )
    except ServiceError:
        pass
    errors = [writer.error for writer in writers if writer.error]
    assert not errors, f"{len(errors)} of {FILES} writers failed {when}: {errors}\n{datanode_warnings(hdfs_cluster)}"
    behind = [
        f"{writer.path} ({writer.synced} of {target})"
        for writer, target in zip(writers, targets, strict=True)
        if writer.synced < target
    ]
    assert not behind, f"{len(behind)} of {FILES} writers hung {when}: {behind}\n{datanode_warnings(hdfs_cluster)}"


def test_hsyncs_in_flight_through_a_killed_datanode_return_on_the_datanodes_left(hdfs_cluster, hdfs_store):
    assert installed_version() == PATCHED_VERSION, "run custody services install: it builds the nodes' HDFS client"
    client = hdfs_native.Client(hdfs_cluster.url, hdfs_cluster.client_config)
    directory = join(hdfs_store.root, "pipeline-recovery")
    client.mkdirs(directory)
    writers = [LoopingWriter(client, join(directory, f"file-{number}")) for number in range(FILES)]
    wait_for_hsyncs(hdfs_cluster, writers, [2] * FILES, "before any DataNode died", START_DEADLINE)
    victim = 1
    hdfs_cluster.kill_datanode(victim)
    try:
        at_death = [writer.synced for writer in writers]
        wait_for_hsyncs(hdfs_cluster, writers, [then + AFTER for then in at_death], f"after DataNode {victim}'s death")
        for writer in writers:
            writer.stop_and_close()
    finally:
        hdfs_cluster.restart_datanode(victim)
    for writer in writers:
        with client.read(writer.path) as reader:
            assert reader.read() == CHUNK * writer.synced, writer.path
