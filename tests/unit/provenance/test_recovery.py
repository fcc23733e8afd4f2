import os

import pytest

from repositories.provenance import EventBatch, ProvenanceHooks, ProvenanceQuery, ProvenanceRepository
from repositories.provenance import hooks as seams
from repositories.provenance.journal import JournalWriter
from repositories.provenance.journal_format import journal_name

from .conftest import event, make_config


class Crash(Exception):
    pass


def crash_at(seam):
    def handler(**_):
        raise Crash(seam)

    return ProvenanceHooks({seam: handler})


def reopen(tmp_path, clock):
    return ProvenanceRepository(make_config(tmp_path), clock=clock)


def all_ids(repo):
    return [e.event_id for e in repo.events(0, 10_000)]


def names(tmp_path, sub):
    return sorted(n for c in ("c0", "c1") for n in os.listdir(tmp_path / c / sub))


@pytest.mark.parametrize(
    "seam",
    [
        seams.MERGE_JOURNALS_READ,
        seams.MERGE_BEFORE_COMMIT,
        seams.MERGE_BEFORE_JOURNAL_DELETE,
        seams.INDEX_BEFORE_MANIFEST,
    ],
)
def test_interrupted_merge_or_index_is_redone_without_loss_or_duplicates(tmp_path, clock, seam):
    repo = ProvenanceRepository(make_config(tmp_path), clock=clock)
    repo.register_events([event("CREATE", "kept") for _ in range(10)])
    repo.sync()
    failing = repo
    # Second generation: the crash hits its merge or indexing.
    failing._hooks = crash_at(seam)
    failing.register_events([event("CREATE", "kept") for _ in range(7)])
    with pytest.raises(Exception):  # noqa: B017 - whatever the crash seam raised
        failing.sync(timeout=30)
    failing.close()
    if seam == seams.MERGE_BEFORE_COMMIT:
        assert any(n.endswith(".partial") for n in names(tmp_path, "events"))

    repo = reopen(tmp_path, clock)
    try:
        repo.wait_idle(30)
        assert not any(n.endswith(".partial") for n in names(tmp_path, "events"))
        assert names(tmp_path, "journals") == [n for n in names(tmp_path, "journals") if "00000000000000000018" in n]
        assert all_ids(repo) == list(range(1, 18))
        hits = [e.event_id for e in repo.query(ProvenanceQuery(flowfile_uuid="kept", limit=100)).events]
        assert hits == list(range(17, 0, -1))  # each event indexed exactly once
        assert repo.register_events([event()]) == range(18, 19)
    finally:
        repo.close()


def test_leftover_journals_are_merged_torn_tail_cut_and_ids_resume_above(tmp_path, clock):
    config = make_config(tmp_path)
    for c in config.containers:
        os.makedirs(os.path.join(c, "journals"))
    first = EventBatch.from_events([event() for _ in range(5)], now_ms=1)
    second = EventBatch.from_events([event() for _ in range(3)], now_ms=1)
    path0 = os.path.join(config.containers[0], "journals", journal_name(40, 0))
    path1 = os.path.join(config.containers[1], "journals", journal_name(40, 1))
    w0, w1 = JournalWriter(path0, 40, 0), JournalWriter(path1, 40, 1)
    w0.append(first.with_ids(40))
    w1.append(second.with_ids(45))
    w1.append(second.with_ids(48))
    w0.close()
    w1.close()
    with open(path1, "r+b") as f:  # the last frame was torn by the crash
        f.truncate(os.path.getsize(path1) - 10)
    repo = ProvenanceRepository(config, clock=clock)
    try:
        repo.wait_idle(30)
        assert all_ids(repo) == list(range(40, 48))
        assert repo.recovery_report["redone_merges"] == [40]
        assert repo.next_event_id == 48
        assert repo.register_events([event()]) == range(48, 49)
        assert os.path.basename(repo.event_files()[0].path).startswith(f"{40:020d}")
    finally:
        repo.close()


def test_id_generator_resumes_above_event_files(tmp_path, clock):
    repo = ProvenanceRepository(make_config(tmp_path), clock=clock)
    repo.register_events([event() for _ in range(12)])
    repo.close()
    repo = reopen(tmp_path, clock)
    try:
        assert repo.register_events([event()]) == range(13, 14)
    finally:
        repo.close()


def test_ids_a_crash_skipped_leave_later_events_reachable_and_ids_unique(tmp_path, clock):
    # Ids 45..47 went to a batch the crash kept from its journal: 48..50 were
    # acknowledged and must still be found, and new ids must start above them.
    config = make_config(tmp_path)
    for c in config.containers:
        os.makedirs(os.path.join(c, "journals"))
    batch = EventBatch.from_events([event() for _ in range(5)], now_ms=1)
    late = EventBatch.from_events([event() for _ in range(3)], now_ms=1)
    w0 = JournalWriter(os.path.join(config.containers[0], "journals", journal_name(40, 0)), 40, 0)
    w0.append(batch.with_ids(40))
    w0.append(late.with_ids(48))
    w0.close()
    repo = ProvenanceRepository(config, clock=clock)
    try:
        repo.wait_idle(30)
        assert all_ids(repo) == [40, 41, 42, 43, 44, 48, 49, 50]
        assert repo.get(50).event_id == 50
        assert repo.next_event_id == 51
    finally:
        repo.close()
    repo = reopen(tmp_path, clock)
    try:
        assert repo.get(49).event_id == 49
        assert repo.register_events([event()]) == range(51, 52)
        with pytest.raises(Exception):  # noqa: B017 - only that the lookup fails
            repo.get(46)
    finally:
        repo.close()
