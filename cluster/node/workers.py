"""The supervisor of a node's worker processes: `custody run --workers N`.

Python runs one thread at a time in a process; a node that runs N processes uses N
cores. Each worker is a complete standalone node (`StandaloneNode`) on a shard of its
own under the node's data directory, running the same flow with the same parameters
and threads, and taking its part of the sources' input (`flow.workers`):

    node.lock           held by the supervisor (no other node starts on the directory)
    workers.json        the worker count, recorded at the first start (`worker_plan`)
    workers/I/          worker I's data directory: node.lock, shards/local/wal, swap,
                        content/, provenance/, run-states.json (`standalone`), and
                        admin.json while it serves an admin API (`--admin`)

The supervisor starts the workers, starts again one that ends (its shard recovers
from its WAL as a restarted node's does, even after SIGKILL; one that dies at once waits,
`worker_plan.restart_after`), stops them all on SIGTERM or SIGINT (each stops as a node
does: tasks finish, WAL checkpoint), and if it is itself killed, the kernel sends each
worker SIGTERM (PR_SET_PDEATHSIG), so that no worker outlives it for long. A worker of a
supervisor that was killed may still be stopping when the next supervisor starts: that
one waits for each worker directory's lock before it starts its worker.

Lock plan: none; one thread (`run`) owns the processes.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from repositories.storage.local import FILE_MODE, make_private_directories

from .directory_lock import DirectoryLocked, release_directory_lock, take_directory_lock
from .parent_death import dies_with_this_process
from .standalone import NodeError
from .worker_plan import SINGLE_NODE_SHARDS, count_problem, read_count, record_count, restart_after

log = logging.getLogger(__name__)

LOCK_WAIT_S = 120.0  # how long a worker directory's lock may stay held by a stopping worker
POLL_S = 0.2  # how often the supervisor looks at its workers
ADMIN_ADDRESS_FILE = "admin.json"  # a worker's admin address (`cluster.admin.worker_siblings`)


def worker_directory(data_dir: str, index: int) -> str:
    return os.path.join(data_dir, "workers", str(index))


@dataclass
class _Worker:
    index: int
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    start_at: float = 0.0  # when it is due to start (again)
    last_delay_s: float = 0.0


class WorkerSupervisor:
    """Runs `count` workers of the node on `data_dir`; `command(index)` is the command
    line of worker `index` (a `custody run` of its own)."""

    def __init__(
        self,
        data_dir: str,
        count: int,
        command: Callable[[int], Sequence[str]],
        *,
        out: Callable[[str], None] = lambda line: print(line, flush=True),
        clock: Callable[[], float] = time.monotonic,
    ):
        self.data_dir = os.path.abspath(data_dir)
        self.count = count
        self._command = command
        self._out = out
        self._clock = clock
        self._lock_file: TextIO | None = None
        self.workers = [_Worker(index) for index in range(count)]

    # -- start -------------------------------------------------------------------------
    def prepare(self) -> None:
        """Hold the data directory's lock and record the count; raises `NodeError` when
        another node runs on it or it was run with another count."""
        make_private_directories(self.data_dir)
        self._take_lock()
        try:
            try:
                recorded = read_count(self.data_dir)
            except ValueError as error:
                raise NodeError(f"cannot start on {self.data_dir}: {error}") from None
            single = os.path.isdir(os.path.join(self.data_dir, SINGLE_NODE_SHARDS))
            problem = count_problem(recorded, single, self.count)
            if problem is not None:
                raise NodeError(f"cannot start {self.count} workers on {self.data_dir}: {problem}")
            if recorded is None:
                record_count(self.data_dir, self.count)
            for worker in self.workers:
                make_private_directories(worker_directory(self.data_dir, worker.index))
        except BaseException:
            self.release()
            raise

    def _take_lock(self) -> None:
        try:
            self._lock_file = take_directory_lock(self.data_dir)
        except DirectoryLocked as error:
            raise NodeError(str(error)) from None

    def release(self) -> None:
        release_directory_lock(self._lock_file)
        self._lock_file = None

    def _wait_for_worker_lock(self, index: int, stop: threading.Event) -> bool:
        """Wait until no process holds worker `index`'s directory lock (a worker of a
        supervisor that was killed, still stopping). False when `stop` came first."""
        path = os.path.join(worker_directory(self.data_dir, index), "node.lock")
        deadline = self._clock() + LOCK_WAIT_S
        said = False
        while not stop.is_set():
            try:
                handle = open(path, "a+", opener=lambda name, flags: os.open(name, flags, FILE_MODE))
            except FileNotFoundError:
                return True
            with handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    pass
                else:
                    fcntl.flock(handle, fcntl.LOCK_UN)
                    return True
            if not said:
                self._out(f"custody: worker {index}'s directory is still held (a worker of the last run stopping)")
                said = True
            if self._clock() >= deadline:
                raise NodeError(
                    f"worker {index}'s directory {os.path.dirname(path)} stayed locked for {LOCK_WAIT_S:g} s: "
                    "a process of an earlier run holds it; stop it first"
                )
            stop.wait(POLL_S)
        return False

    def _start(self, worker: _Worker) -> None:
        # The admin address a killed worker left names a port it no longer holds: gone
        # before its next run, so worker 0 reports it not answering, not another's port.
        _remove_admin_address(worker_directory(self.data_dir, worker.index))
        worker.process = subprocess.Popen(dies_with_this_process(self._command(worker.index)), close_fds=True)
        worker.started_at = self._clock()
        self._out(f"custody: worker {worker.index} of {self.count} started (pid {worker.process.pid})")

    # -- run ---------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Start the workers, keep them running until `stop` is set, then stop them. Call
        it on a thread that lives as long as the supervisor (`custody run`'s main thread):
        the kernel's parent-death signal follows the thread that started a worker."""
        try:
            for worker in self.workers:
                if not self._wait_for_worker_lock(worker.index, stop):
                    return
                self._start(worker)
            while not stop.wait(POLL_S):
                now = self._clock()
                for worker in self.workers:
                    process = worker.process
                    if process is not None:
                        code = process.poll()
                        if code is None:
                            continue
                        _remove_admin_address(worker_directory(self.data_dir, worker.index))
                        restart = restart_after(now - worker.started_at, code, worker.last_delay_s)
                        self._out(f"custody: worker {worker.index} {restart.reason}")
                        worker.process = None
                        worker.start_at = now + restart.delay_s
                        worker.last_delay_s = restart.delay_s
                    if worker.start_at <= now and self._wait_for_worker_lock(worker.index, stop):
                        self._start(worker)
        finally:
            self.stop_workers()

    def stop_workers(self, timeout: float = 60.0) -> None:
        """SIGTERM every worker, wait up to `timeout` for all, SIGKILL those left."""
        running = [w.process for w in self.workers if w.process is not None and w.process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        deadline = self._clock() + timeout
        for process in running:
            try:
                process.wait(max(0.0, deadline - self._clock()))
            except subprocess.TimeoutExpired:
                log.error("worker pid %d did not stop within %g s: killed", process.pid, timeout)
                process.kill()
                process.wait()
        for worker in self.workers:
            worker.process = None

    def pids(self) -> list[int | None]:
        return [w.process.pid if w.process is not None else None for w in self.workers]


def _remove_admin_address(directory: str) -> None:
    try:
        os.remove(os.path.join(directory, ADMIN_ADDRESS_FILE))
    except FileNotFoundError:
        pass


def worker_command(args, index: int, count: int) -> list[str]:
    """The command line of worker `index` of `count`: `custody run` with the supervisor's
    own flow, data directory, parameters and settings, and `--worker INDEX/COUNT`."""
    command = [sys.executable, "-m", "cluster.cli"]
    if getattr(args, "verbose", False):
        command.append("--verbose")
    command += [
        "run",
        "--flow",
        os.path.abspath(args.flow),
        "--data-dir",
        os.path.abspath(args.data_dir),
        "--worker",
        f"{index}/{count}",
        "--threads",
        str(args.threads),
        "--status-interval",
        repr(args.status_interval),
        "--name",
        args.name,
        "--spark-master",
        args.spark_master,
    ]
    for item in args.param:
        command += ["--param", item]
    for item in args.spark_conf:
        command += ["--spark-conf", item]
    if args.accept_wal_damage:
        command.append("--accept-wal-damage")
    for directory in args.python_extensions:
        command += ["--python-extensions", os.path.abspath(directory)]
    if args.python_index_url:
        command += ["--python-index-url", args.python_index_url]
    for item in args.python_find_links:
        command += ["--python-find-links", item if "://" in item else os.path.abspath(item)]
    if args.python_no_index:
        command.append("--python-no-index")
    if args.admin:
        # Worker 0 on the operator's address answers for the node; the others serve theirs
        # on a loopback port the kernel picks, recorded in their directory for worker 0
        # (`cluster.admin.worker_siblings`), with the same tokens.
        command += ["--admin", args.admin if index == 0 else "127.0.0.1:0"]
        if args.admin_tokens:
            command += ["--admin-tokens", os.path.abspath(args.admin_tokens)]
        for name in args.admin_allowed_host:
            command += ["--admin-allowed-host", name]
    return command
