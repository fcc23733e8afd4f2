"""Small-commits drill: every processor commits one FlowFile per session, so every
commit's provenance events wait to be registered with other commits' (the rows path
of the provenance outbox), and `custody run` is SIGKILLed at random moments while they
wait.

GenerateFlowFile makes FlowFiles one per session, UpdateAttribute stamps them one per
session, PutFile writes them one per session. Each run is killed once a random share
of the work is delivered; a last run in this process drains the flow. Then every id
is delivered exactly once, and provenance holds exactly one CREATE, one
ATTRIBUTES_MODIFIED and one SEND for each delivered FlowFile and nothing for any
other: lost, duplicated and unexpected events are counted per type.

Kills: 5 (40 with CUSTODY_LONG=1). Seed: CUSTODY_DRILL_SEED (default random, printed
on failure).
"""

from __future__ import annotations

import functools
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from cluster.drills.checker import check_delivery, check_node_repositories, ids_in_directory
from cluster.node.standalone import StandaloneNode
from cluster.services.process import wait_until
from flow.loading import load_flow
from repositories.provenance import EventType, ProvenanceRepository

from .test_standalone_cli import ROOT, read_line_containing

LONG = os.environ.get("CUSTODY_LONG") == "1"
COUNT = 6_000 if LONG else 1_500
KILLS = 40 if LONG else 5
TYPES = (EventType.CREATE, EventType.ATTRIBUTES_MODIFIED, EventType.SEND)

FLOW = {
    "name": "small-commits-drill",
    "parameters": {"out": "out", "count": str(COUNT)},
    "processors": [
        {
            "id": "generate",
            "type": "GenerateFlowFile",
            "properties": {
                "batch_size": 1,
                "max_count": "#{count}",
                "sequence_attribute": "drill.id",
                "custom_text": "${drill.id}",
            },
        },
        {"id": "stamp", "type": "UpdateAttribute", "properties": {"drill.stage": "stamped"}},
        {
            "id": "put",
            "type": "PutFile",
            "properties": {"directory": "#{out}", "batch_size": 1, "sync": False},
            "auto_terminate": ["success"],
        },
    ],
    "connections": [
        {"source": "generate", "destination": "stamp"},
        {"source": "stamp", "destination": "put"},
        {"source": "put", "relationships": ["failure"], "destination": "put"},
    ],
}


def _delivered(out: Path) -> int:
    return len([n for n in os.listdir(out) if not n.startswith(".")]) if out.is_dir() else 0


def _reached(out: Path, share: int, process: subprocess.Popen) -> bool:
    return _delivered(out) >= share or process.poll() is not None


def _events_by_flowfile(data_dir: Path) -> dict[EventType, Counter]:
    """Of each type the drill checks, how many events each FlowFile uuid has."""
    found: dict[EventType, Counter] = {kind: Counter() for kind in TYPES}
    repository = ProvenanceRepository.open(str(data_dir / "provenance"), read_only=True)
    try:
        start = 0
        while batch := repository.events(start, 50_000):
            for event in batch:
                if event.event_type in found:
                    found[event.event_type][event.flowfile_uuid] += 1
            start = batch[-1].event_id + 1
    finally:
        repository.close()
    return found


@pytest.mark.slow
def test_small_commits_keep_their_provenance_exactly_once_through_sigkills(tmp_path):
    seed = int(os.environ.get("CUSTODY_DRILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    flow_path, data_dir, log_path = tmp_path / "flow.yaml", tmp_path / "node", tmp_path / "node.log"
    out = data_dir / "out"
    flow_path.write_text(yaml.safe_dump(FLOW))
    command = [sys.executable, "-m", "cluster.cli", "run", "--flow", str(flow_path), "--data-dir", str(data_dir)]
    command += ["--param", f"out={out}", "--status-interval", "0", "--threads", "4"]
    busy = 0  # kills that found FlowFiles still to deliver
    with open(log_path, "ab") as log:
        for attempt in range(KILLS):
            # Each life delivers a random share of what is left, then is killed.
            share = _delivered(out) + rng.randrange(1, max(2, (COUNT - _delivered(out)) // (KILLS - attempt)))
            process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
            try:
                read_line_containing(process, "node running", 60)
                wait_until(functools.partial(_reached, out, share, process), 120, f"{share} files delivered")
                assert process.poll() is None, f"seed {seed}: the node exited; log:\n{log_path.read_text()[-4000:]}"
                busy += _delivered(out) < COUNT
            finally:
                process.send_signal(signal.SIGKILL)
                process.communicate(timeout=30)

    node = StandaloneNode(load_flow(str(flow_path), {"out": str(out)}), str(data_dir))
    node.start()
    try:
        drained = node.wait_until(lambda: _delivered(out) >= COUNT and node.engine.is_idle(), timeout=240)
        assert drained, f"seed {seed}: not drained: {node.status()}"
    finally:
        node.stop()

    delivery = check_delivery([str(i) for i in range(COUNT)], ids_in_directory(str(out)))
    assert delivery.ok, f"seed {seed}: {delivery.summary()}"
    uuids = {name for name in os.listdir(out) if not name.startswith(".")}
    report = check_node_repositories(str(data_dir), delivered_uuids=sorted(uuids), id_attribute="drill.id")
    assert report.ok, f"seed {seed}: {report.summary()}"
    for kind, counts in _events_by_flowfile(data_dir).items():
        lost = sorted(uuids - set(counts))
        duplicated = {uuid: n for uuid, n in counts.items() if n > 1}
        unexpected = sorted(set(counts) - uuids)
        assert not (lost or duplicated or unexpected), (
            f"seed {seed}: {kind.value}: {len(lost)} lost {lost[:5]}, {len(duplicated)} duplicated "
            f"{list(duplicated.items())[:5]}, {len(unexpected)} unexpected {unexpected[:5]}"
        )
    assert busy >= KILLS - 1, f"seed {seed}: only {busy} of {KILLS} kills found FlowFiles still to deliver"
    print(f"small-commits drill: {KILLS} kills, {COUNT} FlowFiles; {delivery.summary()}; {report.summary()}")
