"""Syncing: group commit of every open resource, and the claims a failure lost.

`ResourceSyncer.sync()` makes every claim closed so far durable: one fdatasync (or
hsync) of each resource file with unsynced bytes and of its checksum file, resources
in parallel, then one fsync per directory that gained new files; it also closes the files of retired resources once
their claims are synced.

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
        """fdatasync/hsync every target, in parallel (the journal of a local file
        system commits concurrent fsyncs together; HDFS pipelines run side by side),
        then fsync each new file's directory once, not once per file."""
        if len(targets) > 1:
            results = list(self._pool.executor().map(self._sync_data, targets))
        else:
            results = [self._sync_data(resource) for resource in targets]
        outcomes: list[StorageError | None] = []
        directories: dict[str, StorageError | None] = {}
        for resource, (end, error) in zip(targets, results, strict=False):
            if error is None and end is not None:
                directory = resource.file.unsynced_directory()
                if directory is not None:
                    if directory not in directories:
                        try:
                            self._storage.sync_directory(directory)
                            directories[directory] = None
                        except StorageError as failure:
                            directories[directory] = failure
                    error = directories[directory]
                    if error is None:
                        resource.directory_synced()
                if error is None:
                    with resource.io_lock:
                        resource.synced = max(resource.synced, end)
            outcomes.append(error)
        return outcomes

    def _sync_data(self, resource: OpenResource) -> tuple[int | None, StorageError | None]:
        """(bytes now durable, or None if nothing was to sync; the error of a failed sync)."""
        with resource.io_lock:
            if resource.failed or resource.length <= resource.synced:
                return None, None
            end = resource.length
            try:
                resource.sync_data(self._table.companion_syncs)
            except StorageError as error:
                return None, error
            return end, None

    def shutdown(self, *, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)
        self._table.companion_syncs.shutdown(wait=wait)
