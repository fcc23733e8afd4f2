"""Index feeding: each committed event file's events go into the current index shard.

The merge hands over the events it just wrote; a file recovery found committed but
not indexed is read back from disk (a damaged block is left out, and logged). The
shard's manifest lists the file only once its documents are committed, so an
interrupted indexing is redone after a restart.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from .event_file import EventFileInfo
from .event_files import EventFileTable, read_rows
from .hooks import ProvenanceHooks
from .index import ShardedIndex


class IndexFeeder:
    """Indexes event files; used by the index thread only."""

    def __init__(
        self,
        table: EventFileTable,
        index: ShardedIndex,
        seams: Callable[[], ProvenanceHooks],
        stage_s: dict[str, float],
        *,
        clock: Callable[[], float],
        on_indexed: Callable[[EventFileInfo, float], None] | None,
    ):
        self._table, self._index = table, index
        self._seams = seams  # the repository's seams as they are now
        self._stage_seconds = stage_s
        self._clock, self._on_indexed = clock, on_indexed

    def index_file(self, first_id: int, events: pa.Table | None) -> None:
        """Index the event file starting at `first_id`; `events` are its events, or
        None to read them from the file."""
        entry = self._table.get(first_id)
        if entry is None:
            return  # aged off before it was indexed
        if events is None:
            events = read_rows(entry)
        if events.num_rows:
            seams = self._seams()
            self._index.index_table(
                first_id,
                entry.last_id,
                entry.min_time_ms,
                entry.max_time_ms,
                events,
                before_commit=lambda: seams.index_before_commit(first_id=first_id),
                before_manifest=lambda: seams.index_before_manifest(first_id=first_id),
                timings=self._stage_seconds,
                merge_runs=False,  # the runs thread merges them (`background`)
            )
        if self._on_indexed is not None:
            self._on_indexed(
                EventFileInfo(
                    first_id,
                    entry.last_id,
                    events.num_rows,
                    entry.min_time_ms,
                    entry.max_time_ms,
                    entry.size,
                    0,
                    entry.path,
                ),
                self._clock(),
            )
