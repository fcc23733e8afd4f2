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
from .crashes import Crash, Ledger, SimulatedCrash, check_every_event_once

WAIT_S = 30.0


def test_a_crash_while_reindexing_keeps_the_documents_of_files_indexed_before_it(tmp_path, clock):
    config = make_config(tmp_path)
    ledger = Ledger(start_ms=int(clock() * 1000))

    # Crash 1: indexing F stops between its index commit and its manifest, while G is
    # still in the journals.
    go = threading.Event()
    first = SimulatedCrash(seams.INDEX_BEFORE_MANIFEST)
    first.arm(hold=go)
    repo = ProvenanceRepository(config, clock=clock, hooks=first.hooks())
    assert ledger.register(repo, 5, "f") == range(1, 6)
    repo.rollover()
    assert ledger.register(repo, 5, "g") == range(6, 11)
    go.set()
    with pytest.raises(ProvenanceError):
        repo.wait_idle(WAIT_S)
    assert first.crashed == (seams.INDEX_BEFORE_MANIFEST, {"first_id": 1})
    repo.close()

    # Recovery 1 merges G and indexes F and G again; crash 2 hits while indexing F.
    second = SimulatedCrash(seams.INDEX_BEFORE_MANIFEST, where={"first_id": 1})
    repo = ProvenanceRepository(config, clock=clock, hooks=second.hooks())
    with pytest.raises(ProvenanceError):
        repo.wait_idle(WAIT_S)
    assert second.crashed == (seams.INDEX_BEFORE_MANIFEST, {"first_id": 1})
    repo.close()

    # Recovery 2: every event of F and G is found once.
    repo = ProvenanceRepository(config, clock=clock)
    try:
        repo.wait_idle(WAIT_S)
        check_every_event_once(repo, ledger)
    finally:
        repo.close()


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

    repo = ProvenanceRepository(config, clock=clock)
    try:
        repo.wait_idle(WAIT_S)
        check_every_event_once(repo, ledger)
        assert repo.recovery_report["deleted_merged_journals"] == [1]
        assert repo.recovery_report["redone_merges"] == []
        assert not [n for c in ("c0", "c1") for n in os.listdir(tmp_path / c / "journals") if "00000000000000000001" in n]
    finally:
        repo.close()


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

    repo = ProvenanceRepository(config, clock=clock)
    try:
        repo.wait_idle(WAIT_S)
        assert repo.recovery_report["redone_merges"] == [1]
        check_every_event_once(repo, ledger)
    finally:
        repo.close()


def test_a_crash_in_recovery_lets_the_repository_open_again_in_the_same_process(tmp_path, clock):
    config = make_config(tmp_path)
    ledger = Ledger(start_ms=int(clock() * 1000))
    # E is indexed (its shard has a manifest); crash 1 leaves F's documents unclaimed
    # in that shard, with G in the journals.
    go = threading.Event()
    first = SimulatedCrash(seams.INDEX_BEFORE_MANIFEST, armed=False)
    repo = ProvenanceRepository(config, clock=clock, hooks=first.hooks())
    ledger.register(repo, 5, "e")
    repo.sync(WAIT_S)
    first.arm(hold=go)
    ledger.register(repo, 5, "f")
    repo.rollover()
    ledger.register(repo, 5, "g")
    go.set()
    with pytest.raises(ProvenanceError):
        repo.wait_idle(WAIT_S)
    repo.close()
    # Crash 2 in the constructor: recovery forgot F's documents (so it opened the
    # shard's writer) and crashes merging G. The traceback keeps that repository alive.
    with pytest.raises(Crash) as crash_in_recovery:
        ProvenanceRepository(config, clock=clock, hooks=SimulatedCrash(seams.MERGE_BEFORE_COMMIT).hooks())
    assert "merge_before_commit" in str(crash_in_recovery.value)
    repo = ProvenanceRepository(config, clock=clock)
    try:
        repo.wait_idle(WAIT_S)
        check_every_event_once(repo, ledger)
    finally:
        repo.close()
