"""A harness HDFS whose daemon cannot start says so at once, naming the daemon and
showing why, instead of waiting out its health deadline."""

import socket
import time

import pytest

import cluster.services.hdfs as hdfs
from cluster.services.network import HOST
from cluster.services.process import ServiceError
from tests.conftest import service_unavailable


def test_a_datanode_whose_port_is_taken_fails_the_start_at_once_naming_it(tmp_path, monkeypatch):
    try:
        hdfs.hadoop_jars()
    except Exception as error:  # noqa: BLE001
        service_unavailable("HDFS", error)
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    chosen = hdfs.free_ports

    def one_taken(count: int) -> list[int]:
        # namenode_rpc, namenode_http, dn0_data, ...: another process listens on the DataNode's data port
        ports = chosen(count)
        held.bind((HOST, ports[2]))
        held.listen()
        return ports

    monkeypatch.setattr(hdfs, "free_ports", one_taken)
    cluster = hdfs.HdfsCluster(tmp_path, datanodes=1)
    began = time.monotonic()
    try:
        with pytest.raises(ServiceError) as caught:
            cluster.start(timeout=120)
        waited = time.monotonic() - began
    finally:
        cluster.stop()
        held.close()
    assert "datanode-0 exited" in str(caught.value), str(caught.value)
    assert "Address already in use" in str(caught.value), str(caught.value)
    assert waited < 60, f"the start waited {waited:.0f} s for a DataNode that had exited"
