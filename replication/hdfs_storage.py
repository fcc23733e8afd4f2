"""HDFS backend of the storage protocol, through the hdfs-native client (no JVM).

Durability: `sync()` is `hsync`, which makes the DataNodes persist the bytes and
updates the file's visible length at the NameNode. Files are always created with
`create_parent=False`, so a writer that was fenced by renaming its directory away
cannot bring the directory back by writing into it.

Lease recovery: `recover_lease(path)` closes a file another client may still be
writing; after it, that client's next write + hsync fails and surfaces here as
`LeaseLost`.

Abandoning a file: `HdfsWritableFile.abandon()` lets hdfs-native's writer go at once,
with no hsync and no close (an incarnation that died: `repositories.storage.abandon`);
nothing written through the file after it reaches HDFS, and the lease recovery of
whoever adopts the data closes the file at its last synced length.

Appending: refused (`reopens_for_append` is False): hdfs-native 0.14.7 appends to a
file's last block under its old generation stamp, where Hadoop's client first asks the
NameNode for a new one; a replica the NameNode had not heard of when the append began
(its DataNode's report of the close still on its way, milliseconds) was seen keeping
the old bytes under the same stamp, and the next append through it failed ("Corrupted
replica"). Files here are created, written, hsynced and closed, never reopened.

Reading an open file: hdfs-native 0.14.7 reads only the completed blocks of a file
that is still open for writing (it refuses to read the last, unfinished block, even
after hsync). Custody never needs to: an adopter recovers the lease, which closes the
file, before it reads. Code that must read a file another writer still holds should
recover its lease first.

Hedged reads: a read (`read`, and each read of `open_read`'s stream) that has not
answered within 0.4 s is asked again beside the first, on a new reader, and the first
answer wins (`replication.hedged_reads`): a DataNode that died or froze otherwise holds
a reader for the client's socket timeout before it tries the next replica.

New files: their first sync is hedged (`replication.new_files`): a hedge is another
file under a hidden name in the same directory, renamed to the file's name if it
answers first (the file moved aside). `list` never shows hedges; those given up open
are deleted once HDFS has closed them (`replication.left_open`). Once a call hung for
its full deadline, every hsync has a short deadline for a few seconds
(`replication.pipeline_suspicion`): one dead DataNode holds every open pipeline through
it, and each would wait the full deadline.

Every call is timed, failed ones too, into `HdfsStorage.call_durations` by operation
(create, write, hsync, close, read, open, rename, delete, list, stat, mkdir,
recover_lease; the admin API publishes them), and logged with its path when it takes
`SLOW_CALL_S` or longer.

Errors from hdfs-native arrive as built-in exceptions (FileNotFoundError,
FileExistsError, OSError for refused connections) or as RuntimeError with the Rust
error's name in the text; `_translate` turns them into the storage errors.
"""

from __future__ import annotations

import functools
import io
import logging
import queue
import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO, TypeVar

import hdfs_native

from repositories.instruments import ByLabel, LatencyHistogram
from repositories.storage import (
    FileStatus,
    LeaseLost,
    StorageAbandoned,
    StorageError,
    StorageFileExists,
    StorageFileNotFound,
    StorageFull,
    StoragePermissionDenied,
    StorageUnavailable,
)
from repositories.storage.local import DIRECTORY_MODE, FILE_MODE
from repositories.storage.protocol import parent

from .block_size import block_size_setting
from .deadline import DeadlineExceeded, DeadlineRunner, NoWorkerFree
from .hedged_reads import HedgeCounts, first_answer
from .left_open import LeftOpen
from .new_files import NEW_FILE_RETRY_BUDGET_S, NewFile, hedge_name, is_hedge
from .pipeline_suspicion import PipelineSuspicion

log = logging.getLogger(__name__)
T = TypeVar("T")

# A call that takes longer than this is logged with its path: a commit or an adoption
# waited on it, and the line says on what.
SLOW_CALL_S = 2.0

CallDurations = ByLabel[LatencyHistogram]  # operation ("write", "hsync", "rename", ...) -> seconds


def _timed_call(durations: CallDurations, operation: str, action: str, path: str, started: float) -> None:
    """Time a call (failed ones too) under `operation`, and log it with its path if slow."""
    elapsed = time.monotonic() - started
    durations.of(operation).observe(elapsed)
    if elapsed >= SLOW_CALL_S:
        log.warning("hdfs: %s %s took %.1fs", action, path, elapsed)


def _timed(operation: str, action: str = ""):
    """Time a call of the decorated `HdfsStorage` method (first argument: the path);
    `action` is how a log line says it (the operation's name by default)."""

    def decorate(method):
        @functools.wraps(method)
        def timed(self, path, *args, **kwargs):
            started = time.monotonic()
            try:
                return method(self, path, *args, **kwargs)
            finally:
                _timed_call(self.call_durations, operation, action or operation, path, started)

        return timed

    return decorate


# Texts of hdfs-native errors that mean "this writer no longer owns the file".
_LEASE_SIGNS = (
    "LeaseExpiredException",
    "lease",
    "All nodes failed for write",
    "No lease on",
    "does not have any open files",
    "FileNotFoundException",
    "BlockUCState",
    "not UNDER_CONSTRUCTION",
)
# A NameNode in safe mode (after a restart, until its DataNodes report) refuses every
# change for a while: unavailable, retry later; not an error of the caller's.
_UNAVAILABLE_SIGNS = (
    "Connection refused",
    "connection refused",
    "ConnectionRefused",
    "timed out",
    "broken pipe",
    "Broken pipe",
    "NoDataNodes",
    "could only be written to 0",
    "SafeModeException",
    "RPC listener disconnected",
)
_FULL_SIGNS = ("DSQuotaExceededException", "NSQuotaExceededException", "No space left", "DiskOutOfSpace")


def _translate(error: BaseException, path: str, action: str, *, writing: bool = False) -> StorageError:
    if isinstance(error, StorageError):
        return error
    full_text = str(error)
    # Keep the first line: NameNode errors carry the whole Java stack trace.
    text = full_text.replace("\\n", "\n").splitlines()[0][:400] if full_text else type(error).__name__
    if isinstance(error, FileNotFoundError) or ("FileNotFoundException" in text and not writing):
        return StorageFileNotFound(
            f"cannot {action} hdfs:{path}: it or its parent directory does not exist "
            "(parents are never created implicitly)",
            path,
        )
    if isinstance(error, FileExistsError) or "FileAlreadyExistsException" in text:
        return StorageFileExists(f"cannot {action} hdfs:{path}: it already exists", path)
    if "AccessControlException" in text or isinstance(error, PermissionError):
        # hdfs-native quotes the NameNode's message: `inode=\"/path\":owner:group:mode`.
        denial = re.search(r"Permission denied: [^\n\"]*", full_text.replace('\\"', "'").replace("\\n", "\n"))
        return StoragePermissionDenied(
            f"cannot {action} hdfs:{path}: HDFS refuses it ({denial.group(0) if denial else text}); the cluster's "
            "root must belong to the node's HDFS user ([hdfs] user), e.g. as the HDFS superuser: "
            "hdfs dfs -chown USER ROOT; hdfs dfs -chmod 700 ROOT",
            path,
        )
    if any(sign in text for sign in _FULL_SIGNS):
        return StorageFull(
            f"cannot {action} hdfs:{path}: HDFS has no space or quota left ({text}); "
            "free space or raise the quota, then retry",
            path,
        )
    if writing and any(sign in text for sign in _LEASE_SIGNS):
        return LeaseLost(
            f"cannot {action} hdfs:{path}: this writer can no longer write the file ({text}); "
            "another node recovered its lease, its directory was fenced, or every DataNode "
            "of its pipeline failed. Stop writing: the unsynced bytes were not persisted",
            path,
        )
    if (
        isinstance(error, (ConnectionError, TimeoutError))
        or any(sign in text for sign in _UNAVAILABLE_SIGNS)
        or (isinstance(error, OSError) and error.errno is not None)
    ):
        return StorageUnavailable(
            f"cannot {action} hdfs:{path}: HDFS is unavailable ({text}); check the "
            "NameNode and DataNodes, the operation can be retried when they are back",
            path,
        )
    return StorageError(f"cannot {action} hdfs:{path}: {type(error).__name__}: {text}", path)


class _SeekableReader(io.RawIOBase):
    """hdfs-native's reader as a proper raw stream: its `seek` returns None, which
    `io.BufferedReader` cannot use, so position is kept here and reads are ranged."""

    def __init__(self, reader: hdfs_native.FileReader, path: str, storage: HdfsStorage):
        self._reader = reader
        self._path = path
        self._storage = storage
        self._durations = storage.call_durations
        self._size = len(reader)
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:
        count = min(len(buffer), self._size - self._position)
        if count <= 0:
            return 0
        started, position = time.monotonic(), self._position

        def first() -> tuple[bytes, hdfs_native.FileReader]:
            return self._reader.read_range(position, count), self._reader

        def again() -> tuple[bytes, hdfs_native.FileReader]:
            reader = self._storage._client.read(self._path)  # fresh block locations
            return reader.read_range(position, count), reader

        # A read that waits on a dead DataNode is asked again on a new reader, and the
        # reader that answered reads the rest (`replication.hedged_reads`).
        data, self._reader = self._storage._hedged(first, again)
        _timed_call(self._durations, "read", f"read {count} bytes at {position} of", self._path, started)
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)


class _AbandonedWriters:
    """Drops abandoned hdfs-native writers on a daemon thread of its own.

    Dropping a writer is cheap in hdfs-native 0.14.7 (its `FileWriter`'s `Drop` logs a
    warning and takes the file out of the client's lease renewal; the block writer's
    tasks are detached, not awaited), with one exception: the writer holds the tokio
    runtime of the client that opened it, and when a replaced client (see
    `_NameNodeClient`) is gone, the last writer dropped shuts that runtime down, which
    waits for its worker threads. So an abandoning thread never drops a writer itself:
    it hands it here, and a thread that nothing waits for drops it. The queue holds a
    writer only until that thread takes it (one drop each, in turn)."""

    def __init__(self) -> None:
        self._writers: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def hand_over(self, writer) -> None:
        self._writers.put(writer)
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._drop_each, name="hdfs-abandoned-writers", daemon=True)
                self._thread.start()

    def _drop_each(self) -> None:
        while True:
            writer = self._writers.get()
            del writer


_ABANDONED_WRITERS = _AbandonedWriters()


class HdfsWritableFile:
    """A file open for appending on HDFS. hsync on `sync()`; not for concurrent use
    (but `abandon()` may be called from any thread, at any time).

    Every call into the writer has a deadline (see `replication.deadline`). Once one
    has timed out the writer is given up: later calls fail at once with the same
    `StorageUnavailable`, and `close` does not touch it.

    `abandon()` lets the writer go at once, with no hsync and no close (the death of the
    incarnation that writes the file: `repositories.storage.abandon`): every later
    write, hsync or close fails with `StorageAbandoned` (close: does nothing) and never
    reaches HDFS, and `abandon` itself makes no call into hdfs-native and never waits
    (not even for a call in flight, which stays the storage's to finish or time out).
    Whether a call is admitted is decided under `_lock` on the worker thread, right
    before hdfs-native is called: a call admitted before `abandon()` took the lock
    may still reach HDFS (it was in flight at the death), none admitted after it can.

    A writer dropped without `close` (abandoned, or left by a failed commit) costs the
    dropping thread nothing: the file stays open until the NameNode's lease recovery
    (an adopter's, or the lease's expiry) finishes it at its last hsynced length.
    hdfs-native's `FileWriter` is an `io.RawIOBase`, whose finalizer calls `close()`;
    on a pipeline whose DataNodes died or froze that blocks for up to a minute, on
    whatever thread drops the last reference or runs the garbage collector. So only
    its Rust writer (`inner`) is kept, and the Python wrapper is marked closed at
    once, which disarms its finalizer; an abandoned one is dropped by
    `_AbandonedWriters`.

    Lock plan: `_lock` guards `_writer`, `_refusal` and `_closed`, for a few operations;
    it is never held across a call into hdfs-native."""

    def __init__(
        self,
        path: str,
        writer: hdfs_native.FileWriter,
        position: int,
        runner: DeadlineRunner,
        timeout: float | None,
        durations: CallDurations,
        readable: Callable[[str, int], None] | None = None,
        suspicion: PipelineSuspicion | None = None,
    ):
        self.path = path
        # The storage's: a call that hung for the full deadline opens it, and an hsync
        # while it is open has a short deadline (`replication.pipeline_suspicion`).
        self._suspicion = suspicion
        # Called after a close with the file's length: returns once a reader sees it all.
        self._readable = readable
        self._writer = writer.inner
        io.RawIOBase.close(writer)  # marks the wrapper closed without calling its close()
        self._position = position
        self._closed = False
        self._runner = runner
        self._timeout = timeout
        # Why every call is refused from now on: a deadline passed, or `abandon()`.
        self._refusal: StorageUnavailable | None = None
        self._lock = threading.Lock()
        self._durations = durations

    def _refused(self) -> StorageUnavailable:
        # A fresh exception for each caller (threads must not share one traceback).
        refusal = self._refusal
        return type(refusal)(str(refusal), refusal.path)

    def _call(self, action: str, operation) -> None:
        """`operation(writer)` within the deadline, if the writer is still ours when a
        worker thread starts it (see the class docstring)."""
        with self._lock:
            if self._refusal is not None:
                raise self._refused()
            writer = self._writer

        def admitted():
            with self._lock:
                if self._refusal is not None:
                    raise self._refused()
            operation(writer)

        timeout = self._timeout
        if action == "hsync" and self._suspicion is not None:
            timeout = self._suspicion.hsync_deadline(timeout)
        started = time.monotonic()
        try:
            self._runner.run(admitted, timeout)
        except NoWorkerFree as error:  # never ran: nothing of the pipeline is known
            with self._lock:
                if self._refusal is None:
                    self._refusal = StorageUnavailable(
                        f"cannot {action} hdfs:{self.path}: {error}; this file's writer is given up and its unsynced "
                        "bytes were not persisted. Roll back and retry when HDFS is healthy",
                        self.path,
                    )
                refused = self._refused()
            raise refused from error
        except DeadlineExceeded:
            if self._suspicion is not None and timeout == self._timeout:
                self._suspicion.hung()
            with self._lock:
                if self._refusal is None:
                    suspected = "" if timeout == self._timeout else ", another pipeline having hung just before"
                    self._refusal = StorageUnavailable(
                        f"cannot {action} hdfs:{self.path}: HDFS did not answer within {timeout:g} s{suspected} "
                        "(the DataNodes of the write pipeline are down or frozen); this file's writer is "
                        "abandoned and its unsynced bytes were not persisted. Roll back and retry when "
                        "HDFS is healthy",
                        self.path,
                    )
                refused = self._refused()
            raise refused from None
        except StorageError:
            raise  # refused on the worker: abandoned meanwhile
        except BaseException as error:  # noqa: BLE001 - Rust panics arrive as BaseException
            raise _translate(error, self.path, action, writing=True) from error
        else:
            if action == "hsync" and self._suspicion is not None:
                self._suspicion.answered(time.monotonic() - started)  # what a typical hsync takes
        finally:
            _timed_call(self._durations, action, action, self.path, started)

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._closed and self._refusal is None:
            raise StorageError(f"write to closed file hdfs:{self.path}", self.path)
        chunk = bytes(data) if not isinstance(data, bytes) else data
        self._call("write", lambda writer: writer.write(chunk))
        self._position += len(data)
        return len(data)

    def sync(self) -> None:
        self._call("hsync", lambda writer: writer.hsync())

    def sync_data(self) -> None:
        self.sync()  # hsync: HDFS has no separate sync of the data alone

    def unsynced_directory(self) -> None:
        return None  # the NameNode logged the create durably before it answered

    def directory_synced(self) -> None:
        pass

    def moved(self, path: str) -> None:
        self.path = path

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._call("close", lambda writer: writer.close())
        if self._readable is not None:
            self._readable(self.path, self._position)

    def abandon(self, reason: str = "its writer stopped at once") -> None:
        """Let the writer go now: no hsync, no close, no call into hdfs-native, no wait.
        Idempotent; see the class docstring."""
        with self._lock:
            writer, self._writer = self._writer, None
            self._closed = True
            if not isinstance(self._refusal, StorageAbandoned):
                self._refusal = StorageAbandoned(
                    f"cannot write hdfs:{self.path}: it was abandoned ({reason}); this writer never writes again. "
                    "Its unsynced bytes are lost, and whoever adopts it recovers its lease",
                    self.path,
                )
        if writer is not None:
            _ABANDONED_WRITERS.hand_over(writer)

    @property
    def abandoned(self) -> bool:
        return isinstance(self._refusal, StorageAbandoned)

    def __enter__(self) -> HdfsWritableFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The longest a write, hsync or close may block before the writer is given up (seconds):
# hdfs-native can block until then on a pipeline whose DataNode died.
DEFAULT_IO_TIMEOUT = 20.0

# hdfs-native's own defaults keep retrying an unreachable NameNode or DataNode for
# minutes, holding a commit (and a session) that long. A node would rather fail fast,
# roll the session back and retry the whole commit: these bound one attempt to seconds.
FAIL_FAST_CONFIG = {
    "dfs.client.failover.max.attempts": "1",
    "dfs.client.failover.sleep.base.millis": "100",
    "dfs.client.failover.sleep.max.millis": "200",
    "dfs.client.socket-timeout": "10000",
}


# The shortest deadline of a NameNode call (`_NameNodeClient`), whatever `io_timeout` is:
# that one bounds a write pipeline, which a frozen DataNode blocks for ever (1.5 s in the
# drills and the compose cluster); a NameNode call waits for nothing but the NameNode,
# which may stand still longer under load (a garbage collection) and is not dead then.
NAMENODE_TIMEOUT_MIN = 6.0

# After a close, the first pause before a reader's view of the file is asked again
# (`HdfsStorage._wait_readable`): a DataNode's report of the last block takes milliseconds.
CLOSED_READABLE_FIRST_PAUSE_S = 0.002


class _NameNodeClient:
    """hdfs-native's `Client` with a deadline on every call (each is a NameNode RPC,
    or opens a reader or writer through one). A NameNode connection that a network
    partition cut is not noticed by hdfs-native: its next call waits forever for an
    answer (seen on a node whose container was disconnected and connected again). So a
    call that misses its deadline fails (a "timed out" error, which reads as HDFS
    unavailable: retry later), and the connection is replaced by a new client for the
    calls after it; the stuck call is left behind on its worker thread."""

    def __init__(self, make, runner: DeadlineRunner, timeout: float | None):
        self._make, self._runner, self._timeout = make, runner, timeout
        self._client = make()

    def reconnect(self) -> None:
        """The calls after this one go to a new client (a new NameNode connection)."""
        self._client = self._make()

    def __getattr__(self, name: str):
        def call(*args, **kwargs):
            client = self._client
            try:
                return self._runner.run(lambda: getattr(client, name)(*args, **kwargs), self._timeout)
            except NoWorkerFree:
                raise  # never sent: nothing is known of the connection
            except DeadlineExceeded:
                if self._client is client:
                    self._client = self._make()
                raise TimeoutError(
                    f"the NameNode timed out: no answer to {name} within {self._timeout:g} s; "
                    "the client connects again for the next call"
                ) from None

        return call


@dataclass(frozen=True)
class HdfsAddress:
    """What another process needs to reach an HDFS as an `HdfsStorage` does (a Spark
    executor reading claims): picklable, and `open()` gives that process its own
    client. The HDFS identity is the process's environment (`HADOOP_USER_NAME`)."""

    url: str
    config: tuple[tuple[str, str], ...] = ()
    io_timeout: float | None = None

    def open(self) -> HdfsStorage:
        return HdfsStorage(self.url, dict(self.config), io_timeout=self.io_timeout)


class HdfsStorage:
    """The storage protocol on HDFS. `url` is `hdfs://host:port`; `config` holds client
    settings (dfs.* keys) passed to hdfs-native, over the defaults of FAIL_FAST_CONFIG."""

    scheme = "hdfs"
    reopens_for_append = False  # see the module docstring

    def __init__(
        self, url: str, config: dict[str, str] | None = None, *, io_timeout: float | None = DEFAULT_IO_TIMEOUT
    ):
        self.url = url.rstrip("/")
        self._config = {**FAIL_FAST_CONFIG, **(config or {})}
        self.block_size = block_size_setting(self._config)
        # The longest a write, hsync or close may block before the writer is abandoned (a
        # NameNode call: this, or NAMENODE_TIMEOUT_MIN if longer).
        self.io_timeout = io_timeout
        # How long a new file's first sync is made again or hedged (`replication.new_files`).
        self.retry_budget = io_timeout if io_timeout is not None else NEW_FILE_RETRY_BUDGET_S
        self._start_workers()
        self.hedge_counts = HedgeCounts()
        self.new_file_hedge_counts = HedgeCounts()
        # Once a pipeline hung, hsyncs have a short deadline for a while (`replication.pipeline_suspicion`).
        self.pipeline_suspicion = PipelineSuspicion()
        # Files given up while open (failed hedges), deleted once HDFS has closed them.
        self.left_open = LeftOpen(self, name=f"hdfs-left-open-{urllib.parse.urlparse(self.url).port}")
        self._arrow = None
        self._arrow_lock = threading.Lock()
        # Every call's duration, failed ones too (the admin API publishes them).
        self.call_durations: CallDurations = ByLabel(LatencyHistogram)

    def _start_workers(self) -> None:
        """The workers the calls run on, and the NameNode connection."""
        port = urllib.parse.urlparse(self.url).port
        self._runner = DeadlineRunner(f"hdfs-io-{port}")
        self._client = _NameNodeClient(
            lambda: hdfs_native.Client(self.url, self._config),
            self._runner,
            None if self.io_timeout is None else max(self.io_timeout, NAMENODE_TIMEOUT_MIN),
        )
        # Reads run on workers of their own, so that reads a dead DataNode holds never
        # take the workers of writes and NameNode calls (`replication.hedged_reads`).
        self._read_runner = DeadlineRunner(f"hdfs-read-{port}")
        # New files' first syncs race on workers of their own (`replication.new_files`),
        # and their hedges write on workers of their own: a hedge's hsync that a frozen
        # DataNode holds keeps its worker until the socket timeout, and a storm of them
        # must never leave the NameNode calls and the other writers without one.
        self._new_file_runner = DeadlineRunner(f"hdfs-new-{port}")
        self._hedge_runner = DeadlineRunner(f"hdfs-hedge-{port}")

    def renew_workers(self) -> int:
        """If calls are still running or blocked, run every later call on fresh workers
        over a new NameNode connection, and let those calls end on their own; returns
        how many there were. For a node whose incarnation died: the calls it left
        blocked on a pipeline, or on a NameNode connection a partition cut, hold their
        workers until hdfs-native gives up on them (a DataNode's ack after 60 s, a
        NameNode answer later still), and as many as the cap would refuse every call
        of the next incarnation until then."""
        blocked = sum(
            runner.renew() for runner in (self._runner, self._read_runner, self._new_file_runner, self._hedge_runner)
        )
        if blocked:
            self._client.reconnect()
        return blocked

    def __repr__(self) -> str:
        return f"HdfsStorage({self.url!r})"

    @property
    def address(self) -> HdfsAddress:
        """How another process reaches this HDFS with these client settings."""
        return HdfsAddress(self.url, tuple(sorted(self._config.items())), self.io_timeout)

    def uri(self, path: str) -> str:
        """The full `hdfs://` URI of a path, for Spark and other clients."""
        return f"{self.url}{path}"

    def create(self, path: str, *, overwrite: bool = False) -> NewFile:
        """A new file; one whose first pipeline fails before its first sync is made again
        on another, and its first sync is hedged (`replication.new_files`)."""
        file = self._create_file(path, overwrite=overwrite)
        return NewFile(self, path, overwrite, file, self._new_file_runner, self.new_file_hedge_counts)

    @_timed("create")
    def _create_file(self, path: str, *, overwrite: bool = False, hedge: bool = False) -> HdfsWritableFile:
        """A file whose writes run on the storage's writers' workers, or on its hedges'."""
        options = hdfs_native.WriteOptions(
            overwrite=overwrite, create_parent=False, permission=FILE_MODE, block_size=self.block_size
        )
        try:
            writer = self._client.create(path, options)
        except BaseException as error:  # noqa: BLE001
            raise _translate(error, path, "create") from error
        return HdfsWritableFile(
            path,
            writer,
            0,
            self._hedge_runner if hedge else self._runner,
            self.io_timeout,
            self.call_durations,
            self._wait_readable,
            self.pipeline_suspicion,
        )

    def append(self, path: str) -> HdfsWritableFile:
        """Refused: HDFS files are written once (`reopens_for_append`; the module says why)."""
        raise StorageError(
            f"cannot append to hdfs:{path}: HDFS files are not reopened for appending (the HDFS client appends "
            "under the last block's old generation stamp, which can leave a stale replica taken for current); "
            "write a new file",
            path,
        )

    def _wait_readable(self, path: str, length: int) -> None:
        """Return once a reader of `path`, just closed at `length` bytes, reads them all.

        A NameNode that closes files whose last block is still COMMITTED
        (`dfs.namenode.file.close.num-committed-allowed`, which spares a close the
        client's 0.5 s wait for a DataNode's report of that block) leaves that block
        out of the length it gives readers until the report arrives, milliseconds
        later: a read at once read nothing of it (7 reads in 300 on the harness). So a
        close returns only once the file reads whole, as without the setting: one
        block-locations call, rarely two or three. A file gone meanwhile (moved or
        deleted by whoever reads it next) has nothing to wait for."""
        deadline = time.monotonic() + (self.io_timeout if self.io_timeout is not None else NEW_FILE_RETRY_BUDGET_S)
        pause = CLOSED_READABLE_FIRST_PAUSE_S
        while True:
            try:
                seen = len(self._client.read(path))
            except BaseException as error:  # noqa: BLE001
                translated = _translate(error, path, "read")
                if isinstance(translated, StorageFileNotFound):
                    return
                raise translated from error
            if seen >= length:
                return
            if time.monotonic() >= deadline:
                raise StorageUnavailable(
                    f"cannot close hdfs:{path}: it was closed at {length} bytes, but readers still see {seen} "
                    "(no DataNode reported its last block); check the DataNodes",
                    path,
                )
            time.sleep(pause)  # a DataNode's block report is on its way: a pause, never a tight loop
            pause = min(pause * 2, 0.1)

    def _hedged(self, first: Callable[[], T], again: Callable[[], T]) -> T:
        """`first()`, asked again as `again()` beside it while it does not answer
        (`replication.hedged_reads`)."""
        return first_answer(self._read_runner, first, again, counts=self.hedge_counts)

    @_timed("read")
    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        def attempt() -> bytes:
            reader = self._client.read(path)
            size = len(reader)
            if offset >= size:
                return b""
            end = size if length is None else min(size, offset + length)
            return reader.read_range(offset, end - offset)

        try:
            return self._hedged(attempt, attempt)
        except BaseException as error:  # noqa: BLE001
            raise _translate(error, path, "read") from error

    @_timed("open")
    def open_read(self, path: str) -> BinaryIO:
        try:
            reader = self._client.read(path)
        except BaseException as error:  # noqa: BLE001
            raise _translate(error, path, "open") from error
        return io.BufferedReader(_SeekableReader(reader, path, self), buffer_size=1 << 20)

    @_timed("rename")
    def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        try:
            self._client.rename(src, dst, overwrite)
        except BaseException as error:  # noqa: BLE001
            raise _translate(error, f"{src} -> {dst}", "rename") from error

    def delete_once_closed(self, path: str) -> None:
        """Delete a file this client may have left open (its writer failed or was given
        up) once HDFS has closed it (`replication.left_open`): deleted open, its last
        block would stay counted against its DataNodes' free space. Moved at once to a
        hidden name beside it (a hedge's stays where it is), so that it is gone from
        listings and its name is free; nothing there is no error."""
        if not is_hedge(path.rsplit("/", 1)[-1]):
            aside = hedge_name(path, f"{uuid.uuid4().hex[:12]}-given-up")
            try:
                self.rename(path, aside)
            except StorageFileNotFound:
                return
            path = aside
        self.left_open.add(path)

    @_timed("delete")
    def delete(self, path: str, *, recursive: bool = False) -> bool:
        try:
            return bool(self._client.delete(path, recursive))
        except BaseException as error:  # noqa: BLE001
            translated = _translate(error, path, "delete")
            if isinstance(translated, StorageFileNotFound):
                return False
            raise translated from error

    @_timed("list")
    def list(self, path: str) -> list[FileStatus]:
        try:
            found = [_status_of(status, path) for status in self._client.list_status(path, False)]
            found = [status for status in found if not is_hedge(status.name)]  # `replication.new_files`
        except BaseException as error:  # noqa: BLE001
            raise _translate(error, path, "list") from error
        return sorted(found, key=lambda status: status.path)

    @_timed("stat")
    def status(self, path: str) -> FileStatus:
        try:
            return _status_of(self._client.get_file_info(path), parent(path), full_path=path)
        except BaseException as error:  # noqa: BLE001
            raise _translate(error, path, "stat") from error

    @_timed("stat")
    def exists(self, path: str) -> bool:
        try:
            self._client.get_file_info(path)
            return True
        except FileNotFoundError:
            return False
        except BaseException as error:  # noqa: BLE001
            translated = _translate(error, path, "stat")
            if isinstance(translated, StorageFileNotFound):
                return False
            raise translated from error

    @_timed("mkdir", "make directory")
    def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False) -> None:
        if self.exists(path):
            if exist_ok and self.status(path).is_dir:
                return
            raise StorageFileExists(f"cannot make directory hdfs:{path}: it already exists", path)
        try:
            self._client.mkdirs(path, DIRECTORY_MODE, parents)
        except BaseException as error:  # noqa: BLE001
            raise _translate(error, path, "make directory") from error

    def sync_directory(self, path: str) -> None:
        # The NameNode logs every namespace change durably before it answers.
        pass

    @_timed("recover_lease", "recover the lease of")
    def recover_lease(self, path: str) -> bool:
        try:
            return bool(self._client.recover_lease(path))
        except BaseException as error:  # noqa: BLE001
            raise _translate(error, path, "recover the lease of") from error

    def arrow_filesystem(self):
        """A pyarrow view for bulk reads and listing (not for durable writes: it cannot hsync)."""
        with self._arrow_lock:
            if self._arrow is None:
                import pyarrow.fs
                from hdfs_native.fsspec import HdfsFileSystem

                parsed = urllib.parse.urlparse(self.url)
                fsspec_fs = HdfsFileSystem(host=parsed.hostname, port=parsed.port, **self._config)
                self._arrow = pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(fsspec_fs))
            return self._arrow

    def close(self) -> None:
        pass


def _status_of(status, directory: str, full_path: str | None = None) -> FileStatus:
    if full_path is None:
        name = status.path.rstrip("/").rsplit("/", 1)[-1]
        full_path = f"{directory.rstrip('/')}/{name}"
    return FileStatus(
        path=full_path,
        length=status.length,
        is_dir=status.isdir,
        modified=status.modification_time / 1000.0,
    )
