"""A node asked to stop while HDFS stands still (every DataNode paused: each close of
a WAL or content file would wait out its storage deadline) exits within its
`[node] shutdown_timeout`, saying so with its stacks, instead of waiting on every file
in turn. Its shard is then as a crash leaves it: a new node adopts it and delivers
every FlowFile the stopped node had made, each once.

On the way, the node's ZooKeeper session password is checked to be in its private
session file only, never in its log or its events (whoever reads those could take
the session over)."""

from __future__ import annotations

import os
import signal
import stat
import time

import pytest

from cluster.node.session_file import read_session_text, session_path
from cluster.node.shutdown_deadline import EXIT_STOPPED_LATE
from cluster.services.process import wait_until

pytestmark = [pytest.mark.zookeeper, pytest.mark.hdfs, pytest.mark.slow, pytest.mark.timeout(420)]
SHUTDOWN_TIMEOUT = 3.0


def test_a_node_whose_hdfs_stands_still_stops_within_its_deadline(flow_cluster, hdfs_cluster):
    # io_timeout far past the deadline: only the deadline can end the stop in time.
    node = flow_cluster.start(
        "n1", count=300, sections={"node": {"shutdown_timeout": SHUTDOWN_TIMEOUT}, "hdfs": {"io_timeout": 120.0}}
    )
    node.wait("joined", timeout=90)
    wait_until(lambda: flow_cluster.delivered() >= 20, 90, "n1 to deliver its first FlowFiles")
    session_file = session_path(flow_cluster.directories["n1"])
    assert stat.S_IMODE(os.stat(session_file).st_mode) == 0o600
    password = read_session_text(open(session_file).read())["session_password"].hex()
    for written in (node.log.name, node.log.name + ".events"):
        assert password not in open(written, errors="replace").read(), f"the session password is in {written}"
    paused = [index for index, datanode in enumerate(hdfs_cluster.datanodes) if datanode.alive()]
    for index in paused:
        hdfs_cluster.pause_datanode(index)
    try:
        asked = time.monotonic()
        node.process.send_signal(signal.SIGTERM)
        code = node.process.wait(60)
        took = time.monotonic() - asked
    finally:
        for index in paused:
            hdfs_cluster.resume_datanode(index)
    log = open(node.log.name, errors="replace").read()
    assert code == EXIT_STOPPED_LATE, log[-3000:]
    assert "shutdown_timeout" in log and "Thread 0x" in log, log[-3000:]
    assert took < SHUTDOWN_TIMEOUT + 20, took  # the deadline, plus a loaded machine's slack
    # What it left is recovered as after a crash: n2 adopts the shard and finishes it.
    flow_cluster.start_joined(["n2"])
    flow_cluster.wait_settled(timeout=180)
    report = flow_cluster.check()
    assert report.ok, report.summary()
