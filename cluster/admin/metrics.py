"""The Prometheus metrics of a node, in a registry of its own (several nodes may
share a process in tests).

Gauges are read from `NodeControl` when scraped (a scrape copies figures the node
keeps anyway; nothing is counted twice); so are the counters and latency histograms
of its commits, WAL, swapping, HDFS calls and failovers (`measures`). Names follow
Prometheus' conventions: `custody_` prefix, base units (`_bytes`, `_seconds`),
counters end in `_total`.
"""

from __future__ import annotations

import threading
import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from .measures import MeasuresCollector
from .views import processor_figures, queue_figures

# (family, name, help, the figure) for each queue and each processor, by shard.
QUEUE_SERIES = (
    (GaugeMetricFamily, "custody_queue_flowfiles", "FlowFiles queued", lambda q: q.count),
    (GaugeMetricFamily, "custody_queue_bytes", "bytes of content queued", lambda q: q.bytes),
    (
        GaugeMetricFamily,
        "custody_queue_swapped_flowfiles",
        "FlowFiles swapped out to swap files",
        lambda q: q.swapped_count,
    ),
    (
        GaugeMetricFamily,
        "custody_queue_back_pressure",
        "1 when the queue applies back-pressure",
        lambda q: 1 if q.back_pressure else 0,
    ),
)
PROCESSOR_SERIES = (
    (CounterMetricFamily, "custody_processor_tasks", "tasks a processor ran", lambda p: p.tasks),
    (CounterMetricFamily, "custody_processor_failures", "tasks that raised and were rolled back", lambda p: p.failures),
    (GaugeMetricFamily, "custody_processor_running_tasks", "tasks running now", lambda p: p.running),
)
# A processor's statistics since its engine started (`flow.processor_stats`), counted
# from committed sessions, by shard, processor and processor type: rate() over them
# gives what NiFi's canvas shows for five minutes.
PROCESSOR_ACTIVITY_SERIES = (
    ("custody_processor_flowfiles_in", "FlowFiles a processor took from its queues", "in_count"),
    ("custody_processor_in_bytes", "content bytes of the FlowFiles a processor took from its queues", "in_bytes"),
    ("custody_processor_read_bytes", "content bytes a processor opened for reading", "read_bytes"),
    ("custody_processor_written_bytes", "content bytes a processor wrote", "written_bytes"),
    (
        "custody_processor_flowfiles_out",
        "FlowFiles a processor put in connections (one per connection; auto-terminated ones are not counted)",
        "out_count",
    ),
    ("custody_processor_out_bytes", "content bytes of the FlowFiles a processor put in connections", "out_bytes"),
    ("custody_processor_task_seconds", "time a processor's tasks took", "task_seconds"),
    ("custody_processor_flowfiles_failed", "FlowFiles a processor routed to its relationship failure", "failures"),
)


def _families(by_shard: dict[str, dict[str, dict]], view, label: str, series) -> list:
    """One family per series, one sample per shard and `label` (queue or processor)."""
    families = [(family(name, text, labels=["shard", label]), figure) for family, name, text, figure in series]
    for shard, items in by_shard.items():
        for item, figures in items.items():
            viewed = view(item, figures)
            for family, figure in families:
                family.add_metric([shard, item], figure(viewed))
    return [family for family, _ in families]


def _activity_families(by_shard: dict[str, dict[str, dict]]) -> list:
    """One counter per figure of `PROCESSOR_ACTIVITY_SERIES`, one sample per shard and processor."""
    families = [
        (CounterMetricFamily(name, text, labels=["shard", "processor", "type"]), figure)
        for name, text, figure in PROCESSOR_ACTIVITY_SERIES
    ]
    for shard, items in by_shard.items():
        for item, figures in items.items():
            viewed = processor_figures(item, figures)
            since_start = viewed.since_start
            for family, figure in families:
                family.add_metric([shard, item, viewed.type], getattr(since_start, figure))
    return [family for family, _ in families]


class NodeCollector:
    def __init__(self, control):
        self.control = control

    def collect(self):
        control = self.control
        yield from _families(control.queues(), queue_figures, "queue", QUEUE_SERIES)
        processors = control.processors()
        yield from _families(processors, processor_figures, "processor", PROCESSOR_SERIES)
        yield from _activity_families(processors)
        state = GaugeMetricFamily("custody_node_state", "1 for the node's current state", labels=["state"])
        state.add_metric([control.state()], 1)
        sizes = GaugeMetricFamily(
            "custody_repository_bytes", "bytes of a repository on local disk", labels=["repository"]
        )
        for name, size in control.repository_sizes().items():
            sizes.add_metric([name], size)
        yield from (state, sizes)
        yield from _alarm_families(control.alarms())


def _alarm_families(alarms: list[dict]) -> tuple:
    """Swap files set aside (unreadable, quarantined if corrupt) and their FlowFiles, by
    shard, queue and reason; absent when there is none (alert on `> 0`)."""
    files = GaugeMetricFamily(
        "custody_swap_files_unreadable",
        "swap files set aside because they cannot be read "
        "(quarantined when corrupt); their FlowFiles wait in the WAL for a repair",
        labels=["shard", "queue", "reason"],
    )
    flowfiles = GaugeMetricFamily(
        "custody_swap_flowfiles_unreadable",
        "FlowFiles in swap files that cannot be read",
        labels=["shard", "queue", "reason"],
    )
    totals: dict[tuple, list[int]] = {}
    for alarm in alarms:
        figures = totals.setdefault((alarm["shard"], alarm["queue"], alarm["reason"]), [0, 0])
        figures[0] += 1
        figures[1] += alarm["flowfiles"]
    for labels, (count, held) in sorted(totals.items()):
        files.add_metric(list(labels), count)
        flowfiles.add_metric(list(labels), held)
    return files, flowfiles


# A scrape renders at most this often; scrapes in between get the same text. Prometheus
# scrapes every 15 s or more, so this never delays its figures; it bounds what a flood
# of scrapes costs the flow, which shares the interpreter (a render takes a millisecond
# or more of CPU, most of it prometheus_client formatting each sample).
MAX_AGE_S = 1.0


class NodeMetrics:
    """Lock plan: `_lock` serialises renders (concurrent scrapes of a stale text wait
    for one render rather than each doing its own) and guards `_rendered`."""

    def __init__(
        self, control, registry: CollectorRegistry | None = None, *, max_age_s: float = MAX_AGE_S, clock=time.monotonic
    ):
        self.registry = registry or CollectorRegistry()
        self.registry.register(NodeCollector(control))
        self.registry.register(MeasuresCollector(control))
        self.max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._rendered: tuple[float, bytes] | None = None

    def fresh(self) -> bytes | None:
        """The last text, if it is younger than `max_age_s`; None when a render is due."""
        rendered = self._rendered
        if rendered is not None and self._clock() - rendered[0] < self.max_age_s:
            return rendered[1]
        return None

    def render(self) -> tuple[bytes, str]:
        with self._lock:
            body = self.fresh()
            if body is None:
                body = generate_latest(self.registry)
                self._rendered = (self._clock(), body)
        return body, CONTENT_TYPE_LATEST
