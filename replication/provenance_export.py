"""The export of a node's provenance event files to Parquet on HDFS, for Spark.

    exporter = ProvenanceExporter(storage, f"{layout.hdfs_cluster}/provenance", "n1", marker_dir)
    thread = ProvenanceExportThread(exporter)
    repository = ProvenanceRepository(config, on_event_file=thread.wake)
    thread.start(repository)            # exports what is pending, then on every rollover
    ...
    thread.stop()

The layout, names and schema are in `repositories.provenance.parquet_export`. Each
part is written through the storage protocol as a `_...partial` file, synced, then
renamed to its final name without replacing: a reader never sees half a file, and a
part that already exists (exported before a crash, or by a second pass) is skipped.

What was exported is remembered by an empty marker file per event file in a local
directory, written after every part of the event file is renamed into place. A marker
only spares work: a lost one makes the next pass find the parts and skip them.

A failure (HDFS down, a full quota) is logged in one line and ends the pass; the
next pass, at the next rollover or after `retry_interval_s`, exports every event file
not marked yet. The repository never waits on the export: the merge thread only wakes
the export thread.
"""

from __future__ import annotations

import io
import logging
import os
import threading
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from repositories.provenance.parquet_export import ExportPart, export_table, split_by_hour
from repositories.storage import Storage, StorageFileExists
from repositories.storage.local import make_private_directories

log = logging.getLogger(__name__)

MARKER_SUFFIX = ".exported"
DEFAULT_RETRY_INTERVAL_S = 30.0


@dataclass
class ExportPass:
    """What one pass did: parts written, parts found already there, event files done,
    and the error that ended it (None: every pending event file is exported)."""

    written: int = 0
    found: int = 0
    event_files: int = 0
    error: str | None = None


class ProvenanceExporter:
    """Exports event files of one node's repository under `root`. Used by one thread."""

    def __init__(self, storage: Storage, root: str, node: str, marker_directory: str):
        self.storage, self.root, self.node = storage, root.rstrip("/"), node
        self._markers = marker_directory
        make_private_directories(marker_directory)

    def export_pending(self, repository) -> ExportPass:
        """Export every event file of `repository` not marked as exported, oldest first."""
        done = ExportPass()
        entries = repository.event_files()
        self._forget_markers_except({entry.first_id for entry in entries})
        for entry in entries:
            if self._marked(entry.first_id):
                continue
            try:
                rows = repository.event_file_rows(entry.first_id)
                if rows is not None:  # None: aged off meanwhile
                    written, found = self.export_rows(rows)
                    done.written += written
                    done.found += found
                self._mark(entry.first_id)
                done.event_files += 1
            except Exception as error:  # noqa: BLE001 - logged and retried; never up into the repository
                done.error = f"{type(error).__name__}: {error}"
                log.error(
                    "provenance export of event file %s to %s stopped, retried later: %s",
                    entry.first_id,
                    self.root,
                    done.error.splitlines()[0][:300],
                )
                break
        return done

    def export_rows(self, rows: pa.Table) -> tuple[int, int]:
        """Rows of one event file (stored schema) -> its parts; returns (written, found)."""
        written = found = 0
        for part in split_by_hour(export_table(rows, self.node)):
            if self.write_part(part):
                written += 1
            else:
                found += 1
        return written, found

    def write_part(self, part: ExportPart) -> bool:
        """Write one part unless it is there already; True if this call wrote it."""
        final, partial = part.path(self.root, self.node), part.partial_path(self.root, self.node)
        if self.storage.exists(final):
            return False
        self.storage.mkdir(part.directory(self.root, self.node), parents=True, exist_ok=True)
        buffer = io.BytesIO()
        pq.write_table(part.rows, buffer, compression="zstd")
        # A partial left by a crash is replaced; the sync comes before the rename, so the
        # final name only ever points at complete bytes.
        with self.storage.create(partial, overwrite=True) as out:
            out.write(buffer.getbuffer())
            out.sync()
        try:
            self.storage.rename(partial, final, overwrite=False)
        except StorageFileExists:
            self.storage.delete(partial)  # another pass won the race with the same bytes
            return False
        return True

    # -- markers: which event files are exported (local, a cache of what HDFS holds) --

    def _marker(self, first_id: int) -> str:
        return os.path.join(self._markers, f"{first_id}{MARKER_SUFFIX}")

    def _marked(self, first_id: int) -> bool:
        return os.path.exists(self._marker(first_id))

    def _mark(self, first_id: int) -> None:
        # No fsync: a marker lost in a power cut costs one pass that finds every part.
        with open(self._marker(first_id), "wb"):
            pass

    def _forget_markers_except(self, kept: set[int]) -> None:
        """Delete the markers of event files the repository aged off."""
        for name in os.listdir(self._markers):
            stem = name[: -len(MARKER_SUFFIX)]
            if name.endswith(MARKER_SUFFIX) and stem.isdigit() and int(stem) not in kept:
                os.unlink(os.path.join(self._markers, name))


class ProvenanceExportThread:
    """Runs export passes on a thread of its own: at start, whenever `wake` is called
    (the repository's `on_event_file` listener), and every `retry_interval_s` while
    the last pass failed.

    Lock plan: none is needed. `_wake` and `_stopping` are Events; `last` is written
    by the export thread only and read by anyone as a snapshot."""

    def __init__(self, exporter: ProvenanceExporter, *, retry_interval_s: float = DEFAULT_RETRY_INTERVAL_S):
        self.exporter = exporter
        self.retry_interval_s = retry_interval_s
        self.last: ExportPass | None = None
        self.passes = 0
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, repository) -> None:
        self._wake.set()  # export what an earlier run left pending
        self._thread = threading.Thread(
            target=self._run, args=(repository,), daemon=True, name=f"provenance-export {self.exporter.node}"
        )
        self._thread.start()

    def wake(self, _entry=None) -> None:
        self._wake.set()

    def _run(self, repository) -> None:
        while not self._stopping.is_set():
            failed = self.last is not None and self.last.error is not None
            self._wake.wait(self.retry_interval_s if failed else None)
            if self._stopping.is_set():
                return
            self._wake.clear()
            self.last = self.exporter.export_pending(repository)
            self.passes += 1

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
