"""`custody run --workers 2` moves files exactly once across SIGKILLs of a worker and of
the supervisor: GetFile -> UpdateAttribute -> PutFile over files with unique ids, one
worker killed twice while it moves them, then the supervisor (its workers stop on the
parent-death signal), then a new run that finishes. No id lost, none duplicated, none
unexpected, counting the output directory and what is left in the input."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from cluster.drills.checker import check_delivery, ids_in_directory
from cluster.services.process import ServiceError, wait_until
from tests.processes import alive

ROOT = Path(__file__).resolve().parents[2]
FILES = 3000

FLOW = """\
name: move
processors:
  - id: get
    type: GetFile
    properties: {input_directory: "#{input}", batch_size: 10}
  - id: mark
    type: UpdateAttribute
    properties: {moved: "yes"}
  - id: put
    type: PutFile
    properties: {directory: "#{output}", batch_size: 10}
    auto_terminate: [success, failure]
connections:
  - {source: get, destination: mark}
  - {source: mark, destination: put}
"""


class Supervisor:
    """`custody run --workers 2` as a user starts it; its output (and its workers') read
    line by line on a thread, the workers' pids from its "worker I of 2 started" lines."""

    STARTED = re.compile(r"worker (\d+) of 2 started \(pid (\d+)\)")

    def __init__(self, flow: Path, data_dir: Path, inbox: Path, outbox: Path, log: Path):
        with open(log, "ab") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cluster.cli", "run", "--flow", str(flow), "--data-dir", str(data_dir)]
                + ["--workers", "2", "--threads", "2", "--status-interval", "0"]
                + ["--param", f"input={inbox}", "--param", f"output={outbox}"],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.lines: list[str] = []
        self.pids: dict[int, list[int]] = {0: [], 1: []}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            found = self.STARTED.search(line)
            if found:
                self.pids[int(found.group(1))].append(int(found.group(2)))

    def worker(self, index: int, starts: int) -> int:
        """The pid of worker `index` once it has been started `starts` times."""
        return wait_until(
            lambda: len(self.pids[index]) >= starts and self.pids[index][starts - 1],
            30,
            f"start {starts} of worker {index}",
        )

    def all_pids(self) -> list[int]:
        return self.pids[0] + self.pids[1]


def test_two_workers_move_each_file_exactly_once_across_kills_of_a_worker_and_the_supervisor(tmp_path):
    inbox, outbox, data_dir = tmp_path / "in", tmp_path / "out", tmp_path / "data"
    inbox.mkdir()
    expected = [f"id-{n:05d}" for n in range(FILES)]
    for name in expected:
        (inbox / name).write_text(name + "\n")
    flow = tmp_path / "flow.yaml"
    flow.write_text(FLOW)
    log = tmp_path / "custody.log"

    def moved() -> int:
        return len(os.listdir(outbox)) if outbox.exists() else 0

    first = Supervisor(flow, data_dir, inbox, outbox, log)
    try:
        for kill in (1, 2):
            pid = first.worker(1, kill)
            mark = moved()
            wait_until(lambda mark=mark: moved() >= mark + 200, 30, "files moving")
            os.kill(pid, signal.SIGKILL)
        first.worker(1, 3)
        mark = moved()
        wait_until(lambda: moved() >= mark + 200, 30, "files moving after the second kill")
        left_at_supervisor_kill = len(os.listdir(inbox))
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(10)
        # The kernel's parent-death signal stops the workers of the killed supervisor.
        wait_until(lambda: not any(alive(pid) for pid in first.all_pids()), 60, "the orphaned workers' end")
    finally:
        if first.process.poll() is None:
            first.process.kill()
    assert left_at_supervisor_kill > 0, "the files were all moved before the kills: the test tested nothing"
    assert sum("killed by signal 9" in line for line in first.lines) == 2, first.lines

    second = Supervisor(flow, data_dir, inbox, outbox, log)
    try:
        try:
            wait_until(lambda: not os.listdir(inbox) and moved() >= FILES, 60, "every file moved")
        except ServiceError:
            pass  # the report below says what is missing
        second.process.send_signal(signal.SIGTERM)
        assert second.process.wait(60) == 0, log.read_text()[-3000:]
        assert not any(alive(pid) for pid in second.all_pids())
    finally:
        if second.process.poll() is None:
            second.process.kill()
    left = ids_in_directory(str(inbox))
    report = check_delivery(expected, ids_in_directory(str(outbox)) + left)
    assert (report.lost, report.duplicated, report.unexpected) == ([], {}, []), report
    assert left == [] and report.delivered == FILES
    assert (data_dir / "workers.json").read_text() == '{"workers": 2}\n'
