"""A JVM service that does not answer is asked what it is doing (`cluster.services.jvm_dump`):
a ZooKeeper server of the harness, a real JVM, prints its threads and heap on SIGQUIT
and goes on serving, and the report holds its main thread's stack and its heap's
generations."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from cluster.services.jvm_dump import hang_report
from cluster.services.process import ManagedProcess

pytestmark = [pytest.mark.zookeeper]


def test_a_jvm_service_shows_its_main_thread_and_its_heap_and_goes_on(zookeeper_ensemble, tmp_path):
    member = zookeeper_ensemble.members[0]
    report = hang_report(member.process)
    assert report.startswith('main thread:\n"main"'), report
    assert "org.apache.zookeeper" in report, report
    assert "\nHeap\n" in report and "tenured generation" in report, report
    client = KazooClient(hosts=f"127.0.0.1:{member.client_port}", timeout=10)
    client.start(timeout=30)  # still serving
    client.stop()
    client.close()
    never_started = ManagedProcess("none", ["true"], str(tmp_path / "none.log"))
    assert hang_report(never_started) == "(the JVM is not running)"
