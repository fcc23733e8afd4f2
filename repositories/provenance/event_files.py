"""The event files a provenance repository holds, by first event id, and a cache of
their decompressed blocks.

Lock plan: `EventFileTable._lock` guards `_entries` and `_starts` (the sorted first
ids). `BlockCache._lock` guards the cache. Neither is held across I/O or while the
other is taken. Each `EventFile` reader is thread-safe on its own.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from . import files
from .errors import CorruptBlockError
from .event_batch import SCHEMA
from .event_file import EventFile
from .policies import EventFileSummary

log = logging.getLogger(__name__)

CACHED_BLOCKS = 32


@dataclass
class EventFileEntry:
    first_id: int
    last_id: int
    min_time_ms: int
    max_time_ms: int
    size: int
    path: str
    reader: EventFile | None = None


class BlockCache:
    """The most recently read decompressed blocks, by (event file, block index)."""

    def __init__(self, capacity: int = CACHED_BLOCKS):
        self._capacity = capacity
        self._lock = threading.Lock()
        self._blocks: OrderedDict[tuple[int, int], pa.RecordBatch] = OrderedDict()

    def get(self, key: tuple[int, int], load: Callable[[], pa.RecordBatch]) -> pa.RecordBatch:
        with self._lock:
            batch = self._blocks.get(key)
            if batch is not None:
                self._blocks.move_to_end(key)
                return batch
        batch = load()  # outside the lock: decompression takes milliseconds
        with self._lock:
            self._blocks[key] = batch
            while len(self._blocks) > self._capacity:
                self._blocks.popitem(last=False)
        return batch

    def forget_file(self, first_id: int) -> None:
        with self._lock:
            for key in [k for k in self._blocks if k[0] == first_id]:
                del self._blocks[key]


class EventFileTable:
    """Committed event files by first id; finds the file holding an event id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[int, EventFileEntry] = {}
        self._starts: list[int] = []
        self.blocks = BlockCache()

    def add(self, path: str) -> EventFileEntry:
        reader = EventFile(path)
        if reader.toc_rebuilt:
            log.warning("table of contents of %s unreadable (%s); rebuilt from block headers", path, reader.toc_rebuilt)
        entry = EventFileEntry(
            reader.first_id,
            reader.last_id,
            reader.min_time_ms,
            reader.max_time_ms,
            files.size_of(path) + files.size_of(reader.toc_path),
            path,
            reader,
        )
        with self._lock:
            if entry.first_id not in self._entries:
                bisect.insort(self._starts, entry.first_id)
            self._entries[entry.first_id] = entry
        return entry

    def remove(self, first_id: int) -> EventFileEntry | None:
        with self._lock:
            entry = self._entries.pop(first_id, None)
            if entry is not None:
                self._starts.remove(first_id)
        if entry is not None and entry.reader is not None:
            entry.reader.close()
        self.blocks.forget_file(first_id)
        return entry

    def get(self, first_id: int) -> EventFileEntry | None:
        with self._lock:
            return self._entries.get(first_id)

    def entry_for(self, event_id: int) -> EventFileEntry | None:
        """The file whose id range holds `event_id`, if any."""
        with self._lock:
            i = bisect.bisect_right(self._starts, event_id) - 1
            if i < 0:
                return None
            entry = self._entries[self._starts[i]]
        return entry if event_id <= entry.last_id else None

    def ids(self) -> set[int]:
        with self._lock:
            return set(self._entries)

    def entries(self) -> list[EventFileEntry]:
        """Every entry, in id order."""
        with self._lock:
            return [self._entries[s] for s in self._starts]

    def summaries(self) -> list[EventFileSummary]:
        with self._lock:
            return [EventFileSummary(e.first_id, e.size, e.max_time_ms) for e in self._entries.values()]

    def largest_id(self) -> int:
        with self._lock:
            return max((e.last_id for e in self._entries.values()), default=0)

    def total_bytes(self) -> int:
        with self._lock:
            return sum(e.size for e in self._entries.values())

    def block(self, entry: EventFileEntry, index: int) -> pa.RecordBatch:
        """Block `index` of the entry's file, decompressed (cached)."""
        return self.blocks.get((entry.first_id, index), lambda: entry.reader.read_block(index))

    def close(self) -> None:
        for entry in self.entries():
            if entry.reader is not None:
                entry.reader.close()


def read_rows(entry: EventFileEntry) -> pa.Table:
    """Every event of the entry's file, in id order; a damaged block is left out, and logged."""
    batches = []
    for i in range(len(entry.reader.blocks)):
        try:
            batches.append(entry.reader.read_block(i))
        except CorruptBlockError as error:
            log.error("leaving out a damaged block: %s", error)
    return pa.Table.from_batches(batches, schema=SCHEMA)
