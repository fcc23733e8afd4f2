"""The admin API's /metrics families of what a node counted and timed, from the node's
measures as `NodeControl.measures()` hands them over (no node, no server)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from cluster.admin.metrics import NodeMetrics
from cluster.core.guard import Phase
from cluster.failover.instruments import FailoverInstruments
from cluster.node.measures import NodeMeasures, ShardMeasures, session_state
from repositories.instruments import ByLabel, LatencyHistogram
from tests.prometheus_text import families, naming_problems, value


def histogram(*seconds):
    made = LatencyHistogram()
    for s in seconds:
        made.observe(s)
    return made.snapshot()


class FakeControl:
    name = "n1"

    def __init__(self, measures: NodeMeasures):
        self._measures = measures

    def queues(self):
        return {}

    def processors(self):
        return {}

    def state(self):
        return "RUNNING"

    def repository_sizes(self):
        return {}

    def alarms(self):
        return []

    def measures(self):
        return self._measures


def shard(committed: int) -> ShardMeasures:
    return ShardMeasures(
        commits={"committed": committed, "failed": 1},
        commit_seconds=histogram(0.002, 0.03),
        wal_sync_seconds=histogram(0.0004),
        swap_outs=3,
        swap_ins=2,
    )


def scrape(measures: NodeMeasures) -> dict:
    body, content_type = NodeMetrics(FakeControl(measures)).render()
    assert content_type.startswith("text/plain")
    return families(body.decode())


def test_a_standalone_nodes_shard_series_and_no_cluster_series():
    found = scrape(NodeMeasures(shards={"local": shard(7)}))
    assert not naming_problems(found)
    assert value(found, "custody_commits", "_total", shard="local", outcome="committed") == 7
    assert value(found, "custody_commit_duration_seconds", "_count", shard="local") == 2
    assert value(found, "custody_commit_duration_seconds", "_bucket", shard="local", le="0.0025") == 1
    assert value(found, "custody_commit_duration_seconds", "_sum", shard="local") == pytest.approx(0.032)
    assert value(found, "custody_wal_sync_duration_seconds", "_bucket", shard="local", le="0.0005") == 1
    assert value(found, "custody_swap_outs", "_total", shard="local") == 3
    assert value(found, "custody_swap_ins", "_total", shard="local") == 2
    assert "custody_zookeeper_session_state" not in found and "custody_hdfs_call_duration_seconds" not in found


@pytest.mark.parametrize("state", ["CONNECTED", "SUSPENDED", "LOST"])
def test_a_clustered_node_publishes_hdfs_calls_failovers_and_one_session_state(state):
    instruments = FailoverInstruments()
    instruments.plans_led.add(2)
    instruments.adoptions.of("adopted").add()
    instruments.fencing_durations.observe(1.5)
    instruments.adoption_durations.observe(4.0)
    calls = ByLabel(LatencyHistogram)
    calls.of("hsync").observe(0.004)
    calls.of("rename").observe(0.02)
    found = scrape(
        NodeMeasures(
            shards={"n1-4": shard(1), "n2-3": shard(5)},
            storage_calls=calls.snapshot(),
            failover=instruments.snapshot(),
            session_state=state,
        )
    )
    assert not naming_problems(found)
    assert value(found, "custody_commits", "_total", shard="n2-3", outcome="committed") == 5
    assert value(found, "custody_hdfs_call_duration_seconds", "_count", operation="hsync") == 1
    assert value(found, "custody_hdfs_call_duration_seconds", "_bucket", operation="rename", le="0.01") == 0
    assert value(found, "custody_failover_plans", "_total") == 2
    assert value(found, "custody_adoptions", "_total", outcome="adopted") == 1
    assert value(found, "custody_adoptions", "_total", outcome="retried") == 0  # published before it happens
    assert value(found, "custody_fencing_duration_seconds", "_sum") == 1.5
    assert value(found, "custody_adoption_duration_seconds", "_bucket", le="5.0") == 1
    states = {sample.labels["state"]: sample.value for sample in found["custody_zookeeper_session_state"].samples}
    assert states == {s: (1.0 if s == state else 0.0) for s in ("CONNECTED", "SUSPENDED", "LOST")}


def test_the_naming_check_catches_what_it_is_for():
    text = (
        "# TYPE custody_wait_ms histogram\ncustody_wait_ms_count 1\ncustody_wait_ms_sum 1\n"
        'custody_wait_ms_bucket{le="+Inf"} 1\n# TYPE requests counter\nrequests_total 1\n'
    )
    problems = naming_problems(families(text))
    assert any("base unit" in p for p in problems) and any("requests: not a custody_" in p for p in problems)


def test_scrapes_within_max_age_get_the_same_text_and_the_next_one_renders_anew():
    now = [100.0]
    control = FakeControl(NodeMeasures(shards={"local": shard(1)}))
    metrics = NodeMetrics(control, max_age_s=1.0, clock=lambda: now[0])
    assert metrics.fresh() is None  # nothing rendered yet
    first, _ = metrics.render()
    control._measures = NodeMeasures(shards={"local": shard(2)})
    now[0] += 0.9
    assert metrics.fresh() == first and metrics.render()[0] == first
    now[0] += 0.1
    assert metrics.fresh() is None
    assert value(families(metrics.render()[0].decode()), "custody_commits", "_total", outcome="committed") == 2


class FakeMember:
    def __init__(self, phase, dead=False):
        self.guard = SimpleNamespace(state=SimpleNamespace(phase=phase))
        self.dead = threading.Event()
        if dead:
            self.dead.set()


@pytest.mark.parametrize(
    "member, state",
    [
        (None, None),  # between incarnations, before the first
        (FakeMember(Phase.CONNECTED), "CONNECTED"),
        (FakeMember(Phase.SUSPENDED), "SUSPENDED"),
        (FakeMember(Phase.EXPIRED), "LOST"),  # the guard's own timer ran out; dying
        (FakeMember(Phase.EXPIRED, dead=True), "LOST"),  # stays LOST until the next incarnation
        (FakeMember(Phase.CONNECTED, dead=True), None),  # left on purpose (offload): no session
    ],
)
def test_the_session_state_a_clustered_node_publishes(member, state):
    assert session_state(member) == state
