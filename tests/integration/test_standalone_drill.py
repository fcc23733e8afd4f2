"""Restart drill: a standalone node killed with SIGKILL at random moments, 15 times
(200 with CUSTODY_LONG=1).

GenerateFlowFile makes 30,000 FlowFiles with unique ids (examples/drill.yaml), through
UpdateAttribute, ReplaceText and RouteOnAttribute to PutFile; the queue in front of
PutFile swaps past 2,000 FlowFiles. Every run of `custody run` is killed -9 at a random
moment (one in eight while it is still starting up and recovering). A last run drains
the flow. Then every id must be in the PutFile directory exactly once, and the WAL,
the content repository and provenance must agree (see `cluster.drills.checker`).

Kills: CUSTODY_DRILL_KILLS (default 15; 200 with CUSTODY_LONG=1). Seed:
CUSTODY_DRILL_SEED (default random, printed on failure).
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from itertools import repeat
from pathlib import Path

import pytest

from cluster.drills.checker import check_delivery, check_node_repositories, claimant_mismatches, ids_in_directory
from cluster.node.standalone import StandaloneNode
from flow.loading import load_flow
from repositories.claims import ContentClaim

ROOT = Path(__file__).resolve().parents[2]
FLOW = ROOT / "examples" / "drill.yaml"
COUNT = 30_000
KILLS = int(os.environ.get("CUSTODY_DRILL_KILLS", "200" if os.environ.get("CUSTODY_LONG") == "1" else "15"))


def _start(data_dir: Path, log_path: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "run",
            "--flow",
            str(FLOW),
            "--data-dir",
            str(data_dir),
            "--param",
            f"count={COUNT}",
            "--status-interval",
            "0",
            "--threads",
            "4",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=open(log_path, "ab"),
        text=True,
    )


def _wait_running(process: subprocess.Popen, deadline: float) -> bool:
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = process.stdout.readline()
        if not line:
            return False  # exited
        if "node running" in line:
            return True
    return False


def _delivered(data_dir: Path) -> int:
    out = data_dir / "out"
    return len([n for n in os.listdir(out) if not n.startswith(".")]) if out.is_dir() else 0


def _wait_for_kill(data_dir: Path, moment: float, share: int) -> None:
    """Return at `moment`, or sooner once `share` FlowFiles are in the PutFile directory."""
    while time.monotonic() < moment and _delivered(data_dir) < share:
        time.sleep(min(0.02, max(0.0, moment - time.monotonic())))


def _swap_files(data_dir: Path) -> int:
    directory = data_dir / "shards" / "local" / "swap"
    return len(list(directory.glob("*.swap"))) if directory.is_dir() else 0


@pytest.mark.slow
@pytest.mark.timeout(300 + 6 * KILLS)  # a run is killed within seconds of its start
def test_sigkill_restart_drill(tmp_path):
    kills = KILLS
    seed = int(os.environ.get("CUSTODY_DRILL_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    data_dir = tmp_path / "node"
    log_path = tmp_path / "node.log"
    most_swap_files = 0
    killed_while_starting = 0
    killed_while_busy = 0  # kills that hit a node with FlowFiles still in flight
    started = time.monotonic()
    for attempt in range(kills):
        process = _start(data_dir, log_path)
        try:
            if rng.random() < 0.125:
                # Kill during start-up: recovery, the forced checkpoint, orphan cleanup.
                time.sleep(rng.uniform(0.0, 0.8))
                killed_while_starting += 1
            else:
                assert _wait_running(process, time.monotonic() + 60), (
                    f"seed {seed}, attempt {attempt}: the node did not start; log:\n{log_path.read_text()[-4000:]}"
                )
                # The kill comes at a random moment within a second, or as soon as this
                # life has delivered its share of the work, whichever is first: however
                # fast the machine, the work is spread over the kills, and all but the
                # last few hit a node with FlowFiles in flight.
                _wait_for_kill(data_dir, time.monotonic() + rng.uniform(0.0, 1.0), COUNT * (attempt + 1) // kills)
            most_swap_files = max(most_swap_files, _swap_files(data_dir))
            if _delivered(data_dir) < COUNT:
                killed_while_busy += 1
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(30)
            process.stdout.close()
    drill_seconds = time.monotonic() - started

    # The last run, in-process: recover, check claimant counts, drain, stop cleanly.
    node = StandaloneNode(load_flow(str(FLOW), {"data_dir": str(data_dir), "count": str(COUNT)}), str(data_dir))
    node.start(paused=True)
    try:
        claims = [
            r.content_claim
            for r in node.shard.wal.records.values()
            if not r.queue.startswith("__") and r.content_claim is not None
        ]
        for queue in node.shard.queues.values():
            for summary in queue.swap_summaries():
                for resource, (count, end) in summary.resources.items():
                    claims.extend(repeat(ContentClaim(resource, 0, end), count))
        assert claimant_mismatches(node.content, claims) == {}
        node.resume()
        out = data_dir / "out"
        drain_started = time.monotonic()
        drained = node.wait_until(
            lambda: len(ids_in_directory(str(out))) >= COUNT and node.engine.is_idle(), timeout=240
        )
        assert drained, f"seed {seed}: not drained: {node.status()}"
        drain_seconds = time.monotonic() - drain_started
    finally:
        node.stop()

    delivery = check_delivery([str(i) for i in range(COUNT)], ids_in_directory(str(data_dir / "out")))
    assert delivery.ok, f"seed {seed}: {delivery.summary()}"
    report = check_node_repositories(
        str(data_dir),
        delivered_uuids=[n for n in os.listdir(data_dir / "out") if not n.startswith(".")],
        id_attribute="drill.id",
    )
    assert report.ok, f"seed {seed}: {report.summary()}"
    assert report.live_flowfiles == 0 and report.swapped_flowfiles == 0
    assert set(report.provenance_sent) == {str(i) for i in range(COUNT)}
    # The queue in front of PutFile was well past its threshold of 2,000 at some kill.
    assert most_swap_files >= 3, f"seed {seed}: at most {most_swap_files} swap files seen"
    assert killed_while_busy >= kills // 2, f"seed {seed}: only {killed_while_busy} kills hit a busy node"
    print(
        f"drill: {kills} kills ({killed_while_starting} during start-up, {killed_while_busy} with FlowFiles in "
        f"flight) in {drill_seconds:.0f} s, "
        f"at most {most_swap_files} swap files, drained in {drain_seconds:.0f} s; "
        f"{delivery.summary()}; {report.summary()}"
    )
