"""The drill's timeline as a PNG: FlowFiles delivered per second across the run,
each fault a labelled vertical line, each failover's phases shaded (detection: death
to plan; takeover: plan to adopted; resume: adopted to first output; for a fault
nothing fails over on, the time the service was down), so that a person sees where
delivery stalled and for how long.

Input is a drill report (`report.drill_report`): its "timeline" samples
([wall-clock time, delivered so far]) and its rounds' "phases". matplotlib draws
with the Agg backend (no display needed); `rates` is pure and tested on its own.
"""

from __future__ import annotations

import bisect

SECONDS_PER_INCH = 6.0  # up to a width of 40 inches
LABEL_INCHES = 0.16  # the width of a fault's rotated label
PHASES = (  # (from, to, label, colour)
    ("fault_at", "plan_at", "detection (death to plan)", "#d62728"),
    ("plan_at", "adopted_at", "takeover (plan to adopted)", "#ff7f0e"),
    ("adopted_at", "resumed_at", "resume (adopted to first output)", "#bcbd22"),
    ("fault_at", "healed_at", "service down (nothing fails over)", "#7f7f7f"),
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


def plot_timeline(report: dict, path: str, *, title: str | None = None) -> str:
    """Draw the report's timeline into `path` (PNG); returns `path`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.patches import Patch

    samples = report.get("timeline") or []
    origin = samples[0][0] if samples else (report.get("started_at") or 0.0)
    times, values = rates(samples)
    duration = max([times[-1] + 1.0 if times else 1.0]
                   + [at - origin for entry in report["rounds"] for at in entry.get("phases", {}).values()])
    width = min(40.0, max(12.0, duration / SECONDS_PER_INCH))
    figure, axes = pyplot.subplots(figsize=(width, 5.5), dpi=100)
    try:
        axes.step(times, values, where="post", color="#1f77b4", linewidth=1.2, label="delivered FlowFiles per second")
        top = max(values, default=1.0) * 1.25 or 1.0
        axes.set_ylim(0, top)
        axes.set_xlim(0, duration)
        shown = set()
        # A label that would overlap the one before it (faults seconds apart) goes lower.
        gap = LABEL_INCHES * duration / width
        last_label_at, level = None, 0
        for entry in report["rounds"]:
            phases = entry.get("phases", {})
            for start, end, label, colour in PHASES:
                if start in phases and end in phases and phases[end] > phases[start]:
                    axes.axvspan(phases[start] - origin, phases[end] - origin, color=colour, alpha=0.25, linewidth=0)
                    shown.add(label)
            if "fault_at" in phases:
                at = phases["fault_at"] - origin
                axes.axvline(at, color="black", linewidth=0.9, linestyle="--")
                level = level + 1 if last_label_at is not None and at - last_label_at < gap else 0
                last_label_at = at
                axes.text(at, top * (0.98 - 0.25 * (level % 3)), f" {entry['round'] + 1}: {entry['fault']}",
                          rotation=90, va="top", ha="right", fontsize=8,
                          bbox={"facecolor": "white", "alpha": 0.7, "linewidth": 0, "pad": 0.5})
        handles = [axes.get_lines()[0]] if axes.get_lines() else []
        handles += [Patch(color=colour, alpha=0.35, label=label) for _, _, label, colour in PHASES if label in shown]
        handles.append(pyplot.Line2D([], [], color="black", linestyle="--", linewidth=0.9, label="fault injected"))
        axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=9, frameon=False)
        axes.set_xlabel("seconds since the drill started")
        axes.set_ylabel("FlowFiles delivered per second")
        verdict = "exactly once held" if report.get("ok") else "FAILED"
        axes.set_title(title or f"custody drill ({report.get('target', '?')}): {len(report['rounds'])} rounds, {verdict}")
        axes.grid(axis="y", alpha=0.3)
        figure.tight_layout()
        figure.savefig(path, format="png")
    finally:
        pyplot.close(figure)
    return path
