"""Syncing: group commit of every open resource, and the claims a failure lost.

`ResourceSyncer.sync()` makes every claim closed so far durable: one fdatasync (or
hsync) of each resource file with unsynced bytes and of its checksum file, resources
in parallel (and an fsync of a new file's directory); it also closes the files of
retired resources once their claims are synced.

Group commit: a resource is synced in rounds (`SyncRound`). A round hands the
resource's pending bytes to its files under `io_lock`, then syncs them without it,
so the writers of the next commits go on meanwhile; every commit whose claims the
round covers waits for it rather than syncing again, and a commit that arrives
during a round that does not cover its claims waits for it, then for the next one,
which covers every commit that arrived meanwhile. One round at a time per resource.

Lost ranges: completed claims whose bytes were not yet synced when their resource
failed are reported by the next `sync()` as `ContentWriteFailed.lost`, and are
remembered for the repository's life (a few entries per outage). That `sync()` may
be another session's, since a sync covers every open resource, so before it commits
each session asks `check_durable(its claims)`, which raises `ContentWriteFailed` for
a claim in a lost range. The sessions holding such claims roll back; no record ever
points at bytes only one replica kept.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from repositories.claims import ContentClaim, ResourceClaim
from repositories.storage import Storage, StorageError

from .errors import ContentWriteFailed, translate_storage_error
from .pools import LazyPool
from .resources import OpenResource, ResourceTable


class LostRanges:
    """Byte ranges of failed resources that held completed, unsynced claims.

    `_lock` guards `_unreported` (not yet told to a `sync()`) and `_lost` (kept)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._unreported: list[tuple[ResourceClaim, int, int, str]] = []
        self._lost: dict[ResourceClaim, list[tuple[int, int, str]]] = {}

    def record(self, resource: ResourceClaim, start: int, end: int, why: str) -> None:
        with self._lock:
            self._unreported.append((resource, start, end, why))
            self._lost.setdefault(resource, []).append((start, end, why))

    def take_unreported(self) -> list[tuple[ResourceClaim, int, int, str]]:
        with self._lock:
            unreported, self._unreported = self._unreported, []
        return unreported

    def check_durable(self, claims: Iterable[ContentClaim]) -> None:
        """Raise `ContentWriteFailed` if any of `claims` has bytes in a lost range."""
        with self._lock:
            if not self._lost:
                return
            hits = [
                (claim, start, end, why)
                for claim in claims
                for start, end, why in self._lost.get(claim.resource, ())
                if claim.offset < end and claim.offset + claim.length > start
            ]
        if hits:
            detail = "; ".join(
                f"{claim.resource.relative_path}@{claim.offset}+{claim.length} in lost bytes {start}..{end} ({why})"
                for claim, start, end, why in hits[:3]
            )
            raise ContentWriteFailed(
                f"{len(hits)} claims of this session point at content a failed write lost: {detail}; "
                "the session must roll back",
                lost=tuple((claim.resource, start, end) for claim, start, end, _ in hits),
            )


class SyncRound:
    """One sync of a resource's files: the bytes handed to them before it began (up to
    `end`) are durable once `done` is set without an `error`. Every commit that needs
    those bytes waits for the same round (group commit)."""

    __slots__ = ("end", "done", "error")

    def __init__(self, end: int):
        self.end = end
        self.done = threading.Event()
        self.error: StorageError | None = None


class ResourceSyncer:
    """Syncs the open resources of one `ResourceTable` (see the module docstring)."""

    def __init__(self, table: ResourceTable, lost: LostRanges, storage: Storage, *, retire_by_default: bool):
        self._table = table
        self._lost = lost
        self._storage = storage
        self._retire_by_default = retire_by_default
        self._pool = LazyPool(f"{table.name}-sync", 8)  # for syncs of more than one resource

    def sync(self, *, retire: bool | None = None) -> None:
        """Make every claim closed so far durable (and, with `retire`, close every
        resource nobody is writing). Raises `ContentWriteFailed` listing any completed
        claim range whose bytes were lost since the last sync."""
        table = self._table
        retire = self._retire_by_default if retire is None else retire
        with table.lock:
            targets = [r for r in table.open.values() if r.length > r.synced or r.retired or (retire and not r.writing)]
        first_error: StorageError | None = None
        outcomes = self._sync_all(targets)
        for resource, failure in zip(targets, outcomes, strict=False):
            if failure is not None:
                first_error = first_error or failure
                table.fail(resource, failure)
                continue
            to_close = None
            with table.lock:
                if not resource.writing and (resource.retired or retire) and not resource.failed:
                    to_close = table.stop_appending_locked(resource)
            if to_close is not None:
                table.close_file(to_close)
        failures = self._lost.take_unreported()
        if failures:
            lost = tuple((claim, start, end) for claim, start, end, _ in failures)
            detail = "; ".join(
                f"{claim.relative_path} bytes {start}..{end}: {why}" for claim, start, end, why in failures
            )
            error = ContentWriteFailed(
                f"content written since the last sync was lost ({detail}); the sessions "
                "holding claims in those ranges must roll back",
                lost=lost,
            )
            if first_error is not None:
                raise translate_storage_error(first_error) from error
            raise error

    def _sync_all(self, targets: list[OpenResource]) -> list[StorageError | None]:
        """Make every target durable up to the claims completed when this sync began,
        resources side by side (the journal of a local file system commits concurrent
        fsyncs together; HDFS pipelines run side by side), each through its sync rounds
        (`SyncRound`): a round under way that covers those claims is waited for, not
        repeated; one that does not is waited for, then the next round, which flushes
        everything written meanwhile, covers them and every commit waiting with them."""
        # A claim completed before this sync began ends at or before `completed` (read
        # without the writer's lock: it only grows, and this thread completed its own).
        wanted = {id(r): r.completed if r.completed > r.synced else r.length for r in targets}
        outcomes: dict[int, StorageError | None] = {}
        waiting = list(targets)
        while waiting:
            joined: list[tuple[OpenResource, SyncRound]] = []
            started: list[tuple[OpenResource, SyncRound]] = []
            for resource in waiting:
                round_, is_new, error = self._round_for(resource, wanted[id(resource)])
                if round_ is None:
                    outcomes[id(resource)] = error
                else:
                    (started if is_new else joined).append((resource, round_))
            # Rounds this sync started run on the pool, but one, run here.
            for resource, round_ in started[1:]:
                self._pool.submit(self._run_round, resource, round_)
            if started:
                self._run_round(*started[0])
            waiting = []
            for resource, round_ in [*started, *joined]:
                round_.done.wait()
                if round_.error is not None:
                    outcomes[id(resource)] = round_.error
                else:
                    waiting.append(resource)  # covered by it, or by the next round
        return [outcomes[id(resource)] for resource in targets]

    def _round_for(self, resource: OpenResource, wanted: int) -> tuple[SyncRound | None, bool, StorageError | None]:
        """The round to wait for to have `resource` durable up to `wanted`: the one
        under way, or a new one (flushed now; True); None when nothing is to sync, or
        with the error of a failed flush."""
        with resource.io_lock:
            if resource.failed or resource.synced >= wanted or resource.length <= resource.synced:
                return None, False, None
            current = resource.sync_round
            if isinstance(current, SyncRound):
                return current, False, None
            try:
                resource.flush_pending()
            except StorageError as error:
                return None, False, error
            round_ = resource.sync_round = SyncRound(resource.length)
            return round_, True, None

    def _run_round(self, resource: OpenResource, round_: SyncRound) -> None:
        """hsync/fdatasync both files of `resource` (and, for new files, their
        directory), then mark the round's bytes durable and wake its waiters."""
        error: StorageError | None = None
        durable = False
        try:
            resource.sync_flushed(self._table.companion_syncs)
            directory = resource.file.unsynced_directory()
            if directory is not None:
                self._storage.sync_directory(directory)
                resource.directory_synced()
            durable = True
        except StorageError as failure:
            error = failure
        finally:
            if not durable and error is None:  # anything else (a crash in a test's hook): not durable either
                error = StorageError(f"the sync of {resource.claim.relative_path} did not finish", resource.root)
            with resource.io_lock:
                if durable:
                    resource.synced = max(resource.synced, round_.end)
                resource.sync_round = None
            round_.error = error
            round_.done.set()

    def shutdown(self, *, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)
        self._table.companion_syncs.shutdown(wait=wait)
