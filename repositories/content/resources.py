"""The resource files a content repository holds open, and the bookkeeping its jobs share.

An `OpenResource` is one resource file this repository appends to, with its checksum
file (see `format`), which takes the checksum records of each claim written to the
resource file and is synced and closed with it: a writer owns it
(`writing`), or it waits in `appendable` for the next writer, until it is full,
retired or failed. A resource is *retired* when no claim may start in it any more
(a writer in the middle of a claim in it finishes that claim, and the resource is
retired as the writer lets go of it); its file is closed as soon as nobody writes it
and every completed claim in it is synced. A resource is *failed* when a write, sync,
close or flush of it failed: it is retired at once, and the claims completed in it
but not yet synced are reported as lost (`on_lost`). Before a resource fails,
`on_failing` is told (a replicating owner retires it on every other replica first,
so that no replica appends where another cannot).

`ResourceTable` holds what writing, syncing, reading, recovery and collection all
touch, with the one lock that guards it.

Lock plan:
  * `ResourceTable.lock` guards `open`, `closing`, `appendable`, `zero`, `archived`,
    `closed` and every OpenResource's `writing`, `retired` and `failed`. It is never held
    across I/O.
  * Each OpenResource's `io_lock` guards `pending`, `checksum_pending`, `synced`
    and `sync_round`, and what is handed to its files: it serialises a writer's
    appends with the flushes of syncs and reads of that resource.
  * Each OpenResource's `file_lock` guards the calls into its two files (an HDFS
    writer is not thread-safe): taken under `io_lock` for a write or a close, and
    by a sync round across its hsync/fdatasync *without* `io_lock`, so that writers
    of small claims go on filling `pending` while the bytes before them are made
    durable (group commit: `syncing.ResourceSyncer`).
  * `length`, `completed` and `last_claim_length` belong to the resource's writer
    while `writing` is set. Under `lock` alone, `sync` and `retire_locked` read `length`, `synced` and
    `completed`: a stale value (they only grow) defers a sync or a close to the
    next sync, never loses one.
  * Order: `io_lock`, then `file_lock`; an `io_lock` before `lock`,
    never the reverse (a failed append retires its resource under `lock` while it
    holds `io_lock`).
  * Claimant counts (`ClaimantCounts`) and lost ranges (`syncing.LostRanges`) have
    locks of their own, taken last.
  * `on_failing` is called without `lock` (perhaps with the failing resource's
    `io_lock`); what it calls takes other tables' `lock`s, never an `io_lock`.
  * `CompanionSyncs` syncs a checksum file on a thread of its own for a caller that
    holds the resource's `file_lock` and waits for it: no lock is taken there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from repositories.claims import ResourceClaim
from repositories.log_limits import LimitedLog
from repositories.storage import StorageError, StorageFull, WritableFile

from .claimants import ClaimantCounts
from .errors import RepositoryClosed
from .pools import LazyPool

log = logging.getLogger(__name__)


class OpenResource:
    __slots__ = (
        "claim",
        "root",
        "file",
        "checksum_file",
        "length",
        "completed",
        "last_claim_length",
        "synced",
        "writing",
        "retired",
        "failed",
        "io_lock",
        "file_lock",
        "sync_round",
        "pending",
        "checksum_pending",
        "closed",
        "opened",
    )

    def __init__(self, claim: ResourceClaim, root: str, file: WritableFile, checksum_file: WritableFile):
        self.claim = claim
        self.root = root
        self.file = file
        self.checksum_file = checksum_file
        self.length = 0  # bytes handed to the file
        self.completed = 0  # end of the last closed claim
        self.last_claim_length = 0  # how long the last closed claim is (`writing.is_full`)
        self.synced = 0  # bytes known durable
        self.writing = False
        self.retired = False
        self.failed = False
        self.io_lock = threading.Lock()
        self.file_lock = threading.Lock()
        # The sync under way of the bytes handed to the files (a `syncing.SyncRound`),
        # which every commit that needs those bytes durable waits for.
        self.sync_round: object | None = None
        # Bytes of completed, unsynced small claims not yet handed to the file: with
        # group commit, fifty 1 KB claims cost one write() instead of fifty. Flushed
        # before anything else touches the file (append, sync, read, close).
        self.pending = bytearray()
        # Packed checksum records of blocks whose bytes were handed to `file` or wait
        # in `pending`: written to `checksum_file` when the pending bytes are.
        self.checksum_pending = bytearray()
        # Set once both files are closed (or the resource failed): what a reader of a
        # resource whose close runs in the background waits for.
        self.closed = threading.Event()
        self.opened = time.monotonic()  # when its files were created

    def flush_pending(self) -> None:
        """Hand pending bytes to the resource file, then their checksum records to the
        checksum file. Caller holds `io_lock`."""
        with self.file_lock:
            self._flush_pending_locked()

    def _flush_pending_locked(self) -> None:
        if self.pending:
            data, self.pending = self.pending, bytearray()
            self.file.write(data)
        if self.checksum_pending:
            records, self.checksum_pending = self.checksum_pending, bytearray()
            self.checksum_file.write(records)

    def write_through(self, data) -> None:
        """Flush pending bytes, then hand `data` to the resource file. Caller holds `io_lock`."""
        with self.file_lock:
            self._flush_pending_locked()
            self.file.write(data)

    def sync_files(self, companion: CompanionSyncs) -> None:
        """Flush, then make both files durable, names included. Caller holds `io_lock`."""
        with self.file_lock:
            self._flush_pending_locked()
            companion.beside(self.checksum_file.sync_data, self.file.sync)
        # Both files are in one directory, which the resource file's first sync fsynced.
        self.checksum_file.directory_synced()

    def sync_flushed(self, companion: CompanionSyncs) -> None:
        """Make both files' bytes durable, as far as they were handed to the files (a
        sync round: `syncing.SyncRound`); a new file's name is the caller's
        (`file.unsynced_directory()`, which is the checksum file's too). Takes
        `file_lock`; the caller holds no `io_lock`: writers go on meanwhile."""
        with self.file_lock:
            companion.beside(self.checksum_file.sync_data, self.file.sync_data)

    def directory_synced(self) -> None:
        self.file.directory_synced()
        self.checksum_file.directory_synced()

    def close_files(self) -> None:
        """Flush, then close both files (both are tried); raises the first failure.
        Caller holds `io_lock`."""
        failures = []
        with self.file_lock:
            for step in (self._flush_pending_locked, self.file.close, self.checksum_file.close):
                try:
                    step()
                except StorageError as error:
                    failures.append(error)
        if failures:
            raise failures[0]


class CompanionSyncs:
    """Runs a resource's checksum file sync beside its resource file sync, on a thread
    of its own: two fdatasyncs (or hsyncs) one after the other would cost a session
    commit two journal commits (two pipeline round trips) instead of one.

    The caller holds the resource's `io_lock` throughout, so nothing else touches
    either file meanwhile."""

    def __init__(self, name: str):
        self._pool = LazyPool(f"{name}-checksum-sync", 8)

    def beside(self, companion: Callable[[], None], main: Callable[[], None]) -> None:
        """Run `companion` on a pool thread while `main` runs here; raise the first failure."""
        future = self._pool.submit(companion)
        try:
            main()
        finally:
            future.result()

    def shutdown(self, *, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)


# Told (resource, first lost byte, end of the lost bytes, why) when claims completed in
# that range of a failed resource will never be durable.
OnLost = Callable[[ResourceClaim, int, int, str], None]


class ResourceTable:
    """The shared bookkeeping of one content repository (see the lock plan above)."""

    def __init__(self, name: str, claimants: ClaimantCounts, on_lost: OnLost, *, close_in_background: bool = False):
        self.name = name
        self.lock = threading.Lock()
        self.open: dict[ResourceClaim, OpenResource] = {}
        # Retired resources whose files are being closed: out of `open`, not yet
        # readable where a reader needs closed files (HDFS). See `close_file`.
        self.closing: dict[ResourceClaim, OpenResource] = {}
        self._closer = LazyPool(f"{name}-close", 4) if close_in_background else None
        self.appendable: deque[OpenResource] = deque()
        self.zero: set[ResourceClaim] = set()  # claimant count 0: candidates for collection
        self.archived: dict[ResourceClaim, tuple[float, int]] = {}  # -> (archived at, size)
        self.closed = False
        self.claimants = claimants
        self.companion_syncs = CompanionSyncs(name)
        self._on_lost = on_lost
        # An outage or a full disk fails every resource in turn: one warning of each
        # kind a minute, with a count of those held back.
        self._failures_log = LimitedLog(log)
        # Told the claim of a resource about to fail here, before this table lets go
        # of it (`fail`); it may hold that resource's `io_lock`, and must take no
        # `io_lock` itself (`ReplicatingContentRepository` retires the resource on
        # every other replica, without closing it there).
        self.on_failing: Callable[[ResourceClaim], None] | None = None

    def check_open(self) -> None:
        if self.closed:
            raise RepositoryClosed(f"content repository {self.name} is closed")

    def open_resources(self) -> set[ResourceClaim]:
        """Resources held open: being or to be appended to, or still being closed."""
        with self.lock:
            return set(self.open) | set(self.closing)

    def retired_waiting(self) -> bool:
        """Whether a retired resource nobody writes is still open: its files are closed
        by the next sync (`retire_later_locked`, or retired with unsynced claims)."""
        with self.lock:
            return any(r.retired and not r.writing and not r.failed for r in self.open.values())

    def stop_appending_locked(self, resource: OpenResource) -> OpenResource | None:
        """Take the resource out of `appendable` and retire it. Caller holds `lock`."""
        try:
            self.appendable.remove(resource)
        except ValueError:
            pass
        return self.retire_locked(resource)

    def retire_later_locked(self, resource: OpenResource) -> None:
        """Take the resource out of `appendable` and mark it retired, leaving its files
        for the next sync to close (a caller that may hold another resource's `io_lock`
        must not close one here). Caller holds `lock`."""
        try:
            self.appendable.remove(resource)
        except ValueError:
            pass
        resource.retired = True
        if self.claimants.get(resource.claim) == 0:
            self.zero.add(resource.claim)

    def retire_locked(self, resource: OpenResource) -> OpenResource | None:
        """Mark retired; returns the resource if its file can be closed now (nothing
        completed is waiting for a sync), else it stays open until a sync. Caller holds `lock`."""
        resource.retired = True
        if self.claimants.get(resource.claim) == 0:
            self.zero.add(resource.claim)
        if resource.failed or resource.synced >= resource.completed:
            self.open.pop(resource.claim, None)
            if not resource.failed:
                self.closing[resource.claim] = resource
            return resource
        return None

    def close_file(self, resource: OpenResource) -> None:
        """Close a retired resource's files: here, or on the background closer when the
        table has one (an HDFS close waits for the NameNode to complete the file, tens
        of milliseconds that no commit needs to wait for: its claims are already
        hsynced). Until then the resource stays in `closing`; see `wait_closed`."""
        if self._closer is not None and not self.closed:
            self._closer.submit(self._close_now, resource)
        else:
            self._close_now(resource)

    def _close_now(self, resource: OpenResource) -> None:
        try:
            with resource.io_lock:
                try:
                    resource.close_files()
                except StorageError as error:
                    if not resource.failed and resource.synced < resource.completed:
                        self.fail(resource, error)
                    else:
                        self.log_failure(
                            "close",
                            "closing %s failed after its claims were synced: %s",
                            resource.claim.relative_path,
                            error,
                        )
        finally:
            self._closed(resource)

    def _closed(self, resource: OpenResource) -> None:
        with self.lock:
            if self.closing.get(resource.claim) is resource:
                del self.closing[resource.claim]
        resource.closed.set()

    def wait_closed(self, claim: ResourceClaim, timeout: float) -> bool:
        """Wait until the files of `claim`, if a close of them is under way, are closed;
        False if that did not happen within `timeout` seconds."""
        with self.lock:
            resource = self.closing.get(claim)
        return resource is None or resource.closed.wait(timeout)

    def shutdown_closer(self, *, wait: bool = True) -> None:
        """Wait for the background closes under way (a repository that closes); without
        `wait`, leave them (an abandoned repository's closes are of abandoned files)."""
        if self._closer is not None:
            self._closer.shutdown(wait=wait)

    def abandon(self, why: str) -> list[OpenResource]:
        """The repository is abandoned (`ContentRepository.abandon`): closed at once to
        writers, every resource it holds open (appendable, being written, or being
        closed) failed and retired, their completed but unsynced claims reported lost
        (a session that holds one can never commit it), without taking any resource's
        `io_lock` (a sync or close in flight holds it until its storage answers).
        Returns those resources, whose files the caller abandons."""
        with self.lock:
            self.closed = True
            resources = [*self.open.values(), *self.closing.values()]
            self.open.clear()
            self.closing.clear()
            self.appendable.clear()
            for resource in resources:
                if not resource.failed and resource.completed > resource.synced:
                    self._on_lost(resource.claim, resource.synced, resource.completed, why)
                resource.failed = resource.retired = True
        return resources

    def fail(self, resource: OpenResource, error: StorageError) -> None:
        """A write, sync or close of this resource failed: retire it, report lost claims.
        `on_failing` is told first, while the resource is still held here."""
        if self.on_failing is not None and not resource.failed:
            self.on_failing(resource.claim)
        with self.lock:
            if resource.failed:
                return
            resource.failed = True
            resource.retired = True
            self.open.pop(resource.claim, None)
            try:
                self.appendable.remove(resource)
            except ValueError:
                pass
            if resource.completed > resource.synced:
                self._on_lost(resource.claim, resource.synced, resource.completed, str(error))
            if self.claimants.get(resource.claim) == 0:
                self.zero.add(resource.claim)
        for file in (resource.file, resource.checksum_file):
            try:
                file.close()
            except (StorageError, OSError):
                pass  # the resource already failed; its unsynced bytes are gone either way
        self._closed(resource)
        if isinstance(error, StorageFull):
            self.log_failure(
                "full",
                "content resource %s was retired: its storage is full (%s); writes fail until "
                "space is freed (or the archive ages off)",
                resource.claim.relative_path,
                error,
            )
        else:
            self.log_failure(
                "failed", "content resource %s failed and was retired: %s", resource.claim.relative_path, error
            )

    def log_failure(self, kind: str, message: str, *args) -> None:
        """Log a failure of `kind` that an outage repeats for every resource (`LimitedLog`)."""
        self._failures_log.warning(f"{self.name}:{kind}", message, *args)
