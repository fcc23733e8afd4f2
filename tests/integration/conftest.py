"""The integration tests' own fixture: after every test that ran a cluster of real node
processes, the failover protocol's invariants are checked over one read of that
cluster's znodes (`cluster.core.validation.validate_cluster`), as dask's tests check
their state machine's invariants after every test.

A violation fails a test that passed (an error at its teardown, naming each rule
broken); after a test that failed already, the violations are printed with its output.
The check runs before the cluster fixture stops the nodes (it depends on that fixture),
with the cluster's own ZooKeeper client and credentials, and takes a few milliseconds.
"""

from __future__ import annotations

import pytest

from cluster.core.validation import validate_cluster
from cluster.drills.harness import ProcessCluster
from cluster.services.process import ServiceError, wait_until
from cluster.zk.view import read_cluster_view

# The fixtures that give a test a cluster of node processes (a `ProcessCluster`):
# tests/conftest.py's `flow_cluster` (and the drill test's own), test_cluster_failover's `cluster`.
CLUSTER_FIXTURES = ("flow_cluster", "cluster")
CONNECT_PATIENCE = 10.0  # seconds the cluster's client may take to reconnect (a test may have cut ZooKeeper)


@pytest.fixture(autouse=True)
def protocol_invariants(request):
    clusters = [request.getfixturevalue(name) for name in CLUSTER_FIXTURES if name in request.fixturenames]
    clusters = [cluster for cluster in clusters if isinstance(cluster, ProcessCluster)]
    yield
    report = getattr(request.node, "rep_call", None)
    passed = report is not None and report.passed
    for cluster in clusters:
        try:
            wait_until(lambda: cluster.client.connected, CONNECT_PATIENCE, "the cluster's ZooKeeper client to connect")  # noqa: B023
        except ServiceError as error:
            if passed:
                pytest.fail(f"the protocol's invariants could not be checked: {error}", pytrace=False)
            continue
        violations = validate_cluster(read_cluster_view(cluster.store))
        if violations and passed:
            pytest.fail(
                f"cluster {cluster.cluster} broke the protocol:\n" + "\n".join(map(str, violations)), pytrace=False
            )
        for violation in violations:
            print(f"protocol violation in cluster {cluster.cluster}: {violation}")
