"""What a node counted and timed (`NodeControl.measures()`) as Prometheus families.

Read when scraped: the node's instruments (`repositories.instruments`) are plain
counters and bucketed histograms, copied here into the families below. Every shard's
series carry its `shard` label; a standalone node's one shard is `local`.

    custody_commits_total{shard,outcome}              counter    committed / refused / failed / unknown
    custody_commit_duration_seconds{shard}            histogram  each commit that stood
    custody_wal_sync_duration_seconds{shard}          histogram  each journal sync (one per group commit)
    custody_swap_outs_total{shard}                    counter    swap files written
    custody_swap_ins_total{shard}                     counter    swap files read back
  clustered nodes only:
    custody_hdfs_call_duration_seconds{operation}     histogram  each HDFS call, failed ones too
    custody_failover_plans_total                      counter    failover plans written as the leader
    custody_adoptions_total{outcome}                  counter    adopted / fenced / retried
    custody_fencing_duration_seconds                  histogram  each fence: rename, then lease recovery
    custody_adoption_duration_seconds                 histogram  each adoption, claim to running runtime
    custody_zookeeper_session_state{state}            gauge      1 for the session's state, CONNECTED /
                                                                 SUSPENDED / LOST (the session guard's);
                                                                 all 0 with no session
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from ..node.measures import SESSION_STATES


def add_histogram(family: HistogramMetricFamily, labels: list[str], snapshot) -> None:
    """One `repositories.instruments.HistogramSnapshot` as a series of `family`."""
    buckets = [
        (floatToGoString(bound), count) for bound, count in zip(snapshot.bounds, snapshot.cumulative, strict=False)
    ]
    family.add_metric(labels, buckets + [("+Inf", snapshot.count)], snapshot.sum)


class MeasuresCollector:
    def __init__(self, control):
        self.control = control

    def collect(self):
        measures = self.control.measures()
        yield from self._shards(measures.shards)
        if measures.failover is not None:
            yield from self._cluster(measures)

    @staticmethod
    def _shards(shards):
        commits = CounterMetricFamily(
            "custody_commits",
            "durable commits of sessions, by outcome: committed; "
            "refused before any write (the node's gate); failed, nothing in the WAL; "
            "unknown until the WAL rolls",
            labels=["shard", "outcome"],
        )
        commit_seconds = HistogramMetricFamily(
            "custody_commit_duration_seconds",
            "seconds of each commit that stood (content sync, WAL, queues, provenance)",
            labels=["shard"],
        )
        sync_seconds = HistogramMetricFamily(
            "custody_wal_sync_duration_seconds",
            "seconds of each FlowFile WAL journal sync (one per group commit)",
            labels=["shard"],
        )
        swap_outs = CounterMetricFamily("custody_swap_outs", "swap files written", labels=["shard"])
        swap_ins = CounterMetricFamily("custody_swap_ins", "swap files read back into their queue", labels=["shard"])
        for shard, measured in sorted(shards.items()):
            for outcome, count in measured.commits.items():
                commits.add_metric([shard, outcome], count)
            add_histogram(commit_seconds, [shard], measured.commit_seconds)
            add_histogram(sync_seconds, [shard], measured.wal_sync_seconds)
            swap_outs.add_metric([shard], measured.swap_outs)
            swap_ins.add_metric([shard], measured.swap_ins)
        return commits, commit_seconds, sync_seconds, swap_outs, swap_ins

    @staticmethod
    def _cluster(measures):
        calls = HistogramMetricFamily(
            "custody_hdfs_call_duration_seconds",
            "seconds of each HDFS call of the node's storage, failed ones too",
            labels=["operation"],
        )
        for operation, snapshot in measures.storage_calls.items():
            add_histogram(calls, [operation], snapshot)
        failover = measures.failover
        plans = CounterMetricFamily(
            "custody_failover_plans", "failover plans this node wrote as the leader", value=failover.plans_led
        )
        adoptions = CounterMetricFamily(
            "custody_adoptions",
            "shard adoptions this node attempted, by outcome: adopted; fenced (a newer owner has it); retried",
            labels=["outcome"],
        )
        for outcome, count in failover.adoptions.items():
            adoptions.add_metric([outcome], count)
        fencing = HistogramMetricFamily(
            "custody_fencing_duration_seconds",
            "seconds of each fence of a shard directory: rename, then lease recovery",
        )
        add_histogram(fencing, [], failover.fencing_seconds)
        adopting = HistogramMetricFamily(
            "custody_adoption_duration_seconds", "seconds of each adoption, from the claim to the running shard"
        )
        add_histogram(adopting, [], failover.adoption_seconds)
        session = GaugeMetricFamily(
            "custody_zookeeper_session_state",
            "1 for the state of the node's ZooKeeper session, as its session guard "
            "sees it (LOST: over, by ZooKeeper or the guard's own timer); all 0 with "
            "no session (before it joins, after an offload)",
            labels=["state"],
        )
        for state in SESSION_STATES.values():
            session.add_metric([state], 1 if measures.session_state == state else 0)
        return calls, plans, adoptions, fencing, adopting, session
