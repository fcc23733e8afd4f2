"""Crashes during rollover, merge and indexing, scripted one by one.

The first test is the case of two crashes in a row: indexing of event file F (ids 1-5)
crashes after its index commit while G (ids 6-10) is still in the journals; the first
recovery crashes again while indexing F. The second recovery must still find G's
events: it may forget F's unclaimed documents, never G's claimed ones. The others:
a crash between the deletes of a merged generation's journals, a failed rollover, and
a crash inside recovery itself. `test_crash_pairs` crashes every pair of seams.
"""

from __future__ import annotations

import os
import threading

import pytest

from repositories.provenance import ProvenanceError, ProvenanceRepository
from repositories.provenance import hooks as seams

from .conftest import make_config
from .crashes import Crash, Ledger, SimulatedCrash, check_every_event_once, recovered

WAIT_S = 30.0


def crash_indexing_f_with_g_in_the_journals(config, clock, ledger: Ledger, *, after: int = 0) -> SimulatedCrash:
    """Crash 1: indexing F (5 events) stops between its index commit and its manifest,
    while G (5 events) is still in the journals; first, `after` events (E) are merged
    and indexed cleanly."""
    go = threading.Event()
    crash = SimulatedCrash(seams.INDEX_BEFORE_MANIFEST, armed=False)
    repo = ProvenanceRepository(config, clock=clock, hooks=crash.hooks())
    try:
        if after:
            ledger.register(repo, after, "e")
            repo.sync(WAIT_S)
        crash.arm(hold=go)
        ledger.register(repo, 5, "f")
        repo.rollover()
        ledger.register(repo, 5, "g")
        go.set()
        with pytest.raises(ProvenanceError):
            repo.wait_idle(WAIT_S)
    finally:
        go.set()
        repo.close()
    return crash


def test_a_crash_while_reindexing_keeps_the_documents_of_files_indexed_before_it(tmp_path, clock):
    config = make_config(tmp_path)
    ledger = Ledger(start_ms=int(clock() * 1000))
    first = crash_indexing_f_with_g_in_the_journals(config, clock, ledger)
    assert first.crashed == (seams.INDEX_BEFORE_MANIFEST, {"first_id": 1})
    assert (ledger.acknowledged["f-0"], ledger.acknowledged["g-4"]) == (1, 10)

    # Recovery 1 merges G and indexes F and G again; crash 2 hits while indexing F.
    second = SimulatedCrash(seams.INDEX_BEFORE_MANIFEST, where={"first_id": 1})
    repo = ProvenanceRepository(config, clock=clock, hooks=second.hooks())
    with pytest.raises(ProvenanceError):
        repo.wait_idle(WAIT_S)
    assert second.crashed == (seams.INDEX_BEFORE_MANIFEST, {"first_id": 1})
    repo.close()

    # Recovery 2: every event of F and G is found once.
    with recovered(config, clock) as repo:
        check_every_event_once(repo, ledger)


def test_a_crash_between_journal_deletes_loses_no_event(tmp_path, clock):
    config = make_config(tmp_path)  # two containers of two journals
    ledger = Ledger(start_ms=int(clock() * 1000))
    crash = SimulatedCrash(seams.MERGE_JOURNAL_DELETED)
    repo = ProvenanceRepository(config, clock=clock, hooks=crash.hooks())
    for slot in range(4):  # one batch to each journal, round-robin
        ledger.register(repo, 2, f"slot{slot}")
    repo.rollover()
    with pytest.raises(ProvenanceError):
        repo.wait_idle(WAIT_S)
    repo.close()
    assert crash.crashed is not None and crash.crashed[0] == seams.MERGE_JOURNAL_DELETED
    left = [n for c in ("c0", "c1") for n in os.listdir(tmp_path / c / "journals")]
    assert len(left) == 3, left  # the event file is committed, one journal is gone

    with recovered(config, clock) as repo:
        check_every_event_once(repo, ledger)
        assert repo.recovery_report["deleted_merged_journals"] == [1]
        assert repo.recovery_report["redone_merges"] == []
        assert not [
            n for c in ("c0", "c1") for n in os.listdir(tmp_path / c / "journals") if "00000000000000000001" in n
        ]


def test_a_failed_rollover_stops_the_repository_and_a_restart_merges_its_generation(tmp_path, clock):
    config = make_config(tmp_path)
    ledger = Ledger(start_ms=int(clock() * 1000))
    crash = SimulatedCrash(seams.ROLLOVER_BEFORE_MERGE_QUEUE)
    repo = ProvenanceRepository(config, clock=clock, hooks=crash.hooks())
    ledger.register(repo, 5, "rolled")
    with pytest.raises(Crash):
        repo.rollover()
    # Nobody would merge the rolled-over generation: writers are told to restart.
    with pytest.raises(ProvenanceError, match="restart"):
        ledger.register(repo, 1, "refused")
    repo.close()

    with recovered(config, clock) as repo:
        assert repo.recovery_report["redone_merges"] == [1]
        check_every_event_once(repo, ledger)


def test_a_crash_in_recovery_lets_the_repository_open_again_in_the_same_process(tmp_path, clock):
    config = make_config(tmp_path)
    ledger = Ledger(start_ms=int(clock() * 1000))
    # E is indexed (its shard has a manifest); crash 1 leaves F's documents unclaimed
    # in that shard, with G in the journals.
    first = crash_indexing_f_with_g_in_the_journals(config, clock, ledger, after=5)
    assert first.crashed == (seams.INDEX_BEFORE_MANIFEST, {"first_id": 6})
    # Crash 2 in the constructor: recovery forgot F's documents (so it opened the
    # shard's writer) and crashes merging G. The traceback keeps that repository alive.
    with pytest.raises(Crash) as crash_in_recovery:
        ProvenanceRepository(config, clock=clock, hooks=SimulatedCrash(seams.MERGE_BEFORE_COMMIT).hooks())
    assert "merge_before_commit" in str(crash_in_recovery.value)
    with recovered(config, clock) as repo:
        check_every_event_once(repo, ledger)
