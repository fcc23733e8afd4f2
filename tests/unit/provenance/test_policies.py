from repositories.provenance.policies import (
    EventFileSummary,
    RolloverPolicy,
    files_to_reindex,
    plan_age_off,
    plan_recovery,
    unclaimed_id_ranges,
)


def test_rollover_by_time_by_size_never_empty():
    policy = RolloverPolicy(max_age_s=30, max_bytes=1000)
    assert not policy.due(opened_at_s=0, now_s=29.9, bytes_written=10, events=1)
    assert policy.due(opened_at_s=0, now_s=30, bytes_written=10, events=1)
    assert policy.due(opened_at_s=0, now_s=1, bytes_written=1000, events=1)
    assert not policy.due(opened_at_s=0, now_s=1000, bytes_written=0, events=0)
    assert not RolloverPolicy(max_age_s=None, max_bytes=None).due(
        opened_at_s=0, now_s=1e9, bytes_written=1 << 40, events=5
    )


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
    plan = plan_recovery(
        journal_generations={100, 200},
        event_files={1, 100},
        indexed_files={1},
        tocs={1, 100, 50},
        partial_paths=["/e/200.prov.partial"],
    )
    assert plan.delete_partials == ["/e/200.prov.partial"]
    assert plan.redo_merges == [200]
    # 100's event file is committed: it holds every event of the journals left beside it.
    assert plan.delete_merged_journals == [100]
    assert plan.delete_orphan_tocs == [50]
    assert plan.index_order == [100, 200]
    assert files_to_reindex({1, 100, 200}, {1}) == [100, 200]


def test_recovery_indexes_merged_again_and_unclaimed_files_as_one_increasing_sequence():
    # F (1) committed, its indexing interrupted; G (6) still in journals; H (11)
    # committed and claimed; K (16) committed, journals partly deleted, not claimed.
    plan = plan_recovery(
        journal_generations={6, 16}, event_files={1, 11, 16}, indexed_files={11}, tocs={1, 11, 16}, partial_paths=[]
    )
    assert plan.redo_merges == [6]
    assert plan.delete_merged_journals == [16]
    assert plan.index_order == [1, 6, 16]
    assert plan.delete_orphan_tocs == []


def test_unclaimed_id_ranges_are_the_gaps_and_the_tail():
    assert unclaimed_id_ranges([]) == [(0, None)]
    assert unclaimed_id_ranges([(1, 5), (6, 10)]) == [(0, 0), (11, None)]
    assert unclaimed_id_ranges([(6, 10), (1, 5)]) == [(0, 0), (11, None)]  # any order
    assert unclaimed_id_ranges([(1, 5), (9, 12)]) == [(0, 0), (6, 8), (13, None)]
    assert unclaimed_id_ranges([(0, 4)]) == [(5, None)]
