"""SIGKILL the provenance repository during a merge (and while writing), then restart.

The child process registers events, acknowledging each batch in a side file only
after `register_events` returned; the parent kills it with SIGKILL at a named fault
seam (or mid-ingest) and reopens the repository: every acknowledged event must be
there exactly once, ids unique, and every event searchable exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest

from repositories.provenance import ProvenanceConfig, ProvenanceQuery, ProvenanceRepository
from repositories.provenance import hooks as seams
from repositories.provenance.policies import RolloverPolicy

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import os, sys, threading
    from collections import Counter
    from repositories.provenance import (
        EventType,
        ProvenanceConfig,
        ProvenanceEvent,
        ProvenanceHooks,
        ProvenanceRepository,
    )
    from repositories.provenance.policies import RolloverPolicy

    root, seam, marker, acks = sys.argv[1:5]
    # Optional: stop at this call of the seam, counted once armed; and which life:
    # "first" (armed at once), "tail" (armed after the first generation is merged and
    # indexed; events registered after the last rollover stay in the journals), or
    # "second" (recovery, then more events and a rollover).
    occurrence = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    life = sys.argv[6] if len(sys.argv) > 6 else "first"
    block = threading.Event()
    armed = threading.Event()
    calls = Counter()
    calls_lock = threading.Lock()

    def stop_here(**context):
        with calls_lock:
            if not armed.is_set():
                return
            calls[seam] += 1
            if calls[seam] != occurrence:
                return
        with open(marker, "w") as f:
            f.write(repr(context))
        block.wait()  # until SIGKILL

    handlers = {seam: stop_here} if seam != "none" else {}
    config = ProvenanceConfig(containers=(root + "/c0", root + "/c1"), journals_per_container=2,
                              rollover=RolloverPolicy(max_age_s=None, max_bytes=None),
                              rollover_check_interval_s=None, age_off_interval_s=None,
                              index_heap_bytes=15_000_000, index_threads=1, compression_threads=1)
    if life != "tail":
        armed.set()
    repo = ProvenanceRepository(config, hooks=ProvenanceHooks(handlers))
    ack = open(acks, "a", buffering=1)
    generation = 0

    def register(name, count=5):
        ids = repo.register_events([ProvenanceEvent(EventType.CREATE, f"{name}-{i}", "gen") for i in range(count)])
        ack.write(f"{name} {ids.start} {ids.stop}\\n")

    if life == "second":
        for seq in range(10):
            register(f"second-{seq}")
        repo.rollover()
        threading.Event().wait()

    def writer(name):
        for seq in range(10**9):
            batch = [ProvenanceEvent(EventType.CREATE, f"{name}-{seq}-{i}", "gen") for i in range(5)]
            ids = repo.register_events(batch)
            ack.write(f"{name}-{seq} {ids.start} {ids.stop}\\n")
            if seam != "none" and seq == 40 and name == "w0":
                return

    threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(3)]
    if seam == "none":
        for t in threads:
            t.start()
        threading.Event().wait()
    for t in threads[:1]:
        t.start()
        t.join()
    repo.sync(60)  # first generation merged and indexed ("first": the seam may stop it)
    armed.set()
    for seq in range(30):
        register(f"late-{seq}")
    repo.rollover()  # this merge (or its indexing) meets the seam
    if life == "tail":
        for seq in range(10):
            register(f"tail-{seq}")
        open(marker + ".registered", "w").close()
    threading.Event().wait()
""")


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def run_child(tmp_path, seam, *, occurrence=1, life="first"):
    """Run one life of the child until it stops at the seam, SIGKILL it; returns what
    every life so far acknowledged."""
    marker = tmp_path / f"marker-{life}"
    acks = tmp_path / "acks"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    child = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "repo"), seam, str(marker), str(acks), str(occurrence), life],
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        if seam == "none":
            wait_for(lambda: acks.exists() and acks.read_text().count("\n") >= 200, 60, "ingest")
        else:
            wait_for(lambda: marker.exists() or child.poll() is not None, 60, f"seam {seam}")
            if life == "tail" and seam != seams.ROLLOVER_BEFORE_MERGE_QUEUE:
                registered = tmp_path / f"marker-{life}.registered"
                wait_for(lambda: registered.exists() or child.poll() is not None, 60, "the tail's events")
            assert child.poll() is None, child.stderr.read().decode()
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    acked = {}
    for line in acks.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:  # a torn last line is an unacknowledged batch
            acked[parts[0]] = range(int(parts[1]), int(parts[2]))
    return acked


def restart_and_check(tmp_path, acked, *, recovered: bool, by_uuid: bool = False) -> None:
    """Reopen after the last SIGKILL: every acknowledged event is there exactly once,
    ids unique, and every event searchable exactly once (with `by_uuid`, also by a
    query for its uuid)."""
    root = tmp_path / "repo"
    config = ProvenanceConfig(
        containers=(str(root / "c0"), str(root / "c1")),
        journals_per_container=2,
        rollover=RolloverPolicy(max_age_s=None, max_bytes=None),
        rollover_check_interval_s=None,
        age_off_interval_s=None,
        index_heap_bytes=15_000_000,
        index_threads=1,
        compression_threads=1,
    )
    repo = ProvenanceRepository(config)
    try:
        repo.wait_idle(60)
        stored = repo.events(0, 10**7)
        ids = [e.event_id for e in stored]
        assert len(ids) == len(set(ids)) and ids == sorted(ids)
        by_uuid = Counter(e.flowfile_uuid for e in stored)
        assert max(by_uuid.values()) == 1, "an event was duplicated"
        for name, id_range in acked.items():
            for offset, event_id in enumerate(id_range):
                event = repo.get(event_id)
                assert event.flowfile_uuid == f"{name}-{offset}", (name, event_id)
        # Everything is searchable exactly once.
        gen = repo.query(ProvenanceQuery(component_id="gen", limit=10**6)).events
        assert sorted(e.event_id for e in gen) == ids
        for name, id_range in acked.items() if by_uuid else ():
            for offset, event_id in enumerate(id_range):
                hits = repo.query(ProvenanceQuery(flowfile_uuid=f"{name}-{offset}")).events
                assert [e.event_id for e in hits] == [event_id], (name, offset, event_id)
        # New ids are above every stored one.
        fresh = repo.register_events(stored[:1])
        assert fresh.start > max(ids)
        report = json.dumps(repo.recovery_report)
        if recovered:
            assert repo.recovery_report["reindexed_files"], report
    finally:
        repo.close()


@pytest.mark.parametrize(
    "seam",
    [
        seams.MERGE_JOURNALS_READ,
        seams.MERGE_BEFORE_COMMIT,
        seams.MERGE_BEFORE_JOURNAL_DELETE,
        seams.INDEX_BEFORE_MANIFEST,
        "none",
    ],
)
def test_sigkill_then_restart_loses_and_duplicates_nothing(tmp_path, seam):
    acked = run_child(tmp_path, seam)
    assert acked
    restart_and_check(tmp_path, acked, recovered=seam != "none")


# (first seam, second seam, the call of the second seam in the second life)
SIGKILL_PAIRS = [
    # Killed while indexing L with the tail in the journals, then while re-indexing:
    # the next recovery must not delete the documents of the file indexed in between.
    (seams.INDEX_BEFORE_MANIFEST, seams.INDEX_BEFORE_MANIFEST, 2),
    (seams.INDEX_BEFORE_COMMIT, seams.INDEX_BEFORE_COMMIT, 2),
    # Killed between journal deletes (first or second life): the committed event file
    # holds the events of the journals already gone.
    (seams.MERGE_JOURNAL_DELETED, seams.MERGE_BEFORE_COMMIT, 1),
    (seams.ROLLOVER_BEFORE_MERGE_QUEUE, seams.MERGE_JOURNAL_DELETED, 1),
]


@pytest.mark.parametrize(("first_seam", "second_seam", "second_at"), SIGKILL_PAIRS)
def test_sigkill_twice_then_restart_loses_and_duplicates_nothing(tmp_path, first_seam, second_seam, second_at):
    """SIGKILL at the first seam while the tail's events are in the journals; restart,
    SIGKILL again at the second seam during recovery or after it; restart: every
    acknowledged event is found once, also by its uuid."""
    run_child(tmp_path, first_seam, life="tail")
    acked = run_child(tmp_path, second_seam, occurrence=second_at, life="second")
    assert any(name.startswith("late-") for name in acked)
    restart_and_check(tmp_path, acked, recovered=True, by_uuid=True)
