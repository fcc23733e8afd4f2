"""The merge after a rollover: one generation's journals become one event file.

The generation's events, sorted by id, are written as `<first-id>.prov.partial` and
`.toc.partial`, compressed in blocks and fsynced; the rename of the `.prov` file is
the commit point. Only then are the journals deleted, one by one, so a crash at any
step leaves either every journal and no committed file (recovery merges again), or
the committed file, which holds every event of the journals, beside those journals
not deleted yet (recovery deletes them). Event files are spread over the containers
round-robin.

Once a file is committed and its journals are gone, the merger tells the listener
given as `on_event_file` (the Parquet export wakes on it). The listener runs on the
merge thread, so it must only take note and return; if it raises, the failure is
logged and the merge goes on: a listener never breaks the repository.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

import pyarrow as pa

from . import files
from .config import ProvenanceConfig
from .event_batch import concat_sorted
from .event_file import write_event_file
from .event_files import EventFileEntry, EventFileTable
from .hooks import ProvenanceHooks
from .layout import ProvenanceLayout

log = logging.getLogger(__name__)

EventFileListener = Callable[[EventFileEntry], None]


class Merger:
    """Merges generations; used by the merge thread only (and by recovery before it starts)."""

    def __init__(
        self,
        layout: ProvenanceLayout,
        table: EventFileTable,
        config: ProvenanceConfig,
        seams: Callable[[], ProvenanceHooks],
        stage_s: dict[str, float],
        on_event_file: EventFileListener | None = None,
    ):
        self._layout, self._table, self._config = layout, table, config
        self._on_event_file = on_event_file
        self._seams = seams  # the repository's seams as they are now
        self._stage_seconds = stage_s
        self._merged = 0  # picks the container of the next event file

    def merge(self, first_id: int, batches: list[pa.RecordBatch], journal_paths: list[str]) -> pa.Table:
        """Journals of one generation -> one event file; then delete the journals.
        Returns the merged events (empty if the generation held none)."""
        seams = self._seams()
        seams.merge_journals_read(first_id=first_id)
        started = time.perf_counter()
        table = concat_sorted(batches)
        entry = None
        if table.num_rows:
            containers = self._layout.containers
            container = containers[self._merged % len(containers)]
            self._merged += 1
            info = write_event_file(
                self._layout.events_directory(container),
                first_id,
                table,
                block_bytes=self._config.block_bytes,
                level=self._config.compression_level,
                threads=self._config.compression_threads,
                before_commit=lambda path: seams.merge_before_commit(path=path),
                toc_committed=lambda path: seams.merge_toc_committed(path=path),
            )
            entry = self._table.add(info.path)
            self._stage_seconds["merge"] += time.perf_counter() - started
            seams.merge_before_journal_delete(first_id=first_id)
        for path in journal_paths:
            files.delete(path)
            seams.merge_journal_deleted(first_id=first_id, path=path)
        for directory in {os.path.dirname(p) for p in journal_paths}:
            files.fsync_directory(directory)
        if entry is not None:
            self._tell(entry)
        return table

    def _tell(self, entry: EventFileEntry) -> None:
        if self._on_event_file is None:
            return
        try:
            self._on_event_file(entry)
        except Exception as error:  # noqa: BLE001 - a listener never breaks the repository
            log.error("provenance: the listener of event file %s failed: %s", entry.path, error)
