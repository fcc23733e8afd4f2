"""`SwapStore`: swap files in one directory of a `Storage` (local disk or HDFS).

A swap file's name is `<queue>.<sequence>.<random>.swap`, unique across restarts.
`write` syncs the file before it returns, because the caller records it in the WAL
next and the WAL must never point at bytes that a crash could lose. `read_summary`
reads only the summary (a restart registers swapped FlowFiles without loading them).

Thread-safety: every method may be called concurrently; files are never shared
between calls (each is written once by the call that created it).
"""

from __future__ import annotations

import itertools
import re
import uuid

from ..storage import StorageError, StorageFileNotFound, join
from . import format as fmt
from .errors import CorruptSwapFileError, SwapFileMissingError, SwapWriteError
from .hooks import SwapHooks

SUFFIX = ".swap"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
# Enough for the summary of a typical batch; a larger summary is read in a second step.
SUMMARY_PROBE = 64 * 1024


class SwapStore:
    def __init__(self, storage, directory: str, *, hooks=None):
        self.storage = storage
        self.directory = directory.rstrip("/") or "/"
        self._hooks = SwapHooks.coerce(hooks)
        self._sequence = itertools.count()
        self._incarnation = uuid.uuid4().hex[:12]

    def prepare(self) -> None:
        if not self.storage.exists(self.directory):
            self.storage.mkdir(self.directory, parents=True, exist_ok=True)

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
        data = self._read(location, 0, SUMMARY_PROBE)
        try:
            return fmt.unpack_summary(data, location)[0]
        except CorruptSwapFileError:
            if len(data) < SUMMARY_PROBE:
                raise
        return fmt.unpack_summary(self._read(location), location)[0]

    def read(self, location: str) -> tuple[fmt.SwapSummary, list]:
        """The summary and every FlowFileRecord of the file (queue ids restored)."""
        data = self._read(location)
        summary, offset = fmt.unpack_summary(data, location)
        return summary, fmt.unpack_records(data, offset, location, summary.queue, summary.count)

    def delete(self, location: str) -> bool:
        return self.storage.delete(location)

    def locations(self) -> list[str]:
        if not self.storage.exists(self.directory):
            return []
        return sorted(s.path for s in self.storage.list(self.directory) if s.name.endswith(SUFFIX))

    def _read(self, location: str, offset: int = 0, length: int | None = None) -> bytes:
        try:
            return self.storage.read(location, offset, length)
        except StorageFileNotFound:
            raise SwapFileMissingError(location) from None

    def _discard(self, location: str) -> None:
        try:
            self.storage.delete(location)
        except StorageError:
            pass  # an unrecorded swap file is removed as an orphan at the next restart
