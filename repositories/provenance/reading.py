"""Reading events back: by id, in sequence, by query, and as lineage.

An event is found by id through the event-file table and the file's table of
contents, so reading one event decompresses at most one block. A query asks the
index for ids, then reads them grouped by block. Hits in files that were aged off
are counted and skipped; a damaged block costs only its own events.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from .errors import CorruptBlockError, EventNotFoundError
from .event import ProvenanceEvent
from .event_batch import to_events
from .event_files import EventFileEntry, EventFileTable
from .index import ShardedIndex
from .lineage import LineageGraph, compute_lineage
from .query import ProvenanceQuery, QueryResult


class EventReader:
    def __init__(self, table: EventFileTable, index: ShardedIndex):
        self._table = table
        self._index = index

    def _rows(self, entry: EventFileEntry, block: int, ids: list[int]) -> list[ProvenanceEvent]:
        batch = self._table.block(entry, block)
        first = entry.reader.blocks[block].first_id
        column = batch.column(0)
        rows = []
        for event_id in ids:
            row = event_id - first
            if not (0 <= row < batch.num_rows and column[row].as_py() == event_id):
                found = pc.index(column, event_id).as_py()
                if found < 0:
                    continue
                row = found
            rows.append(row)
        return to_events(batch.take(pa.array(rows, pa.int64()))) if rows else []

    def get(self, event_id: int) -> ProvenanceEvent:
        """One event by id; decompresses at most one block."""
        entry = self._table.entry_for(event_id)
        if entry is None:
            raise EventNotFoundError(
                event_id, "no event file holds it (not rolled over yet, aged off, or never written)"
            )
        block = entry.reader.block_index_for(event_id)
        found = self._rows(entry, block, [event_id]) if block is not None else []
        if not found:
            raise EventNotFoundError(event_id, f"not in event file {entry.path}")
        return found[0]

    def events(self, start_id: int, count: int, *, skip_damaged: bool = False) -> list[ProvenanceEvent]:
        """Up to `count` events with ids >= start_id, in id order (sequential retrieval).

        A damaged block raises CorruptBlockError, or with `skip_damaged` is passed over.
        """
        out: list[ProvenanceEvent] = []
        entries = self._table.entries()
        starts = [entry.first_id for entry in entries]
        i = max(0, bisect.bisect_right(starts, start_id) - 1)
        for entry in entries[i:]:
            if len(out) >= count or entry.last_id < start_id:
                continue
            for b, info in enumerate(entry.reader.blocks):
                if info.last_id < start_id:
                    continue
                try:
                    batch = self._table.block(entry, b)
                except CorruptBlockError:
                    if skip_damaged:
                        continue
                    raise
                ids = batch.column(0)
                keep = batch.filter(pc.greater_equal(ids, start_id)).slice(0, count - len(out))
                out += to_events(keep)
                if len(out) >= count:
                    break
        return out

    def query(self, query: ProvenanceQuery) -> QueryResult:
        """Events matching every given field and the time range, newest first."""
        if query.flowfile_uuid is None:
            return self._query_once(query)[0]
        # The index finds uuids by key, which two uuids may share: drop the events that
        # do not name the uuid, and ask again for more when that left the limit unfilled.
        wanted = query.flowfile_uuid
        asked = query
        while True:
            result, ids = self._query_once(asked)
            result.events = [e for e in result.events if _names_uuid(e, wanted)]
            if result.hits < asked.limit or len(result.events) >= query.limit:
                if len(result.events) > query.limit:
                    _keep_newest(result, ids, query.limit)
                return result
            asked = dataclasses.replace(asked, limit=asked.limit * 2)

    def _query_once(self, query: ProvenanceQuery) -> tuple[QueryResult, list[int]]:
        hits = self._index.search(query)
        ids = hits.ids
        result = QueryResult(
            shards_searched=hits.shards_searched,
            shards_skipped=hits.shards_skipped,
            total=hits.total,
            hits=len(ids),
            newest_hit_id=hits.newest_id,
            last_hit_id=ids[-1] if ids else None,
        )
        groups: dict[tuple[int, int], list[int]] = {}
        entries: dict[int, EventFileEntry] = {}
        for event_id in ids:
            entry = self._table.entry_for(event_id)
            block = entry.reader.block_index_for(event_id) if entry is not None else None
            if block is None:
                result.skipped_missing += 1  # its event file has been aged off
                continue
            entries[entry.first_id] = entry
            groups.setdefault((entry.first_id, block), []).append(event_id)
        for (first_id, block), group in groups.items():
            try:
                result.events += self._rows(entries[first_id], block, group)
            except CorruptBlockError as error:
                result.errors += [(event_id, str(error)) for event_id in group]
        result.events.sort(key=lambda e: e.event_id, reverse=True)
        return result, ids

    def lineage(self, flowfile_uuid: str, *, max_flowfiles: int = 10_000) -> LineageGraph:
        """Ancestors and descendants of a FlowFile across FORK, CLONE, JOIN and REPLAY."""

        def naming(uuid: str) -> Iterable[ProvenanceEvent]:
            return self.query(ProvenanceQuery(flowfile_uuid=uuid, limit=100_000)).events

        return compute_lineage(flowfile_uuid, naming, max_flowfiles=max_flowfiles)


def _keep_newest(result: QueryResult, ids: list[int], limit: int) -> None:
    """Cut `result` to its newest `limit` events, and its hits to those down to the
    last event kept: the next page starts right after it."""
    result.events = result.events[:limit]
    last = result.events[-1].event_id
    result.hits = sum(1 for event_id in ids if event_id >= last)
    result.last_hit_id = last
    result.errors = [(event_id, message) for event_id, message in result.errors if event_id >= last]


def _names_uuid(event: ProvenanceEvent, uuid: str) -> bool:
    return event.flowfile_uuid == uuid or uuid in event.parent_uuids or uuid in event.child_uuids
