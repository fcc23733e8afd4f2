"""The drill's timeline as a PNG: FlowFiles delivered per second across the run,
each fault a vertical line (labelled where the labels fit), each failover's phases
shaded (detection: death to plan; takeover: plan to adopted; resume: adopted to first
output; for a fault nothing fails over on, the time the service was down or the load
lasted), so that a person sees where delivery stalled and for how long. Below it, one mark per round at
its fault's moment: the seconds until that round's work went on (death to resume
for a failover; until twenty more FlowFiles arrived for a service fault). A run of
hundreds of rounds is too dense to read round by round on the upper panel; the
lower one still shows every round, and the rate gets a moving average beside it.

Input is a drill report (`report.drill_report`): its "timeline" samples
([wall-clock time, delivered so far]) and its rounds' "phases". matplotlib draws
with the Agg backend (no display needed); `rates`, `moving_average` and `outages`
are pure and tested on their own.
"""

from __future__ import annotations

import bisect

SECONDS_PER_INCH = 6.0  # up to a width of 40 inches
LABEL_INCHES = 0.16  # the width of a fault's rotated label
LABEL_LEVELS = 3  # labels of faults close together are staggered over this many heights
SMOOTH_AFTER_S = 600.0  # a run longer than this gets a moving average of its rate
SMOOTH_WINDOW = 30  # seconds
FAULT_COLOURS = {
    "kill": "#d62728",
    "stop": "#9467bd",
    "expire": "#8c564b",
    "leader": "#ff7f0e",
    "adopter": "#e377c2",
    "partition": "#17becf",
    "zk-follower": "#2ca02c",
    "datanode": "#7f7f7f",
    "slow-hdfs": "#bcbd22",
    "slow-hdfs-kill": "#dbdb8d",
    "rack": "#1f77b4",
    "load": "#393b79",
}
PHASES = (  # (from, to, label, colour)
    ("fault_at", "plan_at", "detection (death to plan)", "#d62728"),
    ("plan_at", "adopted_at", "takeover (plan to adopted)", "#ff7f0e"),
    ("adopted_at", "resumed_at", "resume (adopted to first output)", "#bcbd22"),
    ("fault_at", "healed_at", "service down, or load (nothing fails over)", "#7f7f7f"),
)


def rates(samples, step: float = 1.0) -> tuple[list[float], list[float]]:
    """Deliveries per second from cumulative samples [(time, delivered)], on a grid of
    `step` seconds from the first sample: (seconds since the first sample, rate).
    Between samples the count is interpolated linearly."""
    points = sorted((float(t), float(n)) for t, n in samples)
    if len(points) < 2:
        return [], []
    start, end = points[0][0], points[-1][0]

    moments = [t for t, _ in points]

    def count_at(moment: float) -> float:
        index = bisect.bisect_right(moments, moment)
        if index >= len(points):
            return points[-1][1]
        (t0, n0), (t1, n1) = points[index - 1], points[index]
        return n0 if t1 == t0 else n0 + (n1 - n0) * (moment - t0) / (t1 - t0)

    times, values = [], []
    moment = start
    previous = count_at(start)
    while moment + step <= end + 1e-9:
        current = count_at(moment + step)
        times.append(moment - start)
        values.append(max(0.0, (current - previous) / step))
        previous, moment = current, moment + step
    return times, values


def moving_average(values: list[float], window: int) -> list[float]:
    """The mean of each value and the `window - 1` before it (fewer at the start)."""
    averaged, total = [], 0.0
    for index, value in enumerate(values):
        total += value
        if index >= window:
            total -= values[index - window]
        averaged.append(total / min(index + 1, window))
    return averaged


def label_levels(moments: list[float], gap: float, levels: int = LABEL_LEVELS) -> list[int | None]:
    """For labels at `moments` (in order), each `gap` wide: the highest of `levels`
    heights (0 the top) where a label overlaps none before it, or None to leave it out."""
    last_at: list[float | None] = [None] * levels
    placed = []
    for at in moments:
        level = next((level for level, before in enumerate(last_at) if before is None or at - before >= gap), None)
        if level is not None:
            last_at[level] = at
        placed.append(level)
    return placed


def outages(report: dict, origin: float) -> list[tuple[float, float, str]]:
    """(seconds since `origin` of the fault, seconds until its work went on, fault) for
    every round that has both: death to resume for a failover, the time until twenty
    more FlowFiles were delivered for a fault nothing fails over on."""
    found = []
    for entry in report["rounds"]:
        fault_at = entry.get("phases", {}).get("fault_at")
        stalled = entry.get("death_to_resume", entry.get("twenty_delivered_after"))
        if fault_at is not None and stalled is not None:
            found.append((fault_at - origin, float(stalled), entry["fault"]))
    return found


def plot_timeline(report: dict, path: str, *, title: str | None = None) -> str:
    """Draw the report's timeline into `path` (PNG); returns `path`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.patches import Patch

    kafka = report.get("workload") == "kafka"
    unit = "records" if kafka else "FlowFiles"
    where = f"{report.get('target', '?')}, Kafka workload" if kafka else report.get("target", "?")
    samples = report.get("timeline") or []
    origin = samples[0][0] if samples else (report.get("started_at") or 0.0)
    times, values = rates(samples)
    duration = max(
        [times[-1] + 1.0 if times else 1.0]
        + [at - origin for entry in report["rounds"] for at in entry.get("phases", {}).values()]
    )
    width = min(40.0, max(12.0, duration / SECONDS_PER_INCH))
    figure, (axes, below) = pyplot.subplots(
        2, 1, sharex=True, figsize=(width, 8.0), dpi=100, gridspec_kw={"height_ratios": [5.5, 2.5]}
    )
    try:
        axes.step(
            times,
            values,
            where="post",
            color="#1f77b4",
            linewidth=1.2 if duration <= SMOOTH_AFTER_S else 0.5,
            label=f"delivered {unit} per second",
        )
        if duration > SMOOTH_AFTER_S:
            axes.plot(
                times,
                moving_average(values, SMOOTH_WINDOW),
                color="#08306b",
                linewidth=1.6,
                label=f"the same, mean of {SMOOTH_WINDOW} s",
            )
        top = max(values, default=1.0) * 1.25 or 1.0
        axes.set_ylim(0, top)
        axes.set_xlim(0, duration)
        shown = set()
        faulted = [entry for entry in report["rounds"] if "fault_at" in entry.get("phases", {})]
        levels = label_levels(
            [entry["phases"]["fault_at"] - origin for entry in faulted], LABEL_INCHES * duration / width
        )
        for entry in report["rounds"]:
            phases = entry.get("phases", {})
            for start, end, label, colour in PHASES:
                if start in phases and end in phases and phases[end] > phases[start]:
                    axes.axvspan(phases[start] - origin, phases[end] - origin, color=colour, alpha=0.25, linewidth=0)
                    shown.add(label)
        for entry, level in zip(faulted, levels, strict=False):
            at = entry["phases"]["fault_at"] - origin
            axes.axvline(at, color="black", linewidth=0.9 if duration <= SMOOTH_AFTER_S else 0.4, linestyle="--")
            if level is not None:  # left out where it would overlap (the lower panel has every round)
                axes.text(
                    at,
                    top * (0.98 - 0.25 * level),
                    f" {entry['round'] + 1}: {entry['fault']}",
                    rotation=90,
                    va="top",
                    ha="right",
                    fontsize=8,
                    bbox={"facecolor": "white", "alpha": 0.7, "linewidth": 0, "pad": 0.5},
                )
        unlabelled = levels.count(None)
        handles = list(axes.get_lines()[: 2 if duration > SMOOTH_AFTER_S else 1])
        handles += [Patch(color=colour, alpha=0.35, label=label) for _, _, label, colour in PHASES if label in shown]
        handles.append(pyplot.Line2D([], [], color="black", linestyle="--", linewidth=0.9, label="fault injected"))
        axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=9, frameon=False)
        axes.set_ylabel(f"{unit} delivered per second")
        verdict = "exactly once held" if report.get("ok") else "FAILED"
        note = f" ({unlabelled} fault labels left out where they would overlap)" if unlabelled else ""
        axes.set_title((title or f"custody drill ({where}): {len(report['rounds'])} rounds, {verdict}") + note)
        axes.grid(axis="y", alpha=0.3)

        marks = outages(report, origin)
        for fault in dict.fromkeys(fault for _, _, fault in marks):
            points = [(at, stalled) for at, stalled, kind in marks if kind == fault]
            below.scatter(
                [at for at, _ in points],
                [stalled for _, stalled in points],
                s=12,
                color=FAULT_COLOURS.get(fault, "black"),
                label=fault,
            )
        if marks:
            below.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=9, frameon=False)
        below.set_ylim(0, max([stalled for _, stalled, _ in marks], default=1.0) * 1.15 or 1.0)
        below.set_ylabel("seconds until\nwork went on")
        below.set_xlabel("seconds since the drill started")
        below.grid(axis="y", alpha=0.3)
        figure.tight_layout()
        figure.savefig(path, format="png")
    finally:
        pyplot.close(figure)
    return path
