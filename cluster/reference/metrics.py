"""The metrics page: every Prometheus series a node's `/metrics` serves, read from the
collectors the admin API registers (`cluster.admin.metrics.NodeMetrics`).

The collectors build their families when scraped, from what the node hands them, and
a family without a sample does not show its labels. So the page scrapes a stand-in
node that has one of everything (a shard, a queue, a processor, an alarm, a clustered
node's failover figures), twice: without and with the clustered node's figures, to
tell which series only a clustered node serves."""

from __future__ import annotations

from dataclasses import dataclass

from . import markdown as md

TITLE = "Metrics"


def intro() -> str:
    from repositories.instruments import LATENCY_BUCKETS

    return (
        "Every series a node's admin API serves at `/metrics` (Prometheus text, role `read`), with the help "
        "text it carries. Counters are exposed with `_total`; each histogram as `_bucket` (label `le`), `_sum` "
        f"and `_count`, in seconds, with buckets from {LATENCY_BUCKETS[0] * 1000:g} ms to "
        f"{LATENCY_BUCKETS[-1]:g} s. What the figures mean and when they move: [Metrics](../operate/metrics.md)."
    )


@dataclass(frozen=True)
class SampleNode:
    """A stand-in for `NodeControl` with one of everything its collectors publish."""

    clustered: bool

    def queues(self):
        return {"SHARD": {"QUEUE": {}}}

    def processors(self):
        return {"SHARD": {"PROCESSOR": {}}}

    def state(self):
        return "RUNNING"

    def repository_sizes(self):
        return {"REPOSITORY": 0}

    def alarms(self):
        return [{"shard": "SHARD", "queue": "QUEUE", "reason": "REASON", "flowfiles": 0}]

    def measures(self):
        from cluster.failover.instruments import FailoverInstruments
        from cluster.node.measures import NodeMeasures, ShardMeasures
        from repositories.instruments import LatencyHistogram

        empty = LatencyHistogram().snapshot()
        shard = ShardMeasures(
            commits={"OUTCOME": 0}, commit_seconds=empty, wal_sync_seconds=empty, swap_outs=0, swap_ins=0
        )
        if not self.clustered:
            return NodeMeasures(shards={"SHARD": shard})
        return NodeMeasures(
            shards={"SHARD": shard},
            storage_calls={"OPERATION": empty},
            failover=FailoverInstruments().snapshot(),
            session_state=None,
        )


@dataclass(frozen=True)
class Series:
    name: str  # as exposed: counters with _total
    type: str  # counter, gauge, histogram
    labels: tuple[str, ...]
    help: str
    clustered_only: bool


def scrape(clustered: bool) -> dict[str, tuple[str, tuple[str, ...], str]]:
    """Exposed name -> (type, label names, help) of every family a stand-in node serves."""
    from cluster.admin.metrics import NodeMetrics

    found = {}
    for family in NodeMetrics(SampleNode(clustered)).registry.collect():
        labels: list[str] = []
        for sample in family.samples:
            labels += [label for label in sample.labels if label != "le" and label not in labels]
        name = f"{family.name}_total" if family.type == "counter" else family.name
        found[name] = (family.type, tuple(labels), family.documentation)
    return found


def node_series() -> list[Series]:
    every_node = scrape(clustered=False)
    return [
        Series(name, kind, labels, text, name not in every_node)
        for name, (kind, labels, text) in scrape(clustered=True).items()
    ]


def metrics_page(series: list[Series] | None = None) -> str:
    series = node_series() if series is None else series
    rows = [
        (
            md.code(s.name),
            md.text(s.type),
            ", ".join(md.code(label) for label in s.labels),
            "clustered" if s.clustered_only else "every",
            md.text(s.help),
        )
        for s in series
    ]
    body = md.table(("series", "type", "labels", "nodes", "help"), rows)
    return md.page(TITLE, intro(), body)
