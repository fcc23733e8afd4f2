"""The drill report: figures per fault kind, the check's totals, the verdict, the
table and the progress lines, from rounds written by hand."""

from cluster.drills.checker import ClusterReport, DeliveryReport
from cluster.drills.report import (
    blocks_scheduled_figures,
    drill_report,
    percentile,
    round_line,
    summarize,
    table,
    timing_figures,
)

KILL_1 = {
    "round": 0,
    "fault": "kill",
    "victim": "n2-4",
    "left_on_purpose": False,
    "queued_at_death": 412,
    "detection": 4.2,
    "takeover": 1.0,
    "resume": 0.5,
    "death_to_resume": 5.7,
    "sink_duplicates": 0,
}
KILL_2 = {**KILL_1, "round": 2, "detection": 4.6, "takeover": 3.0, "resume": 0.25, "death_to_resume": 7.85}
FOLLOWER = {
    "round": 1,
    "fault": "zk-follower",
    "victim": "n1-3",
    "left_on_purpose": True,
    "down": "ZooKeeper member 2",
    "delivered_meanwhile": 57,
    "twenty_delivered_after": 1.32,
    "sink_duplicates": 0,
    "phases": {"fault_at": 10.0, "healed_at": 14.0},
}


def clean_check(created=1200) -> ClusterReport:
    return ClusterReport(delivery=DeliveryReport(expected=created, delivered=created), created=created)


def test_percentile_is_nearest_rank():
    assert percentile([3, 1, 2], 0.5) == 2
    assert percentile(list(range(1, 101)), 0.99) == 99
    assert percentile([7.0], 0.99) == 7.0


def test_timings_are_summarised_only_over_the_rounds_that_measured_them():
    figures = timing_figures([KILL_1, KILL_2, FOLLOWER])
    assert figures["detection"] == {"p50": 4.4, "p99": 4.6, "max": 4.6, "n": 2}
    assert figures["takeover"]["max"] == 3.0 and figures["resume"]["p50"] == 0.375
    assert timing_figures([FOLLOWER]) == {}


def test_summary_per_fault_and_whole_run_totals_from_the_check():
    lost = ClusterReport(delivery=DeliveryReport(expected=10, delivered=9, lost=["a"], duplicated={"b": 2}), created=10)
    summary = summarize([KILL_1, FOLLOWER, {**KILL_2, "sink_duplicates": 1}], ("kill", "zk-follower"), lost)
    assert summary["kill"]["rounds"] == 2 and summary["kill"]["sink_duplicates"] == 1
    assert summary["zk-follower"] == {"rounds": 1, "sink_duplicates": 0}
    assert (summary["all"]["lost"], summary["all"]["duplicated"], summary["all"]["unexpected"]) == (1, 1, 0)
    assert summary["all"]["rounds"] == 3
    assert summarize([KILL_1], ("kill",), None)["all"]["lost"] is None


def test_the_report_passes_only_on_a_clean_check_of_a_finished_run():
    clean = drill_report(
        [KILL_1, FOLLOWER, KILL_2],
        ("kill", "zk-follower"),
        clean_check(),
        [(1.0, 0), (2.0, 50)],
        target="local",
        started_at=1.0,
    )
    assert clean["ok"] and clean["faults"] == {"kill": 2, "zk-follower": 1} and clean["created"] == 1200
    assert clean["check"]["lost"] == 0 and clean["timeline"] == [[1.0, 0], [2.0, 50]]
    duplicated = ClusterReport(delivery=DeliveryReport(expected=2, delivered=3, duplicated={"x": 2}), created=2)
    assert not drill_report([KILL_1], ("kill",), duplicated, [], target="local")["ok"]
    seen_twice = drill_report([{**KILL_1, "sink_duplicates": 2}], ("kill",), clean_check(), [], target="local")
    assert not seen_twice["ok"]
    stopped = drill_report([KILL_1], ("kill",), None, [], target="local", error="ServiceError: timed out")
    assert not stopped["ok"] and stopped["check"] is None
    left_in_wal = ClusterReport(delivery=DeliveryReport(expected=1, delivered=1), created=1, live_flowfiles={"n1-2": 3})
    report = drill_report([KILL_1], ("kill",), left_in_wal, [], target="local")
    assert not report["ok"] and report["check"]["left_in_wals"] == 3


def test_the_table_shows_each_fault_and_says_the_check_counts_are_totals():
    text = table(drill_report([KILL_1, FOLLOWER, KILL_2], ("kill", "zk-follower"), clean_check(), [], target="local"))
    lines = text.splitlines()
    kill = next(line for line in lines if line.startswith("kill "))
    assert kill.split()[:3] == ["kill", "2", "0"] and "4.40/4.60/4.60" in kill and "6.78/7.85/7.85" in kill
    assert "nothing fails over" in next(line for line in lines if line.startswith("zk-follower"))
    assert any(
        line.startswith("whole run (totals of the final check") and "lost 0, duplicated 0, unexpected 0" in line
        for line in lines
    )
    assert lines[-1] == "result: exactly once held"
    failed = table(drill_report([KILL_1], ("kill",), None, [], target="local", error="ServiceError: boom"))
    assert (
        "not checked" in failed and "stopped by: ServiceError: boom" in failed and failed.endswith("FAILED (see above)")
    )


def test_progress_lines_say_what_happened_in_the_round():
    assert round_line(KILL_1, 4) == (
        "round 1/4  kill           victim n2-4 (412 queued): detection 4.20s, takeover 1.00s, "
        "resume 0.50s, death to resume 5.70s"
    )
    follower = round_line(FOLLOWER, 12)
    assert follower.startswith("round  2/12  zk-follower    ZooKeeper member 2 down")
    assert "ZooKeeper member 2 down: delivery went on (20 more delivered after 1.3s, 57 while it was down)" in follower
    assert "restarted first to build a backlog" in follower
    failed = round_line(
        {
            "round": 3,
            "fault": "adopter",
            "victim": "n3-9",
            "adopter_killed": "n1-7",
            "sink_duplicates": 2,
            "error": "timed out",
        },
        4,
    )
    assert "adopter killed: n1-7" in failed and "DUPLICATES at the sink: 2" in failed and "FAILED: timed out" in failed


def test_unfinished_hdfs_blocks_rise_is_told_per_fault_kind():
    rounds = [
        {**KILL_1, "blocks_scheduled": 14},
        {**FOLLOWER, "blocks_scheduled": 13},
        {**KILL_2, "round": 2},  # the NameNode did not answer after this one
        {**KILL_2, "round": 3, "blocks_scheduled": 21},
    ]
    figures = blocks_scheduled_figures(rounds, 10)
    assert figures == {
        "start": 10,
        "end": 21,
        "rise": {"kill": 12, "zk-follower": -1},
        "rise_per_round": {"kill": 6.0, "zk-follower": -1.0},
    }
    # Not read before the first round: the rises start from the first round read.
    assert blocks_scheduled_figures(rounds, None)["rise"] == {"zk-follower": -1, "kill": 8}
    assert blocks_scheduled_figures([KILL_1, FOLLOWER], 10) is None
    text = table(
        drill_report(rounds, ("kill", "zk-follower"), clean_check(), [], target="local", blocks_scheduled_at_start=10)
    )
    assert "10 at the start, 21 at the end; a round's rise, by fault: kill +6.0, zk-follower -1.0" in text
    assert "blocks scheduled" not in table(drill_report([KILL_1], ("kill",), clean_check(), [], target="local"))
