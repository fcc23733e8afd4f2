"""The harness warms its DataNodes' block recovery (`cluster.services.hdfs_warmup`): once
it has started an HDFS, and again once it has restarted a DataNode, every running
DataNode has led a block recovery, so that the first takeover does not pay for their
first InterDatanodeProtocol calls (0.2-2 s in a drill's first round before).

A fresh HDFS of its own (the session's has long led recoveries for other tests): its
DataNodes' logs start empty, so every recovery they show is the warm-up's. Without the
warm-up, a just-started DataNode has led none and the test fails."""

from __future__ import annotations

import hdfs_native
import pytest

from cluster.services.hdfs_warmup import WARM_DIRECTORY
from tests.conftest import own_hdfs

pytestmark = [pytest.mark.hdfs]


def test_every_datanode_has_led_a_recovery_once_started_and_again_after_a_restart(tmp_path):
    with own_hdfs(tmp_path / "services") as cluster:
        led = [cluster.recoveries_led(index) for index in range(cluster.datanode_count)]
        assert all(led), f"recoveries led per DataNode after the start: {led}"

        cluster.restart_datanode(2)
        again = [cluster.recoveries_led(index) for index in range(cluster.datanode_count)]
        assert all(now > before for now, before in zip(again, led, strict=True)), (led, again)

        client = hdfs_native.Client(cluster.url, {})
        assert [status.path for status in client.list_status(WARM_DIRECTORY)] == []  # nothing left behind
