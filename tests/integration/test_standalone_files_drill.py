"""File drill: `custody run` moving files with GetFile, killed with SIGKILL at random
moments, must deliver every file exactly once.

A few thousand files, each holding its unique id, wait in an inbox; `custody run`
(examples/files-drill.yaml) moves them through UpdateAttribute and ReplaceText to
PutFile. Each run is SIGKILLed once the inbox has fallen to a random mark (the marks
spread over the files, so every such kill finds GetFile at work whatever the machine's
speed), one run in eight while it is still starting and recovering. With NiFi's GetFile,
which deletes a file only after its session's commit, some kills land between a commit
and its deletes, and the next run takes those files again. A last run drains the
inbox. Then every id must be in the PutFile directory exactly once
(`cluster.drills.checker`: lost, duplicated and unexpected ids counted), the inbox
empty, provenance must have sent each file once, and GetFile's state must hold no
record (each is dropped once its delete is durable).

CI: 3,000 files and 8 kills. CUSTODY_LONG=1: 30,000 files and 15 kills. Seed:
CUSTODY_DRILL_SEED (default random, printed on failure).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

from cluster.drills.checker import check_delivery, check_node_repositories, ids_in_directory
from cluster.node.standalone import StandaloneNode
from flow.loading import load_flow

from .test_standalone_cli import ROOT, read_line_containing

FLOW = ROOT / "examples" / "files-drill.yaml"
LONG = os.environ.get("CUSTODY_LONG") == "1"
COUNT = 30_000 if LONG else 3_000
KILLS = 15 if LONG else 8


def _custody_run(data_dir: Path, inbox: Path, log) -> subprocess.Popen:
    """`custody run` on the drill's flow, as a user types it."""
    command = [
        sys.executable,
        "-m",
        "cluster.cli",
        "run",
        "--flow",
        str(FLOW),
        "--data-dir",
        str(data_dir),
        "--param",
        f"inbox={inbox}",
        "--param",
        f"out={data_dir / 'out'}",
        "--status-interval",
        "0",
        "--threads",
        "4",
    ]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)


def _waiting(inbox: Path) -> int:
    with os.scandir(inbox) as entries:
        return sum(1 for entry in entries if not entry.name.startswith("."))


def _kill_marks(rng: random.Random) -> list[int]:
    """How many files may still wait when each run is killed: random, falling, and clear of
    both ends of the inbox, so that each run takes some files and leaves some."""
    return sorted(rng.sample(range(COUNT // 20, COUNT - COUNT // 20), KILLS), reverse=True)


def _wait_for_mark(process: subprocess.Popen, inbox: Path, mark: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _waiting(inbox) > mark:
        if process.poll() is not None:
            raise AssertionError(f"the node exited with {process.returncode} before the inbox fell to {mark} files")
        if time.monotonic() > deadline:
            raise AssertionError(f"the inbox did not fall to {mark} files within {timeout} s: {_waiting(inbox)} wait")
        time.sleep(0.005)  # a poll of the inbox, not a wait standing in for one


def test_getfile_takes_every_file_exactly_once_through_sigkills(tmp_path):
    seed = int(os.environ.get("CUSTODY_DRILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    data_dir, inbox, log_path = tmp_path / "node", tmp_path / "inbox", tmp_path / "node.log"
    inbox.mkdir()
    expected = [f"file-{i}" for i in range(COUNT)]
    for i, identifier in enumerate(expected):
        (inbox / f"{i:06d}").write_text(identifier)

    started = time.monotonic()
    killed_while_starting = killed_while_taking = 0
    marks = _kill_marks(rng)
    with open(log_path, "ab") as log:
        for attempt, mark in enumerate(marks):
            process = _custody_run(data_dir, inbox, log)
            try:
                if rng.random() < 0.125:
                    # Kill during start-up: recovery, GetFile finishing the last run's deletes.
                    time.sleep(rng.uniform(0.0, 0.8))  # the random moment of the kill
                    killed_while_starting += 1
                    continue
                try:
                    read_line_containing(process, "node running", 60)
                    _wait_for_mark(process, inbox, mark, 120)
                except AssertionError as failure:
                    raise AssertionError(
                        f"seed {seed}, attempt {attempt}: {failure}; log:\n{log_path.read_text()[-4000:]}"
                    ) from None
                time.sleep(rng.uniform(0.0, 0.05))  # where in GetFile's cycle of commit and delete the kill lands
                killed_while_taking += bool(_waiting(inbox))
            finally:
                process.kill()  # SIGKILL
                process.communicate(timeout=30)
    drill_s = time.monotonic() - started

    # The last run, in-process: drain, and wait for GetFile to drop its last records.
    node = StandaloneNode(
        load_flow(str(FLOW), {"data_dir": str(data_dir), "inbox": str(inbox), "out": str(data_dir / "out")}),
        str(data_dir),
    )
    node.start()
    out = data_dir / "out"
    try:
        drained = node.wait_until(
            lambda: (
                _waiting(inbox) == 0
                and node.engine.is_idle()
                and not [k for k in node.shard.get_state("get") if k.startswith("taken:")]
                and len(ids_in_directory(str(out))) >= COUNT
            ),
            timeout=300,
        )
        assert drained, (
            f"seed {seed}: not drained: {_waiting(inbox)} files waiting; {node.status()}; state of "
            f"GetFile {node.shard.get_state('get')}"
        )
    finally:
        node.stop()

    delivery = check_delivery(expected, ids_in_directory(str(out)))
    assert delivery.ok, f"seed {seed}: {delivery.summary()}"
    report = check_node_repositories(
        str(data_dir), delivered_uuids=[n for n in os.listdir(out) if not n.startswith(".")], id_attribute="filename"
    )
    assert report.ok, f"seed {seed}: {report.summary()}"
    assert report.live_flowfiles == 0 and set(report.provenance_sent) == {f"{i:06d}" for i in range(COUNT)}
    assert killed_while_taking == KILLS - killed_while_starting, (
        f"seed {seed}: only {killed_while_taking} of {KILLS - killed_while_starting} kills found files still waiting"
    )
    print(
        f"files drill: {COUNT} files, {KILLS} kills ({killed_while_starting} during start-up, {killed_while_taking} "
        f"while files were being taken) in {drill_s:.0f} s; {delivery.summary()}; {report.summary()}"
    )
