"""SIGKILL the provenance repository in a merge of sorted runs, then restart.

The child process indexes event files one by one with a fan-in of 2, so that the
second file's runs are merged with the first's, and blocks at a seam of that merge
(`RunMergeHooks`: the merged run written, or the manifest saved with it); the parent
SIGKILLs it there. After the restart every acknowledged event is found exactly once,
by its uuid, by its filename and by its component, and no run file is left that no
manifest lists.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cluster.services.process import wait_until
from repositories.provenance import ProvenanceConfig, ProvenanceQuery, ProvenanceRepository
from repositories.provenance.hooks import RunMergeHooks

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import sys, threading
    from repositories.provenance import EventType, ProvenanceConfig, ProvenanceEvent, ProvenanceRepository
    from repositories.provenance.hooks import RunMergeHooks
    from repositories.provenance.policies import RolloverPolicy

    root, seam, marker, acks = sys.argv[1:5]

    def stop_here(**where):
        open(marker, "w").close()
        threading.Event().wait()  # until the parent's SIGKILL

    config = ProvenanceConfig(containers=(root + "/c0",), journals_per_container=1,
        rollover=RolloverPolicy(max_age_s=None, max_bytes=None), rollover_check_interval_s=None,
        age_off_interval_s=None, max_age_s=None, max_bytes=None, index_heap_bytes=15_000_000,
        index_threads=1, compression_threads=1, run_fan_in=2)
    repo = ProvenanceRepository(config, run_hooks=RunMergeHooks({seam: stop_here}))
    with open(acks, "a") as ledger:
        for generation in range(3):
            events = [
                ProvenanceEvent(EventType.CREATE, f"g{generation}-{i}", "gen",
                                attributes_after={"filename": f"g{generation}-{i}.txt"})
                for i in range(50)
            ]
            ids = repo.register_events(events)
            ledger.write(f"g{generation} {ids.start} {ids.stop}\\n")
            ledger.flush()
            repo.rollover()  # the second rollover's indexing merges runs and meets the seam
    repo.wait_idle(60)
""")


def config_of(root: Path) -> ProvenanceConfig:
    return ProvenanceConfig(
        containers=(str(root / "c0"),),
        journals_per_container=1,
        rollover_check_interval_s=None,
        age_off_interval_s=None,
        max_age_s=None,
        max_bytes=None,
        index_heap_bytes=15_000_000,
        index_threads=1,
        compression_threads=1,
        run_fan_in=2,
    )


@pytest.mark.parametrize("seam", sorted(RunMergeHooks.seam_names()))
def test_sigkill_in_a_merge_of_runs_loses_and_doubles_no_hit(tmp_path, seam):
    root, marker, acks = tmp_path / "repo", tmp_path / "marker", tmp_path / "acks"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), str(root), seam, str(marker), str(acks)],
        env=dict(os.environ, PYTHONPATH=os.getcwd()),
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: marker.exists() or child.poll() is not None, timeout=60, what=f"the child at {seam}")
        assert child.poll() is None, child.stderr.read().decode()
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    acked = {}
    for line in acks.read_text().splitlines():
        name, start, stop = line.split()
        acked[name] = range(int(start), int(stop))
    assert len(acked) >= 2, "the merge runs when the second file is indexed"
    [shard_path] = (root / "c0" / "index").iterdir()
    listed = {run[1] for run in json.loads((shard_path / "shard.json").read_text())["runs"]}
    assert set(os.listdir(shard_path / "runs")) - listed, "the crash left no run that the manifest does not list"

    repo = ProvenanceRepository(config_of(root))
    try:
        repo.wait_idle(60)
        [shard] = repo.index.shards
        assert sorted(os.listdir(shard.runs_path)) == sorted(run.name for run in shard.manifest.runs)
        every = repo.query(ProvenanceQuery(component_id="gen", limit=10**6))
        assert sorted(e.event_id for e in every.events) == sorted(i for r in acked.values() for i in r)
        for name, ids in acked.items():
            for offset, event_id in enumerate(ids):
                by_uuid = repo.query(ProvenanceQuery(flowfile_uuid=f"{name}-{offset}")).events
                by_filename = repo.query(ProvenanceQuery(filename=f"{name}-{offset}.txt")).events
                assert [e.event_id for e in by_uuid] == [e.event_id for e in by_filename] == [event_id]
    finally:
        repo.close()
