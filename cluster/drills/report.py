"""What a failover drill found, as figures, a table, progress lines and JSON.

Pure functions of the runner's rounds (one dict a round, see `runner`), its delivery
samples and the final check (`checker.ClusterReport`); no I/O.

Attribution: the final check counts lost, duplicated and unexpected ids over the
whole run (an id does not record which fault it met), so those are totals. Per fault
kind there is what can be attributed: the duplicate deliveries the sink showed right
after a round of that kind and not before (`sink_duplicates`), and the timings.
"""

from __future__ import annotations

import statistics

from .checker import ClusterReport
from .fault_kinds import BY_NAME

TIMINGS = ("detection", "takeover", "resume", "death_to_resume")
FAULT_WIDTH = max(len(name) for name in BY_NAME)  # a round line's fault column
_EXAMPLES = 20  # ids of each kind kept in the JSON report


def percentile(values, fraction: float) -> float:
    """The nearest-rank percentile of `values` (non-empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def timing_figures(rounds: list[dict]) -> dict:
    """{timing: {p50, p99, max, n}} over the rounds that measured it (a rack round:
    over each of its shards)."""
    out = {}
    # A round that killed several nodes (a rack) counts each of their shards.
    timed = [shard for entry in rounds for shard in entry.get("shards") or [entry]]
    for key in TIMINGS:
        values = [entry[key] for entry in timed if key in entry]
        if values:
            out[key] = {
                "p50": round(statistics.median(values), 3),
                "p99": round(percentile(values, 0.99), 3),
                "max": round(max(values), 3),
                "n": len(values),
            }
    return out


def check_counts(check: ClusterReport) -> dict:
    """The final check as numbers, with a few ids of each finding."""
    delivery = check.delivery
    return {
        "ok": check.ok,
        "summary": check.summary(),
        "created": check.created,
        "delivered": delivery.delivered,
        "lost": len(delivery.lost),
        "duplicated": len(delivery.duplicated),
        "unexpected": len(delivery.unexpected),
        "created_twice": len(check.created_twice),
        "sends_missing": len(check.sends_missing),
        "sends_duplicated": len(check.sends_duplicated),
        "wrong_content": len(check.wrong_content),
        "left_in_wals": sum(check.live_flowfiles.values()),
        "examples": {
            "lost": delivery.lost[:_EXAMPLES],
            "duplicated": list(delivery.duplicated)[:_EXAMPLES],
            "unexpected": delivery.unexpected[:_EXAMPLES],
        },
    }


def summarize(rounds: list[dict], faults, check: ClusterReport | None) -> dict:
    """Per fault kind: rounds, sink duplicates first seen after them, timings; under
    "all": the same over every round, plus the whole run's lost, duplicated and
    unexpected (None when the run stopped before its check)."""
    out = {}
    for fault in dict.fromkeys(faults):  # a fault named twice in the rotation: one row
        selected = [entry for entry in rounds if entry["fault"] == fault]
        out[fault] = {
            "rounds": len(selected),
            "sink_duplicates": sum(e.get("sink_duplicates", 0) for e in selected),
            **timing_figures(selected),
        }
        late = sum(1 for e in selected if "adoption_ended_first" in e)
        if late:  # meant for an adopter mid-adoption, they hit it just after
            out[fault]["after_adoption"] = late
    counts = check_counts(check) if check is not None else {}
    out["all"] = {
        "rounds": len(rounds),
        "sink_duplicates": sum(e.get("sink_duplicates", 0) for e in rounds),
        "violations": sum(len(e.get("violations", ())) for e in rounds),
        "lost": counts.get("lost"),
        "duplicated": counts.get("duplicated"),
        "unexpected": counts.get("unexpected"),
        **timing_figures(rounds),
    }
    return out


def blocks_scheduled_figures(rounds: list[dict], at_start: int | None) -> dict | None:
    """HDFS's count of blocks scheduled on DataNodes and not reported finished
    (`DrillTarget.blocks_scheduled`, read after each round): at the start and at the
    end, and per fault kind the rise over its rounds (each round's count less the one
    read before it) and that rise per round. A count that only rises is a leak that
    would one day make the DataNodes refuse new blocks. None when it was never read."""
    previous, last = at_start, None
    rises: dict[str, list[int]] = {}
    for entry in rounds:
        count = entry.get("blocks_scheduled")
        if count is None:
            continue
        if previous is not None:
            rises.setdefault(entry["fault"], []).append(count - previous)
        previous = last = count
    if last is None:
        return None
    return {
        "start": at_start,
        "end": last,
        "rise": {fault: sum(values) for fault, values in rises.items()},
        "rise_per_round": {fault: round(sum(values) / len(values), 2) for fault, values in rises.items()},
    }


def drill_report(
    rounds: list[dict],
    faults,
    check: ClusterReport | None,
    samples,
    *,
    target: str,
    started_at: float | None = None,
    error: str | None = None,
    workload: str = "files",
    blocks_scheduled_at_start: int | None = None,
) -> dict:
    """The JSON report: the rounds, the summary, the check, the timeline samples
    ([wall-clock time, delivered so far]), HDFS's unfinished blocks
    (`blocks_scheduled_figures`) and whether the run proved exactly once."""
    report = {
        "target": target,
        "workload": workload,  # files: FlowFiles into a sink directory; kafka: records into a topic
        "started_at": started_at,
        "faults": {fault: sum(1 for r in rounds if r["fault"] == fault) for fault in dict.fromkeys(faults)},
        "rounds": rounds,
        "summary": summarize(rounds, faults, check),
        "check": check_counts(check) if check is not None else None,
        "created": check.created if check is not None else None,
        "stops_hung": sum(1 for r in rounds if r.get("left_on_purpose") == "stop hung"),
        "sessions_lost_in_no_failover_rounds": sum(len(r.get("sessions_lost", ())) for r in rounds),
        "nothing_to_resume": sum(1 for r in rounds if r.get("nothing_to_resume")),
        "timeline": [list(sample) for sample in samples],
        "hdfs_blocks_scheduled": blocks_scheduled_figures(rounds, blocks_scheduled_at_start),
        "error": error,
    }
    report["ok"] = passed(report)
    return report


def passed(report: dict) -> bool:
    """Exactly once held: the run finished, and its check found nothing lost,
    duplicated or unexpected (at the sink, in provenance, in the WALs); and no round
    left the cluster breaking a rule of the protocol (`runner.protocol_check`)."""
    check = report["check"]
    every = report["summary"]["all"]
    return (
        report["error"] is None
        and check is not None
        and check["ok"]
        and not every["sink_duplicates"]
        and not every["violations"]
    )


def _triple(figures: dict, key: str) -> str:
    found = figures.get(key)
    return f"{found['p50']:.2f}/{found['p99']:.2f}/{found['max']:.2f}" if found else "-"


def table(report: dict) -> str:
    """The summary as a table a person reads, then the whole run's check and verdict."""
    header = f"{'fault':<{FAULT_WIDTH}} {'rounds':>6} {'dups seen':>9}   " + "  ".join(
        f"{label:<17}" for label in ("detection s", "takeover s", "resume s", "death->resume s")
    )
    lines = [
        header.rstrip(),
        (f"{'':<{FAULT_WIDTH}} {'':>6} {'':>9}   " + "  ".join(f"{'p50/p99/max':<17}" for _ in TIMINGS)).rstrip(),
    ]
    for fault, figures in report["summary"].items():
        if fault == "all":
            continue
        timed = "  ".join(f"{_triple(figures, key):<17}" for key in TIMINGS)
        if fault in BY_NAME and not BY_NAME[fault].fails_over:
            timed = "(nothing fails over: delivery went on)"
        lines.append(
            f"{fault:<{FAULT_WIDTH}} {figures['rounds']:>6} {figures['sink_duplicates']:>9}   {timed}".rstrip()
        )
    every = report["summary"]["all"]
    lines.append(
        f"{'all':<{FAULT_WIDTH}} {every['rounds']:>6} {every['sink_duplicates']:>9}   "
        + "  ".join(f"{_triple(every, key):<17}" for key in TIMINGS).rstrip()
    )
    lines.append("dups seen: ids delivered twice that the sink showed right after a round of that fault.")
    lines.append(
        f"protocol invariants, checked after every round: {every['violations']} violation(s)"
        + ("" if not every["violations"] else ' (each in its round\'s "violations")')
    )
    scheduled = report.get("hdfs_blocks_scheduled")
    if scheduled:
        per_round = ", ".join(f"{fault} {rise:+.1f}" for fault, rise in scheduled["rise_per_round"].items())
        start = "?" if scheduled["start"] is None else scheduled["start"]
        lines.append(
            f"HDFS blocks scheduled and not reported finished (all DataNodes): {start} at the start, "
            f"{scheduled['end']} at the end" + (f"; a round's rise, by fault: {per_round}" if per_round else "")
        )
    check = report["check"]
    if check is None:
        lines.append("whole run: not checked (the drill stopped before its final check)")
    else:
        lines.append(
            f"whole run (totals of the final check; an id does not record which fault it met): "
            f"created {check['created']}, delivered {check['delivered']}: lost {check['lost']}, "
            f"duplicated {check['duplicated']}, unexpected {check['unexpected']}"
        )
        lines.append(
            f"  provenance: created twice {check['created_twice']}, sends missing {check['sends_missing']}, "
            f"sends duplicated {check['sends_duplicated']}; files with the wrong content "
            f"{check['wrong_content']}; FlowFiles left in WALs {check['left_in_wals']}"
        )
    if report["error"]:
        lines.append(f"stopped by: {report['error']}")
    lines.append("result: exactly once held" if report["ok"] else "result: FAILED (see above)")
    return "\n".join(lines)


def round_line(entry: dict, total: int) -> str:
    """One progress line for a finished (or failed) round."""
    head = f"round {entry['round'] + 1:>{len(str(total))}}/{total}  {entry['fault']:<{FAULT_WIDTH}} "
    if entry["fault"] == "load":
        body = f"{entry.get('down', 'load')}: nothing failed over"
        if "twenty_delivered_after" in entry:
            body += (
                f", 20 more delivered after {entry['twenty_delivered_after']:.1f}s, "
                f"{entry['delivered_meanwhile']} under the load"
            )
    elif "down" in entry or "delivered_meanwhile" in entry:
        slow = entry["fault"] == "slow-hdfs"  # its `down` says how the DataNodes stall
        body = f"{entry.get('down', 'a service')}{'' if slow else ' down'}: delivery went on"
        if "twenty_delivered_after" in entry:
            body += (
                f" (20 more delivered after {entry['twenty_delivered_after']:.1f}s, "
                f"{entry['delivered_meanwhile']} while {'HDFS was slow' if slow else 'it was down'})"
            )
        for lost in entry.get("sessions_lost", ()):
            body += f"; {lost['incarnation']} lost its session and was failed over"
    else:
        body = f"victim {entry.get('victim', '?')}"
        if "queued_at_death" in entry:
            body += f" ({entry['queued_at_death']} queued)"
        measured = [
            f"{label} {entry[key]:.2f}s"
            for key, label in (
                ("detection", "detection"),
                ("takeover", "takeover"),
                ("resume", "resume"),
                ("death_to_resume", "death to resume"),
            )
            if key in entry
        ]
        if measured:
            slowest = entry.get("slowest_shard")
            body += (f"; the slowest shard {slowest}: " if slowest else ": ") + ", ".join(measured)
        if entry.get("nothing_to_resume"):
            body += ": nothing to resume (the victim had drained its queue)"
    notes = []
    if entry.get("left_on_purpose") is True:
        notes.append("restarted first to build a backlog")
    elif entry.get("left_on_purpose") == "stop hung":
        notes.append("its graceful stop hung; killed")
    if "phase" in entry:
        notes.append(f"cut off while {'leading' if entry['phase'] == 'leader' else entry['phase']}")
    for key, label in (
        ("leader_killed", "leader killed"),
        ("adopter_killed", "adopter killed"),
        ("adopter_cut", "adopter cut off"),
    ):
        if key in entry:
            notes.append(f"{label}: {entry[key]}")
    if "started_again_after" in entry:
        notes.append(
            f"HDFS slow ({entry.get('stalled', 'every DataNode stalling')}): "
            f"it started again and delivered {entry['started_again_after']:.1f}s after its restart"
        )
    if "adoption_ended_first" in entry:
        notes.append(f"its adoption had ended {entry['adoption_ended_first']} s before: hit just after it")
    if entry.get("victims") and len(entry["victims"]) > 1:
        notes.append(f"killed together: {', '.join(entry['victims'])}")
    if isinstance(entry.get("zombie"), list):
        notes.append(f"zombie: {', '.join(entry['zombie'])}")
    if entry.get("deposed"):
        notes.append(f"deposed: {entry['deposed'][:120]}")
    if entry.get("sink_duplicates"):
        notes.append(f"DUPLICATES at the sink: {entry['sink_duplicates']}")
    if entry.get("violations"):
        notes.append(f"PROTOCOL VIOLATED: {'; '.join(entry['violations'])[:300]}")
    if entry.get("error"):
        notes.append(f"FAILED: {entry['error']}")
    return head + body + (f"  [{'; '.join(notes)}]" if notes else "")
