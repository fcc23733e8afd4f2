"""The damage matrix: every file kind a stopped node keeps, each deleted, cut short and
bit-flipped, and the node started on it.

A real `custody` node process takes 600 files with GetFile while its PutFile is
stopped: the first half, then a clean stop (a checkpoint: the snapshot holds them),
then the second half, and it is SIGKILLed with all 600 queued, most of them swapped
out, the newest in the WAL's journals. Each case copies that directory, damages one
file (a WAL journal, the WAL snapshot, a swap file, a content file, a content checksum
file) in one way, and starts a node on the copy with PutFile running.

The node either refuses to start, with one clear message and nothing in its directory
changed, or it starts and accounts for every FlowFile that was acknowledged: each is
delivered exactly once, or waits in PutFile's failure queue with `content.error`, or is
held in a swap file an alarm names; no id is lost, none is duplicated, none unexpected
(`cluster.drills.checker`). And no queue stops behind the damaged item: the deadline
below is reached only when everything else has moved.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.drills.checker import check_delivery
from cluster.node.standalone import NodeError, NodeSettings, StandaloneNode
from flow.loading import parse_flow
from repositories.content.format import CHECKSUM_SUFFIX
from tests.inbox import drop_all

from .custody_run import terminate
from .test_standalone_cli import ROOT, read_line_containing

COUNT = 600
DEADLINE_S = 60.0
KINDS = ("journal", "snapshot", "swap file", "content file", "checksum file")
DAMAGES = ("delete", "truncate", "flip")
# What a start on each damage must do: refuse it, or start and account for every FlowFile.
REFUSED = {("journal", damage) for damage in DAMAGES} | {("snapshot", damage) for damage in DAMAGES}


def flow_document(inbox, out) -> dict:
    return {
        "name": "damage-matrix",
        "processors": [
            {
                "id": "get",
                "type": "GetFile",
                "properties": {"input_directory": str(inbox), "batch_size": 50},
                "scheduling": {"yield_duration": "20 ms"},
            },
            {
                "id": "put",
                "type": "PutFile",
                "properties": {"directory": str(out), "sync": False},
                "scheduling": {"yield_duration": "50 ms"},
                "auto_terminate": ["success"],
            },
            # Holds what PutFile routes to failure: stopped, so its FlowFiles wait in its queue.
            {"id": "hold", "type": "LogAttribute", "auto_terminate": ["success"]},
        ],
        "connections": [
            {"id": "queued", "source": "get", "destination": "put", "swap_threshold": 100, "swap_batch": 50},
            {"id": "failed", "source": "put", "relationships": ["failure"], "destination": "hold"},
        ],
    }


# The build, run as a node process of its own so that the test can SIGKILL it.
BUILD = (
    """
import json, os, sys, time
from cluster.node.standalone import NodeSettings, StandaloneNode
from flow.loading import parse_flow
document, data_dir, inbox, later, half = json.loads(sys.argv[1])

def run_until(count):
    node = StandaloneNode(parse_flow(document), data_dir, NodeSettings(threads=2))
    node.start(paused=True)
    node.engine.stop_processor("put")
    node.engine.stop_processor("hold")
    node.resume()
    deadline = time.monotonic() + 60
    while not (node.graph.queues["queued"].count == count and not os.listdir(inbox)):
        assert time.monotonic() < deadline, node.status()
        time.sleep(0.02)
    return node

run_until(half).stop()  # a clean stop: its checkpoint puts the first half in the snapshot
for name in sorted(os.listdir(later)):
    os.rename(os.path.join(later, name), os.path.join(inbox, name))
node = run_until(%d)
print("ready", flush=True)
time.sleep(600)
"""  # noqa: UP031 - a program's text: an f-string would double its braces
    % COUNT
)


@pytest.fixture(scope="module")
def stopped_node(tmp_path_factory):
    """(data directory, inbox, ids): a node SIGKILLed with COUNT FlowFiles queued."""
    root = tmp_path_factory.mktemp("matrix")
    data_dir, inbox, later, out = root / "node", root / "inbox", root / "later", root / "unused-out"
    inbox.mkdir()
    later.mkdir()
    ids = [f"file-{index:04d}" for index in range(COUNT)]
    drop_all(inbox, {identifier: identifier for identifier in ids[: COUNT // 2]})
    drop_all(later, {identifier: identifier for identifier in ids[COUNT // 2 :]})
    arguments = json.dumps([flow_document(inbox, out), str(data_dir), str(inbox), str(later), COUNT // 2])
    process = subprocess.Popen([sys.executable, "-c", BUILD, arguments], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        read_line_containing(process, "ready", 120)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert os.listdir(data_dir / "shards" / "local" / "swap"), "the queue swapped"
    return data_dir, inbox, ids


def target_file(data_dir: Path, kind: str) -> Path:
    shard = data_dir / "shards" / "local"
    if kind == "journal":  # the one holding the most transactions
        return max((shard / "wal").glob("journal-*"), key=lambda path: path.stat().st_size)
    if kind == "snapshot":
        return shard / "wal" / "snapshot"
    if kind == "swap file":
        return sorted((shard / "swap").iterdir())[0]
    files = sorted(path for path in (data_dir / "content").rglob("*") if path.is_file() and "archive" not in path.parts)
    checksums = [path for path in files if path.name.endswith(CHECKSUM_SUFFIX)]
    if kind == "checksum file":
        return checksums[0]
    return Path(str(checksums[0])[: -len(CHECKSUM_SUFFIX)])


def damage(path: Path, how: str) -> None:
    if how == "delete":
        path.unlink()
    elif how == "truncate":
        os.truncate(path, path.stat().st_size // 2)
    else:
        with open(path, "r+b") as handle:
            handle.seek(path.stat().st_size // 2)
            byte = handle.read(1)
            handle.seek(-1, os.SEEK_CUR)
            handle.write(bytes([byte[0] ^ 0x04]))


def fingerprint(directory: Path) -> dict:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != "node.lock"
    }


def delivered(out: Path) -> list[str]:
    return [path.read_text() for path in out.iterdir() if not path.name.startswith(".")] if out.is_dir() else []


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_node_started_on_damaged_files_refuses_or_accounts_for_every_flowfile(stopped_node, tmp_path, kind, how):
    source, inbox, ids = stopped_node
    data_dir, out = tmp_path / "node", tmp_path / "out"
    shutil.copytree(source, data_dir)
    damage(target_file(data_dir, kind), how)
    before = fingerprint(data_dir)
    definition = parse_flow(flow_document(inbox, out))
    node = StandaloneNode(definition, str(data_dir), NodeSettings(threads=2))
    try:
        node.start(paused=True)
    except NodeError as error:
        assert (kind, how) in REFUSED, f"refused {kind} {how}: {error}"
        assert "\n" not in str(error) and str(data_dir) in str(error), str(error)
        assert fingerprint(data_dir) == before, "a refused start changed the data directory"
        return
    assert (kind, how) not in REFUSED, f"started on a {kind} {how}: {node.recovery}"
    try:
        node.engine.stop_processor("hold")
        node.resume()
        control = node.control()

        def accounted() -> int:
            held = sum(alarm["flowfiles"] for alarm in control.alarms())
            return len(delivered(out)) + node.graph.queues["failed"].count + held

        assert node.wait_until(lambda: accounted() == COUNT, DEADLINE_S), (accounted(), node.status(), control.alarms())
        failed = [entry[2] for entry in node.graph.queues["failed"].snapshot().entries]
        alarms = control.alarms()
    finally:
        node.stop()
    sent = delivered(out) + [flowfile.attributes["filename"] for flowfile in failed]
    report = check_delivery(ids, sent)
    assert (report.duplicated, report.unexpected) == ({}, []), report
    assert len(report.lost) == sum(alarm["flowfiles"] for alarm in alarms), "every FlowFile not sent is in an alarm"
    assert all(flowfile.attributes.get("content.error") for flowfile in failed)
    if kind in ("content file", "checksum file"):
        assert failed and not alarms, (kind, how)
    elif kind == "swap file":
        assert len(alarms) == 1 and not failed, alarms
        assert alarms[0]["reason"] == ("missing" if how == "delete" else "corrupt") and alarms[0]["quarantined"] == (
            how != "delete"
        ), alarms


def test_custody_run_refuses_lost_journals_in_one_line_and_accepts_them_when_told(stopped_node, tmp_path):
    """As an operator meets it: every journal deleted (the second half's FlowFiles are
    only there), `custody run` exits 1 with one line; with --accept-wal-damage it starts
    on what survives (the snapshot's half), says what was lost, and keeps what the lost
    FlowFiles left (their swap files in quarantine, their content in the content
    archive) for a manual recovery."""
    source, inbox, _ = stopped_node
    data_dir, out, flow = tmp_path / "node", tmp_path / "out", tmp_path / "flow.json"
    shutil.copytree(source, data_dir)
    for journal in (data_dir / "shards" / "local" / "wal").glob("journal-*"):
        journal.unlink()
    flow.write_text(json.dumps(flow_document(inbox, out)))
    command = [
        sys.executable,
        "-m",
        "cluster.cli",
        "run",
        "--flow",
        str(flow),
        "--data-dir",
        str(data_dir),
        "--status-interval",
        "0",
    ]
    refused = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1, refused
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "every journal is missing" in lines[0] and "--accept-wal-damage" in lines[0], (
        refused.stderr
    )
    assert "Traceback" not in refused.stderr + refused.stdout

    log = tmp_path / "custody.log"
    with open(log, "ab") as stderr:
        process = subprocess.Popen(
            command + ["--accept-wal-damage"], cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    try:
        line = read_line_containing(process, "node running", 120)
    finally:
        terminate(process, log)
    recovered = json.loads(line[line.index("{") : line.rindex("}") + 1])
    assert recovered["wal_damage"] >= 1, recovered
    assert recovered["flowfiles"] + recovered["swapped_flowfiles"] == COUNT // 2, recovered  # the snapshot's
    assert recovered["orphaned_content_resources"] == 0 and recovered["orphaned_content_bytes_cut"] == 0, recovered
    assert recovered["orphaned_content_resources_kept"] + recovered["orphaned_content_bytes_kept"] > 0, recovered
    assert recovered["orphaned_swap_files"] == 0 and recovered["orphaned_swap_files_kept"] > 0, recovered
    assert (
        len(list((data_dir / "shards" / "local" / "swap-quarantine").glob("*.swap")))
        == recovered["orphaned_swap_files_kept"]
    )
    reports = list((data_dir / "shards" / "local" / "wal" / "cut").glob("damage-*.json"))
    assert len(reports) == 1 and reports[0].name.endswith(".handled.json"), reports
    assert json.loads(reports[0].read_text())["transactions_lost"] == recovered["wal_transactions_lost"]
