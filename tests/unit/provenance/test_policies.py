from repositories.provenance.policies import (
    EventFileSummary,
    RolloverPolicy,
    files_to_reindex,
    plan_age_off,
    plan_recovery,
)


def test_rollover_by_time_by_size_never_empty():
    policy = RolloverPolicy(max_age_s=30, max_bytes=1000)
    assert not policy.due(opened_at_s=0, now_s=29.9, bytes_written=10, events=1)
    assert policy.due(opened_at_s=0, now_s=30, bytes_written=10, events=1)
    assert policy.due(opened_at_s=0, now_s=1, bytes_written=1000, events=1)
    assert not policy.due(opened_at_s=0, now_s=1000, bytes_written=0, events=0)
    assert not RolloverPolicy(max_age_s=None, max_bytes=None).due(opened_at_s=0, now_s=1e9, bytes_written=1 << 40, events=5)


def files(*sizes, start_time=0):
    return [EventFileSummary(first_id=100 * i + 1, size=s, max_time_ms=start_time + i) for i, s in enumerate(sizes)]


def test_age_off_by_size_destroys_oldest_until_ninety_percent():
    # 5 x 100 bytes with a 400-byte limit: must get to <= 360, so two files go.
    assert plan_age_off(files(100, 100, 100, 100, 100), now_ms=0, max_age_ms=None, max_bytes=400) == [1, 101]
    assert plan_age_off(files(100, 100), now_ms=0, max_age_ms=None, max_bytes=400) == []


def test_age_off_by_age():
    summaries = files(1, 1, 1, start_time=1000)  # newest events at 1000, 1001, 1002
    assert plan_age_off(summaries, now_ms=2002, max_age_ms=1000, max_bytes=None) == [1, 101]
    assert plan_age_off(summaries, now_ms=1500, max_age_ms=1000, max_bytes=None) == []


def test_recovery_plan_from_names():
    plan = plan_recovery(journal_generations={100, 200}, event_files={1, 100}, tocs={1, 100, 50},
                         partial_paths=["/e/200.prov.partial"])
    assert plan.delete_partials == ["/e/200.prov.partial"]
    assert plan.redo_merges == [100, 200]
    assert plan.discard_event_files == [100]  # journals survived: that merge was interrupted
    assert plan.delete_orphan_tocs == [50, 100]
    assert files_to_reindex({1, 100, 200}, {1}) == [100, 200]
