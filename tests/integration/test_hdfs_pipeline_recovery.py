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


def test_hsyncs_in_flight_through_a_killed_datanode_return_on_the_datanodes_left(hdfs_cluster, hdfs_store):
    assert installed_version() == PATCHED_VERSION, "run custody services install: it builds the nodes' HDFS client"
    client = hdfs_native.Client(hdfs_cluster.url, hdfs_cluster.client_config)
    directory = join(hdfs_store.root, "pipeline-recovery")
    client.mkdirs(directory)
    writers = [LoopingWriter(client, join(directory, f"file-{number}")) for number in range(FILES)]
    wait_until(lambda: all(writer.synced >= 2 for writer in writers), 60, "every writer to hsync twice")
    victim = 1
    hdfs_cluster.kill_datanode(victim)
    try:
        at_death = [writer.synced for writer in writers]
        try:
            wait_until(
                lambda: (
                    any(writer.error for writer in writers)
                    or all(writer.synced >= then + AFTER for writer, then in zip(writers, at_death, strict=True))
                ),
                DEADLINE,
                f"every writer to get {AFTER} hsyncs answered after DataNode {victim}'s death",
            )
        except ServiceError:
            stuck = [
                writer.path for writer, then in zip(writers, at_death, strict=True) if writer.synced < then + AFTER
            ]
            raise AssertionError(
                f"{len(stuck)} of {FILES} writers hung after DataNode {victim}'s death: {stuck}"
            ) from None
        assert not [writer.error for writer in writers if writer.error]
        for writer in writers:
            writer.stop_and_close()
    finally:
        hdfs_cluster.restart_datanode(victim)
    for writer in writers:
        with client.read(writer.path) as reader:
            assert reader.read() == CHUNK * writer.synced, writer.path
