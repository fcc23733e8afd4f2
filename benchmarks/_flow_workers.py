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


class _Supervised:
    """`custody run --workers N` of `document` under `root`, its output watched; stopped
    with SIGTERM (killed past two minutes) when the block ends."""

    def __init__(self, root: str, document: dict, workers: int, threads: int, admin: bool = False):
        self.root, self.workers = root, workers
        os.makedirs(root, exist_ok=True)
        flow = os.path.join(root, "flow.json")
        with open(flow, "w", encoding="utf-8") as handle:
            json.dump(document, handle)
        self.log = os.path.join(root, "custody.log")
        with open(self.log, "ab") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cluster.cli", "run", "--flow", flow, "--data-dir", os.path.join(root, "node")]
                + ["--workers", str(workers), "--threads", str(threads), "--status-interval", "0"]
                + (["--admin", "127.0.0.1:0"] if admin else []),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.watched = _Watched(self.process)

    def __enter__(self) -> _Supervised:
        return self

    def __exit__(self, *exc) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def check(self, deadline: float) -> None:
        """Raise, with the log's tail, if the supervisor ended or `deadline` passed."""
        if self.process.poll() is not None or time.monotonic() > deadline:
            tail = Path(self.log).read_text(errors="replace")[-2000:]
            raise RuntimeError(f"custody run --workers {self.workers} ended or stalled: {tail}")

    def wait_running(self, timeout: float = 120.0) -> float:
        """Wait until every worker's engine runs; the moment the first one did."""
        deadline = time.monotonic() + timeout
        while len(self.watched.running) < self.workers:
            self.check(deadline)
            time.sleep(0.02)
        return min(at for at, _ in self.watched.running.values())

    def admin_url(self) -> str:
        """Worker 0's admin API (the node's, answering for every worker), once it listens."""
        from cluster.node.workers import ADMIN_ADDRESS_FILE, worker_directory

        path = os.path.join(worker_directory(os.path.join(self.root, "node"), 0), ADMIN_ADDRESS_FILE)
        deadline = time.monotonic() + 120
        while not os.path.exists(path):
            self.check(deadline)
            time.sleep(0.02)
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)["admin"]

    def cpu_s(self) -> float:
        """The workers' CPU seconds since each one's engine started running."""
        return sum(_cpu_s(self.watched.pids[index]) - at for index, (_, at) in self.watched.running.items())


def next_poll_s(rest: int, rate: float) -> float:
    """How long to wait before counting PutFile's files again, with `rest` files still
    to come at `rate` files a second (0: no rate yet): half the time they should take,
    between 20 ms and 1 s. Counting lists a directory of up to hundreds of thousands of
    files (0.15 s of a core for 200,000 here); every 20 ms, it took most of a core from
    the workers it measures, on a machine of two. So the end is still seen within 20
    ms, and a run of 20 s lists the directory some thirty times, not a thousand."""
    if rate <= 0:
        return 0.1
    return min(1.0, max(0.02, rest / rate / 2))


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
        files = expected_files(count, merge, workers)
        document = flow_document(out, count, size, batch, merge, back_pressure)
        with _Supervised(root, document, workers, threads) as supervised:
            deadline = time.monotonic() + TIMEOUT_S
            first: tuple[float, int] | None = None  # the first count that found files
            while (have := files_in(out)) < files:
                supervised.check(deadline)
                now = time.perf_counter()
                if first is None and have:
                    first = (now, have)
                # The rate since files appeared: the workers' start would make it look slower.
                rate = (have - first[1]) / (now - first[0]) if first is not None and now > first[0] else 0.0
                time.sleep(next_poll_s(files - have, rate))
            ended = time.perf_counter()
            cpu = supervised.cpu_s()
            started = min(at for at, _ in supervised.watched.running.values())
        delivered = files_in(out)
        if delivered != files:
            raise RuntimeError(f"benchmark flow delivered {delivered} of {files} files")
        return {"seconds": ended - started, "cpu_s": cpu, "flowfiles": count, "put_tasks": 0}

    return run_flow


def put_intake(processors: dict, workers: int) -> tuple[int, int]:
    """PutFile's intake since each worker started (FlowFiles, bytes; NiFi's flowFilesIn
    and bytesIn), summed over the workers, from the node's `GET
    /api/v1/cluster/processors` answer. Raises unless every worker answered with its
    PutFile (a worker that restarted would start its count again)."""
    silent = [member["node"] for member in processors["members"] if not member["answered"]]
    puts = [p for figures in processors["shards"].values() for p in figures if p["processor"] == "put"]
    if silent or len(puts) != workers:
        raise RuntimeError(f"PutFile's figures from {len(puts)} of {workers} workers (no answer: {silent})")
    return sum(p["since_start"]["in_count"] for p in puts), sum(p["since_start"]["in_bytes"] for p in puts)


def _processors(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{url}/api/v1/cluster/processors", timeout=30) as answer:
        return json.load(answer)


def measure_steady(root: str, document: dict, workers: int, threads: int, warmup: float, window: float):
    """An endless flow (`document`) through `custody run --workers N`, measured as NiFi
    is: PutFile's intake (FlowFiles and bytes, `put_intake`) at the warm-up's end and at
    the window's, read from the node's admin API as NiFi's side reads its processor
    status, and the workers' CPU over the window. Returns ((seconds, flowfiles, bytes)
    at the window's start and end, cpu_s)."""
    with _Supervised(root, document, workers, threads, admin=True) as supervised:
        url = supervised.admin_url()
        started = supervised.wait_running()
        samples = []
        cpu = []
        for at in (started + warmup, started + warmup + window):
            while time.perf_counter() < at:
                supervised.check(time.monotonic() + 60)
                time.sleep(min(0.2, max(0.0, at - time.perf_counter())))
            asked = time.perf_counter()
            flowfiles, size = put_intake(_processors(url), workers)
            samples.append(((asked + time.perf_counter()) / 2, flowfiles, size))
            cpu.append(supervised.cpu_s())
    return samples, cpu[1] - cpu[0]
