"""New HDFS files that a DataNode's death cannot hold: their first sync is a race, won
by the file itself or by a hedge beside it.

Why: after a DataNode's death the NameNode still puts new blocks on it, two in three of
them with two replicas of three DataNodes: until it is stale (1 s without a heartbeat)
where the NameNode runs custody's placement policy, for 1 to 6 s with Hadoop 3.4's
default, which avoids stale DataNodes only once its heartbeat monitor, every 5 s, has
counted one (cluster/services/hadoop/hdfs-site.properties). Hadoop's Java client asks for another DataNode then
(`excludeNodes`); hdfs-native 0.14.7 fails the write or the first hsync instead: at
once when the dead DataNode's port refuses the connection (its process died, its machine
did not), or only at the deadline when its address takes the connection and never
answers (a frozen process; a dead machine or container, whose connection waits for the
client's socket timeout). A WAL checkpoint makes five new files in a row (a snapshot
and a journal per partition); each that waited out the 1.5 s deadline and was made
again in turn held a compose drill's delivery up to 8 s after a DataNode's death.

Nothing of a file is durable, and no one reads it, before its first sync. So `NewFile`
keeps what is written to it until then (up to `NEW_FILE_REPLAY_LIMIT` bytes; past that,
its first pipeline is its only one), and its first sync (or close) is a race, in the way
of Hadoop's hedged reads: what was written is written to the file and synced, and while
no attempt has answered, *hedges* are started beside it after `NEW_FILE_HEDGE_AFTER_S`,
then every `NEW_FILE_HEDGE_EVERY_S` (each delay at least `HEDGE_TYPICAL_FACTOR` times
the storage's typical hsync: on an HDFS slow everywhere a hedge is as slow as the file,
`replication.pipeline_suspicion`), `NEW_FILE_HEDGE_WIDTH` at a time: each another file
in the same directory, under a hidden name (`hedge_name`), with everything written
again, and its own sync. An attempt that fails on its pipeline (`pipeline_failed`) is
followed by another at once (`NEW_FILE_PAUSE_S`). The first attempt to finish its sync
wins: a hedge that wins is renamed to the file's name (the NameNode finds an open file's
writer by its inode, so the writer goes on writing under the new name), the file itself
is abandoned if it lost and moved aside first (to a hidden name), and every hedge that
lost is deleted as its attempt ends: closed first if its sync answered, so that its
block is finished (a block never finished stays counted against its DataNodes' free
space, `replication.block_size`); abandoned if it failed, and like the file moved
aside, deleted once HDFS has recovered its lease (`replication.left_open`). At
most `NEW_FILE_ATTEMPTS` attempts start, all within twice the storage's `retry_budget`
(its I/O deadline) of the race's start; each attempt's own calls have the storage's
deadlines. Attempts run on workers of their own, shared by the storage's races and
capped (`replication.deadline`), and hedges write on workers of their own, also capped
(`HdfsStorage`): a hedge for which no worker is free, of either kind, is not an
attempt and does not count; the next is tried when one is due again. An attempt that
must start because none runs waits for a worker, within the budget. When every attempt
failed and no more may start, the last error is raised. An error that says the file is
gone, fenced or no longer ours (not `pipeline_failed`) ends the race at once and is
raised. The decisions are `race_step`, a pure function.

Fencing holds: hedges are created with `create_parent=False` in the file's own
directory, and the rename is within it, so a writer whose directory was renamed away
(fenced) can neither create a hedge nor rename one into place. A writer that dies in
the middle of a race leaves its file unsynced (as before) and a hidden hedge that
nothing reads; `HdfsStorage.list` hides hedges, so directory listings (the WAL's, the
content repository's) never see them.

With hdfs-native's release, the first sync or close of a new pipeline waits until
`NEW_PIPELINE_SETTLE_S` after its first write, when its setup went out: a hang-up that
came with the setup's answer has been read by then, and the sync fails at once. Sent
sooner, the release hangs on it until the deadline (it waits for an ack, then for its
packet sender, which waits for a next packet; seen in the 6 s after a DataNode's
SIGKILL: 8 of 26 new files that failed hung, none of 75 with the wait). The nodes'
build of it (`cluster/services/hdfs_client.py`, known by its version's local label)
ends that wait, so with it a first sync goes out at once (`pipeline_settle_for`): a WAL
checkpoint's new files took 73 ms instead of 115 on the harness HDFS.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from repositories.storage import LeaseLost, StorageAbandoned, StorageError, StorageUnavailable
from repositories.storage.protocol import join, parent

from .deadline import Call, DeadlineExceeded, DeadlineRunner, NoWorkerFree
from .hedged_reads import HedgeCounts

log = logging.getLogger(__name__)

# At most this many attempts at a new file's first sync in all (the file itself, and the
# files made again or hedged), the failed ones `NEW_FILE_PAUSE_S` apart, while what was
# written to it is at most this many bytes. Until a dead DataNode is avoided (1 s, or 1
# to 6 s with Hadoop's default placement) two new pipelines in three include it (two
# replicas, three DataNodes).
NEW_FILE_ATTEMPTS = 20
NEW_FILE_PAUSE_S = 0.025
NEW_FILE_RETRY_BUDGET_S = 10.0  # for a storage without an I/O deadline
NEW_FILE_REPLAY_LIMIT = 4 << 20
# A new file's first sync that has not answered within this long is hedged (seconds):
# a healthy new pipeline's first hsync takes `NEW_PIPELINE_SETTLE_S` and milliseconds.
# Hedges start `NEW_FILE_HEDGE_WIDTH` side by side, then as many every
# `NEW_FILE_HEDGE_EVERY_S` while none answers: in the seconds after a DataNode's death
# each has one chance in three of a pipeline without it ((2/3)^11 < 1 %: a file waits
# `NEW_FILE_HEDGE_AFTER_S` + 4 x `NEW_FILE_HEDGE_EVERY_S` at the 99th percentile, and
# the last of a checkpoint's four journals, made side by side, 0.2 s more). One at a
# time, a compose drill's slowest new file needed 15 attempts, 2.3 s. Hedges begin
# within `NEW_FILE_HEDGE_BUDGETS` times the storage's `retry_budget` of the race's start.
NEW_FILE_HEDGE_AFTER_S = 0.2
NEW_FILE_HEDGE_EVERY_S = 0.1
NEW_FILE_HEDGE_WIDTH = 2
NEW_FILE_HEDGE_BUDGETS = 2
# With hdfs-native's release, a new pipeline's first sync (or close) waits until this
# long after the pipeline was set up, its first write (the module docstring says why).
NEW_PIPELINE_SETTLE_S = 0.05
# The local label of custody's build of hdfs-native (`cluster/services/hdfs_client.py`),
# whose pipeline no longer hangs on a sync sent before its setup's answer was read.
FIXED_CLIENT_LABEL = "+custody."


def pipeline_settle_for(client_version: str | None) -> float:
    """How long a new pipeline's first sync waits after its first write, with the
    hdfs-native of `client_version`: nothing with custody's build, which fails such a
    sync at once; `NEW_PIPELINE_SETTLE_S` with any other (the release hangs on it)."""
    if client_version is not None and FIXED_CLIENT_LABEL in client_version:
        return 0.0
    return NEW_PIPELINE_SETTLE_S


def _client_version() -> str | None:
    try:
        return metadata.version("hdfs-native")
    except metadata.PackageNotFoundError:
        return None


# This process's: the hdfs-native it loads is the one installed when it started.
PIPELINE_SETTLE_S = pipeline_settle_for(_client_version())

# A hedge of `directory/name` is `directory/.name.<token>.hedge`.
HEDGE_SUFFIX = ".hedge"


def hedge_name(path: str, token: str) -> str:
    """The hidden path of a hedge of `path`, in the same directory."""
    return join(parent(path), f".{path.rsplit('/', 1)[-1]}.{token}{HEDGE_SUFFIX}")


def is_hedge(name: str) -> bool:
    """Whether a directory entry's name is a hedge's (listings hide them)."""
    return name.startswith(".") and name.endswith(HEDGE_SUFFIX)


def pipeline_failed(error: BaseException) -> bool:
    """Whether `error`, from a write, hsync or close of a file never synced, says its
    pipeline could not be used (a DataNode of it unreachable: refused, reset, or past
    the deadline), rather than that the file is gone, fenced or no longer ours."""
    if isinstance(error, StorageAbandoned):
        return False
    if isinstance(error, LeaseLost):
        return "All nodes failed for write" in str(error)
    return isinstance(error, StorageUnavailable)


# -- the race's decisions ------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """An attempt of a race as `race_step` sees it: when it began, and how it ended
    (`done`; `error` None: its sync answered)."""

    began: float
    done: bool = False
    error: BaseException | None = None


@dataclass(frozen=True)
class Won:
    index: int


@dataclass(frozen=True)
class Failed:
    error: BaseException


@dataclass(frozen=True)
class Start:
    pause: float  # before it: `NEW_FILE_PAUSE_S` after a failure, 0 for hedges
    count: int = 1  # attempts started side by side


@dataclass(frozen=True)
class Wait:
    seconds: float | None  # None: until an attempt ends


Step = Won | Failed | Start | Wait


def race_step(
    attempts: Sequence[Attempt],
    now: float,
    *,
    budget: float,
    hedge_after: float = NEW_FILE_HEDGE_AFTER_S,
    hedge_every: float = NEW_FILE_HEDGE_EVERY_S,
    hedge_width: int = NEW_FILE_HEDGE_WIDTH,
    limit: int = NEW_FILE_ATTEMPTS,
    refused_at: float | None = None,
) -> Step:
    """What a race does next, given its attempts so far (the first began when it
    started) and when a hedge was last refused for want of a worker (`refused_at`, if
    after the last attempt began): no attempt starts `budget` seconds after the first or
    later; the module docstring says why."""
    for index, attempt in enumerate(attempts):
        if attempt.done and attempt.error is None:
            return Won(index)
    for attempt in attempts:
        if attempt.error is not None and not pipeline_failed(attempt.error):
            return Failed(attempt.error)
    may_start = len(attempts) < limit and now - attempts[0].began < budget
    running = [attempt for attempt in attempts if not attempt.done]
    if not running:
        if may_start:
            return Start(NEW_FILE_PAUSE_S)
        return Failed(attempts[-1].error)  # type: ignore[arg-type]
    if not may_start:
        return Wait(None)
    due = attempts[-1].began + (hedge_after if len(attempts) == 1 else hedge_every) - now
    if refused_at is not None:
        due = max(due, refused_at + hedge_every - now)
    return Start(0.0, min(hedge_width, limit - len(attempts))) if due <= 0 else Wait(due)


# -- the file --------------------------------------------------------------------------


class _Lost(StorageError):
    """An attempt that finished after another had won (or the race ended)."""


class _NoWorker(StorageError):
    """A hedge whose calls found no worker free: it never reached a pipeline."""


def _seen(began: float, call: Call) -> Attempt | None:
    """How `race_step` sees an attempt: one that lost to another is not an end (the
    winner's is on its way); a hedge that found no worker for its calls is none."""
    if isinstance(call.error, _Lost):
        return Attempt(began)
    if isinstance(call.error, _NoWorker):
        return None
    return Attempt(began, call.done.is_set(), call.error)


class NewFile:
    """A file `HdfsStorage.create` made (the module docstring says what it does until its
    first sync). After its first sync (or once more than `NEW_FILE_REPLAY_LIMIT` bytes
    were written to it) every call goes straight to the file, as `HdfsWritableFile`
    documents.

    Not for concurrent use, but `abandon()` may be called from any thread, at any time:
    it ends a race and abandons every file of it. Lock plan: `_lock` guards `_file`,
    `_abandoned` and the race's `_attempt_files` and `_decided`, for a few operations,
    never across a call into HDFS."""

    def __init__(self, storage, path: str, overwrite: bool, file, runner: DeadlineRunner, counts: HedgeCounts):
        self.path = path
        self._storage, self._overwrite = storage, overwrite
        self._runner, self._counts = runner, counts
        self._lock = threading.Lock()
        self._file = file
        self._abandoned = False
        self._written: list[bytes] | None = []  # None: synced once, or too much to keep
        self._size = 0  # of what was written
        # The race of a first sync: each attempt's file once made, and whether it ended.
        self._attempt_files: dict[int, Any] = {}
        self._decided = False
        self._token = ""  # names the race's hedges (`hedge_name`)

    # -- the first sync or close: a race -----------------------------------------------

    def _settle(self, piped_at: float | None) -> None:
        """Wait until a new pipeline set up at `piped_at` has settled (`PIPELINE_SETTLE_S`)."""
        if piped_at is not None and PIPELINE_SETTLE_S:
            time.sleep(max(0.0, piped_at + PIPELINE_SETTLE_S - time.monotonic()))

    def _first(self, action: str, finish: Callable[[object], None]) -> None:
        """`finish(file)` (its sync or close) on this file, or on a hedge that answered
        first and is renamed over it."""
        with self._lock:
            if self._abandoned:
                file = self._file
            else:
                self._attempt_files, self._decided = {0: self._file}, False
                self._token = uuid.uuid4().hex[:12]
                file = None
        if file is not None:
            finish(file)  # refused: abandoned
            return
        calls: list[tuple[float, Call]] = []
        answered = threading.Event()  # set after an attempt's `done`, so never seen before it
        budget = NEW_FILE_HEDGE_BUDGETS * self._storage.retry_budget
        # Hedges wait longer on an HDFS slow everywhere (`replication.pipeline_suspicion`).
        suspicion = self._storage.pipeline_suspicion
        started = time.monotonic()
        refused_at: float | None = None  # a hedge found no worker free then
        no_worker = 0  # hedges whose calls found no worker free: not attempts

        def begin(index: int, wait: float) -> bool:
            """Start attempt `index` on a worker, waiting up to `wait` seconds for one to
            be free. False if none was and it might not wait (a hedge: not made); one
            that waited in vain is recorded as an attempt that failed at once."""
            began = time.monotonic()
            try:
                calls.append((began, self._runner.start(lambda: self._attempt(index, finish), answered.set, wait=wait)))
                return True
            except DeadlineExceeded:
                if not wait:
                    return False
                call = Call(lambda: None)
                call.error = StorageUnavailable(
                    f"cannot {action} hdfs:{self.path}: no HDFS worker came free within {wait:.2f} s", self.path
                )
                call.done.set()
                calls.append((began, call))
                return True

        begin(0, budget)
        while True:
            answered.clear()
            # An attempt that lost to another is not an end: the winner's is on its way.
            seen = [(index, _seen(began, call)) for index, (began, call) in enumerate(calls)]
            kept = [(index, attempt) for index, attempt in seen if attempt is not None]
            attempts = [attempt for _, attempt in kept]
            if len(seen) - len(kept) > no_worker:  # a hedge found no worker for its calls
                no_worker, refused_at = len(seen) - len(kept), time.monotonic()
            step = race_step(
                attempts,
                time.monotonic(),
                budget=budget,
                hedge_after=suspicion.hedge_delay(NEW_FILE_HEDGE_AFTER_S),
                hedge_every=suspicion.hedge_delay(NEW_FILE_HEDGE_EVERY_S),
                hedge_width=NEW_FILE_HEDGE_WIDTH,
                refused_at=refused_at,
            )
            if isinstance(step, Won):
                index = kept[step.index][0]
                self._counts.add(1 if len(calls) > 1 else 0, 1 if index > 0 else 0)
                self._won(index)
                return
            if isinstance(step, Failed):
                self._end_race()
                raise step.error
            if isinstance(step, Wait):
                answered.wait(step.seconds)
                continue
            if step.pause:
                log.info(
                    "hdfs: %s %s failed before its first sync (%s); making it again on another pipeline "
                    "(file %d of at most %d)",
                    action,
                    self.path,
                    str(attempts[-1].error).splitlines()[0][:300],
                    len(calls) + 1,
                    NEW_FILE_ATTEMPTS,
                )
                time.sleep(step.pause)
                # None of the race's attempts runs: this one waits for a worker.
                begin(len(calls), max(budget - (time.monotonic() - started), NEW_FILE_PAUSE_S))
                continue
            for _ in range(step.count):
                if not begin(len(calls), 0.0):
                    refused_at = time.monotonic()
                    break

    def _hedge_path(self, index: int) -> str:
        return hedge_name(self.path, f"{self._token}-{index}")

    def _attempt(self, index: int, finish: Callable[[object], None]):
        """Attempt `index` of a race, on a worker: the file itself (0) or a hedge, with
        everything written to it, then `finish(file)`."""
        if index == 0:
            file = self._file
        else:
            file = self._storage._create_file(self._hedge_path(index), hedge=True)
            with self._lock:
                ended, abandoned = self._decided, self._abandoned
                if not (ended or abandoned):
                    self._attempt_files[index] = file
            if ended or abandoned:
                self._drop(index, file)
                self._lost(ended)
        try:
            piped_at = None
            for chunk in self._written or ():
                file.write(chunk)
                piped_at = piped_at or time.monotonic()
            self._settle(piped_at)
            finish(file)
        except BaseException as error:
            if index:
                self._drop(index, file)
                if isinstance(error.__cause__, NoWorkerFree):
                    raise _NoWorker(str(error), self._hedge_path(index)) from error
            raise
        with self._lock:
            ended, abandoned = self._decided, self._abandoned
            self._decided = True
        if ended or abandoned:
            if index:  # synced, but too late: closed first, unless the file's writer is being given up
                self._drop(index, file, close=not abandoned)
            self._lost(ended)
        return file

    def _lost(self, ended: bool) -> None:
        if ended:
            raise _Lost(f"an attempt at hdfs:{self.path} ended after its race", self.path)
        raise StorageAbandoned(f"cannot write hdfs:{self.path}: it was abandoned during its first sync", self.path)

    def _won(self, index: int) -> None:
        """Attempt `index` won: drop the others; a hedge takes the file's name, the file
        moved aside."""
        with self._lock:
            files = dict(self._attempt_files)
        winner = files.pop(index)
        if index:
            _abandon(files[0], "a hedge of its first sync answered first")
            # Moved aside, not renamed over: still open, and deleted open its block would
            # stay counted; it is deleted once HDFS has closed it (`replication.left_open`).
            try:
                self._storage.delete_once_closed(self.path)
            except StorageError as error:  # fenced, say: the rename below says so
                log.info("hdfs: could not move %s aside (%s); the hedge is renamed over it", self.path, error)
        # The hedges still running drop themselves as they end (`_attempt`): one whose
        # sync answers is closed before it is deleted.
        if index:
            try:
                self._storage.rename(self._hedge_path(index), self.path, overwrite=True)
            except BaseException:
                self._drop(index, winner)
                raise
            winner.path = self.path
            log.info("hdfs: the first sync of %s was answered by its hedge %d", self.path, index)
        with self._lock:
            abandoned = self._abandoned
            if not abandoned:
                self._file = winner
        if abandoned:
            _abandon(winner, "abandoned while its first sync was hedged")
            raise StorageAbandoned(f"cannot write hdfs:{self.path}: it was abandoned during its first sync", self.path)

    def _end_race(self) -> None:
        """A race lost by every attempt: abandon the hedges still running."""
        with self._lock:
            self._decided = True
            files = dict(self._attempt_files)
        for index, file in files.items():
            if index:
                self._drop(index, file)

    def _drop(self, index: int, file, *, close: bool = False) -> None:
        """Abandon a hedge's file, or with `close` close it (a hedge whose sync answered:
        it answers again), and delete it (best effort: a hedge left is hidden); one
        abandoned open is deleted once HDFS has recovered its lease and closed it
        (`replication.left_open`).

        Closed, its block is finished and the NameNode stops counting it: a block
        written and never finished (its file deleted while open) stays counted against
        its DataNodes' free space, by a whole block of the file's size, for as long as
        blocks keep being finished there (`replication.block_size`)."""
        closed = False
        if close:
            try:
                file.close()
                closed = True
            except (StorageError, DeadlineExceeded):
                pass
        path = self._hedge_path(index)
        if not closed:
            # Open: deleted once HDFS has recovered its lease, which finishes its block.
            _abandon(file, "another attempt at its first sync answered first")
            self._storage.delete_once_closed(path)
            return
        try:
            self._storage.delete(path)
        except StorageError as error:
            log.info("hdfs: could not delete the hedge %s (%s); it stays hidden", path, error)

    # -- the storage protocol --------------------------------------------------------

    def write(self, data) -> int:
        chunk = bytes(data)
        if self._written is None or self._abandoned:
            return self._file.write(chunk)  # refused when abandoned
        self._written.append(chunk)
        self._size += len(chunk)
        if self._size > NEW_FILE_REPLAY_LIMIT:  # too much to keep: its first pipeline is its only one
            written, self._written = self._written, None
            for kept in written:
                self._file.write(kept)
        return len(chunk)

    def _finish(self, action: str, finish: Callable[[Any], None]) -> None:
        """`finish(file)`: straight to the file once synced, else the first sync's race."""
        if self._written is None:
            finish(self._file)
            return
        try:
            self._first(action, finish)
        finally:
            self._written = None

    def sync(self) -> None:
        self._finish("hsync", lambda file: file.sync())

    def sync_data(self) -> None:
        self.sync()  # hsync: HDFS has no separate sync of the data alone

    def close(self) -> None:
        self._finish("close", lambda file: file.close())

    def abandon(self, *reason: str) -> None:
        with self._lock:
            self._abandoned = True
            files = [self._file, *self._attempt_files.values()]
        for file in files:
            _abandon(file, *reason)

    @property
    def abandoned(self) -> bool:
        return self._abandoned or bool(getattr(self._file, "abandoned", False))

    def unsynced_directory(self) -> str | None:
        return self._file.unsynced_directory()

    def directory_synced(self) -> None:
        self._file.directory_synced()

    def moved(self, path: str) -> None:
        if self._written is not None:
            # Its first sync's race would rename a winning hedge over the old name.
            raise StorageError(f"cannot follow hdfs:{self.path} to {path}: it was never synced", self.path)
        self._file.moved(path)
        self.path = path

    def tell(self) -> int:
        return self._size if self._written is not None else self._file.tell()

    def __enter__(self) -> NewFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _abandon(file, *reason: str) -> None:
    abandon = getattr(file, "abandon", None)
    if abandon is not None:
        abandon(*reason)
