"""What the drill tests share: run the rounds of `custody drill` on a started target,
checking after each that nothing was delivered twice, then write and check the report
as the tool would (`cluster.drills.report`)."""

from __future__ import annotations

import json
import os
from collections import Counter

from cluster.drills.fault_kinds import BY_NAME, rotation
from cluster.drills.harness import SESSION_TIMEOUT
from cluster.drills.report import drill_report, round_line, table
from cluster.drills.runner import DrillRunner
from cluster.node.events import NodeEvent


def adoptions(target) -> list[str]:
    """Every adoption the nodes' running processes logged, oldest first: which node's
    incarnation adopted which shard, at which epoch, when (a duplicate's post-mortem:
    a shard adopted again while it drained is the likeliest place)."""
    found = [
        (event["at"], f"{event['at']:.3f} {event['incarnation']} adopted {event['shard']}")
        for name in target.names
        for event in target.events(name, NodeEvent.ADOPTED)
    ]
    return [line for _, line in sorted(found)]


def run_drill(target, faults, rounds: int, report_path: str, *, workload: str = "files"):
    """Run `rounds` rounds of `faults` in turn on `target`; returns (runner, report).
    Asserts exactly once (the final check, and no duplicate after any round), the
    rounds of each fault, a resume measured in every failover round, and detection
    within a generous bound of the session timeout."""

    def after_round(entry):
        print(round_line(entry, rounds), json.dumps(entry), flush=True)
        # After each fault: no id delivered twice (no sink file carrying another's id);
        # else where each copy came from, and which node adopted which shard when.
        assert entry["sink_duplicates"] == 0, (
            entry,
            list(target.sink_duplicates().items())[:5],
            adoptions(target),
        )

    runner = DrillRunner(target, rotation(faults, rounds), on_round=after_round)
    check = runner.run()
    print(check.summary())
    assert check.ok, check.summary()
    result = drill_report(
        runner.rounds,
        faults,
        check,
        runner.samples,
        target=target.kind,
        started_at=runner.started_at,
        workload=workload,
        blocks_scheduled_at_start=runner.blocks_scheduled_at_start,
    )
    with open(report_path, "w") as out:
        json.dump(result, out, indent=2)
    print(table(result))
    assert result["ok"]
    # HDFS's unfinished blocks were read from the real NameNode (at least once: its /jmx
    # may be slow to answer on a loaded machine, and a round then goes without).
    assert result["hdfs_blocks_scheduled"] is not None, [r.get("blocks_scheduled") for r in runner.rounds]
    # The rounds take the faults in turn; a fault named twice comes round twice as often.
    assert result["faults"] == dict(Counter(rotation(faults, rounds)))
    # Every failover round measured its resume: the victim died with work queued.
    # One exception: an expiry whose first attach failed (the server moved the session
    # back to the node's own connection) leaves the victim running until the next
    # attempt, seconds later, and it may drain its backlog meanwhile. Its shard is then
    # adopted empty, which the runner records as `nothing_to_resume`.
    failovers = [r for r in runner.rounds if BY_NAME[r["fault"]].fails_over]
    unresumed = [
        r
        for r in failovers
        if "resume" not in r
        and not (r["fault"] == "expire" and r.get("nothing_to_resume") and r["detection"] > SESSION_TIMEOUT)
    ]
    assert not unresumed, unresumed
    # Generous bound for a shared 2-core CI machine; the figures above are the measurement.
    if failovers:
        assert result["summary"]["all"]["detection"]["max"] < SESSION_TIMEOUT + 10
    return runner, result


def report_path(variable: str, tmp_path) -> str:
    """Where the JSON report goes: the file `variable` names, or the test's directory."""
    return os.environ.get(variable) or str(tmp_path / "drill.json")
