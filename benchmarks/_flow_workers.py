"""`custody bench flow --workers N`: the benchmark's flows through `custody run --workers
N`, a real process per worker (`cluster.node.workers`), in place of the engine in the
benchmark's own process.

The flow is the benchmark's (`benchmarks.flow.flow_document`), written to a file;
GenerateFlowFile's `max_count` is split over the workers by the workers themselves
(`flow.workers.Worker.share`: the shares add up to the count exactly), and each worker
merges its own FlowFiles, so the engine flow writes one bundle per thousand of each
worker's share, and a short last bundle of each.

Timing runs from the first worker's "node running" line (its engine has started) to
the moment PutFile's directory holds every file, so the other workers' starts count
against the figure. CPU is each worker's own (user + system, from /proc) over the same
span, from its own "node running" line: the figure beside the rate, per FlowFile, that
a shared machine's load changes least.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

RUNNING = re.compile(r"node running with flow .* on (.*)/workers/(\d+) ")
TIMEOUT_S = 3600.0


def refusal(args) -> str | None:
    """Why `args` cannot run with `--workers`; None when they can."""
    if args.workers < 1:
        return f"--workers must be at least 1, not {args.workers}"
    if args.against_nifi:
        return "--against-nifi measures Custody in this process; it does not take --workers yet"
    if args.profile:
        return "--profile profiles this process's engine; it does not take --workers"
    if args.no_outbox:
        return "--no-outbox is a setting of this process's node; custody run --workers has no such option"
    return None


def expected_files(count: int, merge: int, workers: int) -> int:
    """Files PutFile writes for `count` FlowFiles over `workers` workers: one per
    FlowFile, or with `merge` one per `merge` of each worker's share, rounded up."""
    from flow.workers import Worker

    if not merge:
        return count
    return sum(-(-Worker(index, workers).share(count) // merge) for index in range(workers))


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of `pid` so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Watched:
    """The supervisor's output, read on a thread: when each worker's engine started,
    and its CPU then."""

    STARTED = re.compile(r"worker (\d+) of \d+ started \(pid (\d+)\)")

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.pids: dict[int, int] = {}
        self.running: dict[int, tuple[float, float]] = {}  # worker -> (perf_counter, its CPU s)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            started = self.STARTED.search(line)
            if started:
                self.pids[int(started.group(1))] = int(started.group(2))
            running = RUNNING.search(line)
            if running:
                index = int(running.group(2))
                pid = self.pids.get(index)
                self.running[index] = (time.perf_counter(), _cpu_s(pid) if pid else 0.0)


def worker_runner(
    workers: int, flow_document: Callable[..., dict], files_in: Callable[[str], int]
) -> Callable[..., dict]:
    """A `run_flow` of `benchmarks.flow` (same arguments, same result) that runs the flow
    through `custody run --workers N`; `flow_document` and `files_in` are that module's."""

    def run_flow(
        root: str,
        count: int,
        size: int,
        batch: int,
        threads: int,
        outbox: bool,
        profile: bool,
        merge: int = 0,
        back_pressure: int = 10_000,
    ) -> dict:
        out = os.path.join(root, "out")
        os.makedirs(root, exist_ok=True)
        flow = os.path.join(root, "flow.json")
        with open(flow, "w", encoding="utf-8") as handle:
            json.dump(flow_document(out, count, size, batch, merge, back_pressure), handle)
        files = expected_files(count, merge, workers)
        log = os.path.join(root, "custody.log")
        with open(log, "ab") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "cluster.cli", "run", "--flow", flow, "--data-dir", os.path.join(root, "node")]
                + ["--workers", str(workers), "--threads", str(threads), "--status-interval", "0"],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        watched = _Watched(process)
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while files_in(out) < files:
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = Path(log).read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"custody run --workers {workers} ended or stalled: {tail}")
                time.sleep(0.02)
            ended = time.perf_counter()
            cpu = sum(_cpu_s(watched.pids[index]) - at for index, (_, at) in watched.running.items())
            started = min(at for at, _ in watched.running.values())
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        delivered = files_in(out)
        if delivered != files:
            raise RuntimeError(f"benchmark flow delivered {delivered} of {files} files")
        return {"seconds": ended - started, "cpu_s": cpu, "flowfiles": count, "put_tasks": 0}

    return run_flow
