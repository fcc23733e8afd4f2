"""Once one hsync hung for its full deadline on a frozen DataNode, the next hsyncs through
it are given up in a fraction of that deadline, not each after the whole of it:
pipeline suspicion (`replication.pipeline_suspicion`), on the real HDFS of the harness
(3 DataNodes, replication 2).

Twelve files are made and synced while every DataNode answers, so each has its pipeline;
then one DataNode is frozen (SIGSTOP: what a dead machine is to a writer) and each file
is written and hsynced in turn. About two pipelines in three go through the frozen
DataNode. The first hsync that meets it waits the full deadline (1.5 s, the nodes'); from
then on, an hsync that meets it must be given up long before that deadline. Without
suspicion each one waited the full deadline in turn, as a commit's content resource and
WAL journal did in the compose drill's DataNode rounds."""

from __future__ import annotations

import time

import pytest

from cluster.drills.flow_cluster import IO_TIMEOUT
from cluster.drills.harness import HDFS_CLIENT
from replication.hdfs_storage import HdfsStorage
from repositories.storage import StorageUnavailable, join

pytestmark = [pytest.mark.hdfs]

FILES = 12  # about 8 through the frozen DataNode; fewer than 2 is 5 in 100,000
FROZEN = 0  # the harness's DataNode index
# An hsync while pipelines are suspected is given up after 0.3 s; room for a loaded
# machine, and two thirds of the full deadline that each waited before.
GIVEN_UP_BOUND = 1.0


def test_after_one_hsync_hung_on_a_frozen_datanode_the_next_are_given_up_quickly(hdfs_cluster, hdfs_store):
    storage = HdfsStorage(hdfs_cluster.url, {**hdfs_cluster.client_config, **HDFS_CLIENT}, io_timeout=IO_TIMEOUT)
    directory = join(hdfs_store.root, "suspected")
    storage.mkdir(directory)
    files = []
    for number in range(FILES):
        file = storage.create(join(directory, f"journal-{number}"))
        file.write(f"header {number};".encode())
        file.sync()  # every DataNode answers: the file has its pipeline
        files.append(file)
    failed: list[float] = []  # how long each hsync that was given up took, in turn
    hdfs_cluster.pause_datanode(FROZEN)
    try:
        for file in files:
            file.write(b"record;")
            began = time.monotonic()
            try:
                file.sync()
            except StorageUnavailable:
                failed.append(time.monotonic() - began)
    finally:
        hdfs_cluster.resume_datanode(FROZEN)
    print(f"\nhsyncs given up while DataNode {FROZEN} was frozen: {[round(t, 2) for t in failed]}")
    assert len(failed) >= 2, f"fewer than two pipelines met the frozen DataNode: {failed}"
    assert failed[0] >= IO_TIMEOUT * 0.9, f"the first hang was given up before its deadline: {failed}"
    assert max(failed[1:]) < GIVEN_UP_BOUND, f"an hsync after the first hang waited out a long deadline: {failed}"
