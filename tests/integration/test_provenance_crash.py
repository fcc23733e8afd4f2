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

from repositories.provenance import ProvenanceConfig, ProvenanceQuery, ProvenanceRepository, hooks as seams
from repositories.provenance.policies import RolloverPolicy

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import os, sys, threading
    from repositories.provenance import EventType, ProvenanceConfig, ProvenanceEvent, ProvenanceHooks, ProvenanceRepository
    from repositories.provenance.policies import RolloverPolicy

    root, seam, marker, acks = sys.argv[1:5]
    block = threading.Event()

    def stop_here(**context):
        with open(marker, "w") as f:
            f.write(repr(context))
        block.wait()  # until SIGKILL

    handlers = {seam: stop_here} if seam != "none" else {}
    config = ProvenanceConfig(containers=(root + "/c0", root + "/c1"), journals_per_container=2,
                              rollover=RolloverPolicy(max_age_s=None, max_bytes=None),
                              rollover_check_interval_s=None, age_off_interval_s=None,
                              index_heap_bytes=15_000_000, index_threads=1, compression_threads=1)
    repo = ProvenanceRepository(config, hooks=ProvenanceHooks(handlers))
    ack = open(acks, "a", buffering=1)
    generation = 0

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
    repo.sync(60)  # first generation merged and indexed cleanly
    for seq in range(30):
        ids = repo.register_events([ProvenanceEvent(EventType.CREATE, f"late-{seq}-{i}", "gen") for i in range(5)])
        ack.write(f"late-{seq} {ids.start} {ids.stop}\\n")
    repo.rollover()  # this merge (or its indexing) meets the seam
    threading.Event().wait()
""")


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def run_child(tmp_path, seam):
    marker = tmp_path / "marker"
    acks = tmp_path / "acks"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path / "repo"), seam, str(marker), str(acks)],
                             env=env, stderr=subprocess.PIPE)
    try:
        if seam == "none":
            wait_for(lambda: acks.exists() and acks.read_text().count("\n") >= 200, 60, "ingest")
        else:
            wait_for(lambda: marker.exists() or child.poll() is not None, 60, f"seam {seam}")
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


@pytest.mark.parametrize("seam", [seams.MERGE_JOURNALS_READ, seams.MERGE_BEFORE_COMMIT,
                                  seams.MERGE_BEFORE_JOURNAL_DELETE, seams.INDEX_BEFORE_MANIFEST, "none"])
def test_sigkill_then_restart_loses_and_duplicates_nothing(tmp_path, seam):
    acked = run_child(tmp_path, seam)
    assert acked
    root = tmp_path / "repo"
    config = ProvenanceConfig(containers=(str(root / "c0"), str(root / "c1")), journals_per_container=2,
                              rollover=RolloverPolicy(max_age_s=None, max_bytes=None),
                              rollover_check_interval_s=None, age_off_interval_s=None,
                              index_heap_bytes=15_000_000, index_threads=1, compression_threads=1)
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
        # New ids are above every stored one.
        fresh = repo.register_events(stored[:1])
        assert fresh.start > max(ids)
        report = json.dumps(repo.recovery_report)
        if seam != "none":
            assert repo.recovery_report["reindexed_files"], report
    finally:
        repo.close()
