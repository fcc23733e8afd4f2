"""`SwapStore`: swap files in one directory of a `Storage` (local disk or HDFS).

A swap file's name is `<queue>.<sequence>.<random>.swap`, unique across restarts.
`write` syncs the file before it returns, because the caller records it in the WAL
next and the WAL must never point at bytes that a crash could lose. `read_summary`
reads only the summary (a restart registers swapped FlowFiles without loading them).

Locations are full paths, as the FlowFile WAL records them. A data directory that was
moved or copied still holds WAL records naming the old place: `rebase` maps such a
location to the file of the same name in this store's directories (the shard's WAL
calls it as it recovers, as a fenced shard's adopter relocates its swap files), so a
copy never reads, and never deletes, the swap files of the directory it came from.

Quarantine: a swap file that cannot be read is moved, never deleted, into the
quarantine directory beside the swap directory (`swap-quarantine/` beside `swap/`),
with the summary the node last read of it (`<name>.summary`, see `format`) so that a
restart still knows which content its FlowFiles hold. An operator replaces the file
there with a good copy of the same name; the shard retries it (`flow.unreadable_swap`).

`delete` refuses anything outside these two directories: a WAL record naming another
directory is never a reason to delete a file there.

Thread-safety: every method may be called concurrently; files are never shared
between calls (each is written once by the call that created it).
"""

from __future__ import annotations

import itertools
import re
import uuid
from typing import TYPE_CHECKING

from ..storage import StorageError, StorageFileNotFound, discard, join
from . import format as fmt
from .errors import CorruptSwapFileError, ForeignSwapFileError, SwapFileMissingError, SwapWriteError
from .hooks import SwapHooks

if TYPE_CHECKING:
    from repositories.storage import Storage

SUFFIX = ".swap"
QUARANTINE_SUFFIX = "-quarantine"  # the quarantine directory: the swap directory's name + this
SUMMARY_SUFFIX = ".summary"  # beside a quarantined file: its summary as last read
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
# Enough for the summary of a typical batch; a larger summary is read in a second step.
SUMMARY_PROBE = 64 * 1024


def _split(location: str) -> tuple[str, str]:
    """(directory, file name) of a storage path."""
    head, _, name = location.rstrip("/").rpartition("/")
    return head or "/", name


class SwapStore:
    def __init__(self, storage: Storage, directory: str, *, hooks=None):
        self.storage = storage
        self.directory = directory.rstrip("/") or "/"
        self.quarantine_directory = self.directory + QUARANTINE_SUFFIX
        self._hooks = SwapHooks.coerce(hooks)
        self._sequence = itertools.count()
        self._incarnation = uuid.uuid4().hex[:12]

    def prepare(self) -> None:
        if not self.storage.exists(self.directory):
            self.storage.mkdir(self.directory, parents=True, exist_ok=True)

    # -- where files are ----------------------------------------------------------------

    def rebase(self, location: str) -> str:
        """`location` in this store: a swap file recorded in another directory whose name
        is this store's swap or quarantine directory's (the data directory was moved or
        copied, the WAL still names the old place) is the file of the same name here.
        Anything else is returned unchanged."""
        folder, name = _split(location)
        if not name.endswith(SUFFIX):
            return location
        folder_name = _split(folder)[1]
        if folder_name == _split(self.directory)[1]:
            return join(self.directory, name)
        if folder_name == _split(self.quarantine_directory)[1]:
            return join(self.quarantine_directory, name)
        return location

    def is_quarantined(self, location: str) -> bool:
        return _split(location)[0] == self.quarantine_directory

    def quarantine_location(self, location: str) -> str:
        """Where `location` goes when it is quarantined."""
        return join(self.quarantine_directory, _split(location)[1])

    def swap_location(self, location: str) -> str:
        """Where a quarantined `location` was in the swap directory."""
        return join(self.directory, _split(location)[1])

    def owns(self, location: str) -> bool:
        """`location` is a file of this store's swap or quarantine directory."""
        return _split(location)[0] in (self.directory, self.quarantine_directory)

    # -- writing and reading ------------------------------------------------------------

    def write(self, queue: str, records) -> fmt.SwapSummary:
        """Write one batch durably; returns its summary (location = full path)."""
        records = list(records)
        name = f"{_UNSAFE.sub('_', queue)[:80]}.{next(self._sequence)}.{self._incarnation}{SUFFIX}"
        location = join(self.directory, name)
        summary = fmt.summarize(location, queue, records)
        data = fmt.pack_summary(summary) + fmt.pack_records(records)
        try:
            with self.storage.create(location) as file:
                file.write(data)
                self._hooks.before_swap_sync(location)
                # Durable before the WAL records it: a SwapOut pointing at lost bytes
                # would lose the whole batch.
                file.sync()
            self._hooks.after_swap_sync(location)
        except StorageError as error:
            self._discard(location)
            raise SwapWriteError(location, error) from error
        except BaseException:
            self._discard(location)
            raise
        return summary

    def read_summary(self, location: str) -> fmt.SwapSummary:
        """The file's summary; for a quarantined file whose own summary is unreadable,
        the one saved beside it when it was quarantined."""
        try:
            return self._read_summary(location)
        except (CorruptSwapFileError, SwapFileMissingError):
            if not self.is_quarantined(location):
                raise
            saved = self._saved_summary(location)
            if saved is None:
                raise
            return saved

    def _read_summary(self, location: str) -> fmt.SwapSummary:
        data = self._read(location, 0, SUMMARY_PROBE)
        try:
            return fmt.unpack_summary(data, location)[0]
        except CorruptSwapFileError:
            if len(data) < SUMMARY_PROBE:
                raise
        return fmt.unpack_summary(self._read(location), location)[0]

    def _saved_summary(self, location: str) -> fmt.SwapSummary | None:
        sidecar = location + SUMMARY_SUFFIX
        try:
            return fmt.unpack_saved_summary(self.storage.read(sidecar), location)
        except (StorageError, CorruptSwapFileError):
            return None

    def read(self, location: str) -> tuple[fmt.SwapSummary, list]:
        """The summary and every FlowFileRecord of the file (queue ids restored)."""
        data = self._read(location)
        summary, offset = fmt.unpack_summary(data, location)
        return summary, fmt.unpack_records(data, offset, location, summary.queue, summary.count)

    def exists(self, location: str) -> bool:
        return self.storage.exists(location)

    # -- deleting and listing -----------------------------------------------------------

    def delete(self, location: str) -> bool:
        """Delete a swap file of this store (and, if quarantined, its saved summary).
        Raises `ForeignSwapFileError` for a location outside its directories."""
        if not self.owns(location):
            raise ForeignSwapFileError(location, self.directory)
        deleted = self.storage.delete(location)
        if self.is_quarantined(location):
            self.storage.delete(location + SUMMARY_SUFFIX)
        return deleted

    def locations(self) -> list[str]:
        """The swap files of the swap directory (not the quarantined ones)."""
        return self._list(self.directory)

    def quarantined(self) -> list[str]:
        """The swap files of the quarantine directory."""
        return self._list(self.quarantine_directory)

    def _list(self, directory: str) -> list[str]:
        if not self.storage.exists(directory):
            return []
        return sorted(s.path for s in self.storage.list(directory) if s.name.endswith(SUFFIX))

    # -- quarantine ---------------------------------------------------------------------

    def quarantine(self, location: str, summary: fmt.SwapSummary | None = None) -> str:
        """Move the swap file at `location` into the quarantine directory (a rename: the
        bytes stay as they are, for repair and post-mortem) and return its new location.
        `summary`, the one read of it when it was registered, is saved beside it first.
        Raises StorageError (nothing moved) or SwapFileMissingError."""
        target = self.quarantine_location(location)
        if not self.storage.exists(self.quarantine_directory):
            self.storage.mkdir(self.quarantine_directory, parents=True, exist_ok=True)
        if summary is not None and summary.count:
            with self.storage.create(target + SUMMARY_SUFFIX, overwrite=True) as file:
                file.write(fmt.pack_saved_summary(summary))
                file.sync()
        try:
            self.storage.rename(location, target)
        except StorageFileNotFound:
            raise SwapFileMissingError(location) from None
        return target

    def unquarantine(self, location: str) -> str:
        """Move a quarantined file back to the swap directory (its quarantine could not be
        recorded in the WAL); returns its location there."""
        target = self.swap_location(location)
        self.storage.rename(location, target)
        self.storage.delete(location + SUMMARY_SUFFIX)
        return target

    # -- internals ----------------------------------------------------------------------

    def _read(self, location: str, offset: int = 0, length: int | None = None) -> bytes:
        try:
            return self.storage.read(location, offset, length)
        except StorageFileNotFound:
            raise SwapFileMissingError(location) from None

    def _discard(self, location: str) -> None:
        """A swap file whose write failed, maybe still open (`repositories.storage.discard`)."""
        try:
            discard(self.storage, location)
        except StorageError:
            pass  # an unrecorded swap file is removed as an orphan at the next restart
