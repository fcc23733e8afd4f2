"""The provenance repository: journals, rollover, event files, index, queries, age-off.

Write path (NiFi's provenance repository design): `register_events` assigns ids, picks the next journal of the
current generation round-robin (containers x journals per container) and appends one
uncompressed frame. No compression, no indexing. A rollover (by time or size, see
`RolloverPolicy`) swaps in a new generation; the merge thread sorts the old
generation's events by id into one event file named after its first id, compressed in
~1 MB blocks with a table of contents, then deletes the journals; the index thread
indexes the file into the current shard. Age-off destroys the oldest event files and
then whole index shards.

On disk, in each container::

    journals/<first-id>.<slot>.journal      current and not yet merged generations
    events/<first-id>.prov, .toc            event files and their tables of contents
    index/shard-<created-ms>/               tantivy shards (first container only)
    layout.json                             the container list (first container only)

Lock plan:
  `_lock` guards the id generator and the current generation: ids are assigned and a
  journal slot chosen under it, so every id of generation N is below every id of
  generation N+1 (files never overlap). The journal write happens outside `_lock`,
  under the slot's own lock; the generation counts writers in flight, and a rollover
  waits for them to drain before closing the journals.
  `_rollover_lock` serialises rollovers. `_files_lock` guards the event-file table.
  `_work` (a Condition) guards the count of rolled generations not yet indexed.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import logging
import os
import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from . import event_file_format as eff
from . import files
from . import journal_format as jf
from .config import ProvenanceConfig
from .errors import CorruptBlockError, EventNotFoundError, ProvenanceError, RepositoryClosedError
from .event import ProvenanceEvent
from .event_batch import SCHEMA, EventBatch, concat_sorted, to_events
from .event_file import EventFile, EventFileInfo, write_event_file
from .hooks import ProvenanceHooks
from .index import ShardedIndex
from .journal import JournalWriter, read_journal
from .lineage import LineageGraph, compute_lineage
from .policies import EventFileSummary, plan_age_off, plan_recovery
from .query import ProvenanceQuery, QueryResult

log = logging.getLogger(__name__)

LAYOUT = "layout.json"
JOURNALS = "journals"
EVENTS = "events"
INDEX = "index"


@dataclass
class EventFileEntry:
    first_id: int
    last_id: int
    min_time_ms: int
    max_time_ms: int
    size: int
    path: str
    reader: EventFile | None = None


class _Generation:
    """The journals being written now. Counters are guarded by the repository's `_lock`."""

    def __init__(self, first_id: int, paths: list[tuple[str, int]], opened_at_s: float, sync: bool):
        self.first_id = first_id
        self.opened_at_s = opened_at_s
        self.journals = [JournalWriter(path, first_id, slot, sync_each_write=sync) for path, slot in paths]
        self.slot_locks = [threading.Lock() for _ in paths]
        self.batches: list[pa.RecordBatch] = []  # kept so the merge need not re-read the journals
        self.next_slot = 0
        self.events = 0
        self.bytes = 0
        self.in_flight = 0
        self.drained = threading.Condition()

    @property
    def paths(self) -> list[str]:
        return [j.path for j in self.journals]

    def wait_drained(self) -> None:
        with self.drained:
            while self.in_flight:
                self.drained.wait()

    def close(self) -> None:
        for journal in self.journals:
            journal.close()


class ProvenanceRepository:
    def __init__(self, config: ProvenanceConfig, *, clock: Callable[[], float] = time.time,
                 hooks: ProvenanceHooks | None = None, read_only: bool = False,
                 on_indexed: Callable[[EventFileInfo, float], None] | None = None):
        self.config = config
        self._clock = clock
        self._hooks = ProvenanceHooks.coerce(hooks)
        self._read_only = read_only
        self._on_indexed = on_indexed
        self._lock = threading.Lock()
        self._rollover_lock = threading.Lock()
        self._files_lock = threading.Lock()
        self._work = threading.Condition()
        self._pending = 0  # rolled generations not yet merged and indexed
        self._failure: BaseException | None = None
        self._closed = False
        self._entries: dict[int, EventFileEntry] = {}
        self._starts: list[int] = []
        self._cache: OrderedDict[tuple[int, int], pa.RecordBatch] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._merge_count = 0
        self.recovery_report: dict = {}
        # Seconds spent per stage (wall time of the thread doing it), for profiling.
        self.stage_seconds = {"journal_write": 0.0, "merge": 0.0, "index_documents": 0.0, "index_commit": 0.0}
        self.containers = [os.path.abspath(c) for c in config.containers]
        if not read_only:
            for container in self.containers:
                files.ensure_directory(os.path.join(container, JOURNALS))
                files.ensure_directory(os.path.join(container, EVENTS))
            self._write_layout()
        self.index = ShardedIndex(
            os.path.join(self.containers[0], INDEX), clock_ms=self._now_ms, shard_bytes=config.shard_bytes,
            writer_heap_bytes=config.index_heap_bytes, writer_threads=config.index_threads, read_only=read_only)
        self._load_event_files()
        self._next_id = self._largest_stored_id() + 1
        self._generation: _Generation | None = None
        self._merge_queue: queue.Queue = queue.Queue()
        self._index_queue: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        if read_only:
            return
        self._recover()
        self._generation = self._new_generation()
        for target, name in ((self._merge_loop, "provenance-merge"), (self._index_loop, "provenance-index")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        if config.rollover_check_interval_s or config.age_off_interval_s:
            thread = threading.Thread(target=self._timer_loop, name="provenance-timer", daemon=True)
            thread.start()
            self._threads.append(thread)

    # -- opening ----------------------------------------------------------------------

    @classmethod
    def open(cls, path: str, *, read_only: bool = True, **kwargs) -> "ProvenanceRepository":
        """Open the repository whose first container is `path` (reads its layout.json)."""
        layout = os.path.join(path, LAYOUT)
        containers: Sequence[str] = (path,)
        if os.path.exists(layout):
            containers = json.loads(files.read_all(layout))["containers"]
        elif not os.path.isdir(os.path.join(path, EVENTS)):
            raise ProvenanceError(f"{path} is not a provenance repository (no {LAYOUT}, no {EVENTS}/)")
        config = kwargs.pop("config", None) or ProvenanceConfig(
            containers=tuple(containers), rollover_check_interval_s=None, age_off_interval_s=None)
        return cls(config, read_only=read_only, **kwargs)

    def _write_layout(self) -> None:
        target = os.path.join(self.containers[0], LAYOUT)
        data = json.dumps({"format": 1, "containers": self.containers}, indent=1).encode()
        if os.path.exists(target) and files.read_all(target) == data:
            return
        files.delete(target + ".partial")
        files.write_new(target + ".partial", [data])
        files.rename(target + ".partial", target)
        files.fsync_directory(self.containers[0])

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- the event-file table ------------------------------------------------------

    def _events_dir(self, container: str) -> str:
        return os.path.join(container, EVENTS)

    def _journals_dir(self, container: str) -> str:
        return os.path.join(container, JOURNALS)

    def _load_event_files(self) -> None:
        for container in self.containers:
            directory = self._events_dir(container)
            for name in files.list_names(directory):
                parsed = eff.parse_name(name)
                if parsed and parsed[1] == eff.EVENT_SUFFIX and not parsed[2]:
                    self._add_entry(os.path.join(directory, name))

    def _add_entry(self, path: str, info: EventFileInfo | None = None) -> EventFileEntry:
        reader = EventFile(path)
        if reader.toc_rebuilt:
            log.warning("table of contents of %s unreadable (%s); rebuilt from block headers", path, reader.toc_rebuilt)
        entry = EventFileEntry(reader.first_id, reader.last_id, reader.min_time_ms, reader.max_time_ms,
                               files.size_of(path) + files.size_of(reader.toc_path), path, reader)
        with self._files_lock:
            if entry.first_id not in self._entries:
                bisect.insort(self._starts, entry.first_id)
            self._entries[entry.first_id] = entry
        return entry

    def _remove_entry(self, first_id: int) -> EventFileEntry | None:
        with self._files_lock:
            entry = self._entries.pop(first_id, None)
            if entry is not None:
                self._starts.remove(first_id)
        if entry is not None and entry.reader is not None:
            entry.reader.close()
        with self._cache_lock:
            for key in [k for k in self._cache if k[0] == first_id]:
                del self._cache[key]
        return entry

    def _largest_stored_id(self) -> int:
        with self._files_lock:
            return max((e.last_id for e in self._entries.values()), default=0)

    # -- recovery -------------------------------------------------------------------

    def _journal_paths(self) -> dict[int, list[str]]:
        found: dict[int, list[str]] = {}
        for container in self.containers:
            directory = self._journals_dir(container)
            for name in files.list_names(directory):
                parsed = jf.parse_journal_name(name)
                if parsed:
                    found.setdefault(parsed[0], []).append(os.path.join(directory, name))
        return found

    def _recover(self) -> None:
        journals = self._journal_paths()
        partials, tocs = [], set()
        for container in self.containers:
            directory = self._events_dir(container)
            for name in files.list_names(directory):
                parsed = eff.parse_name(name)
                if parsed is None:
                    continue
                if parsed[2]:
                    partials.append(os.path.join(directory, name))
                elif parsed[1] == eff.TOC_SUFFIX:
                    tocs.add(parsed[0])
        with self._files_lock:
            event_ids = set(self._entries)
        plan = plan_recovery(journal_generations=set(journals), event_files=event_ids, tocs=tocs,
                             partial_paths=partials)
        for path in plan.delete_partials:
            files.delete(path)
        for first_id in plan.discard_event_files:
            entry = self._remove_entry(first_id)
            if entry is not None:
                files.delete(entry.path)
        for first_id in plan.delete_orphan_tocs:
            for container in self.containers:
                files.delete(os.path.join(self._events_dir(container), eff.toc_name(first_id)))
        for container in self.containers:
            files.fsync_directory(self._events_dir(container))
        # Index documents that no manifest claims belong to interrupted indexing or to
        # discarded files; they are all at the end of the active shard.
        with self._files_lock:
            event_ids = set(self._entries)
        indexed = self.index.indexed_files()
        unindexed = sorted((event_ids - indexed) | set(plan.redo_merges))
        if unindexed:
            self.index.forget_from(unindexed[0])
        # The id generator resumes above every id in any journal or event file.
        largest = self._largest_stored_id()
        contents_by_generation = {}
        for first_id in plan.redo_merges:
            contents = [read_journal(p) for p in sorted(journals[first_id])]
            for c in contents:
                if c.cut_offset is not None:
                    log.warning("journal %s: cut %d bytes at offset %d (%s); those events were never "
                                "acknowledged", c.path, c.file_length - c.cut_offset, c.cut_offset, c.cut_reason)
                if c.max_id is not None:
                    largest = max(largest, c.max_id)
            contents_by_generation[first_id] = contents
        self._next_id = largest + 1
        for first_id in plan.redo_merges:
            batches = [b for c in contents_by_generation[first_id] for b in c.batches]
            with self._work:
                self._pending += 1  # settled by the index thread, as after a rollover
            self._merge(first_id, batches, journals[first_id])
        # Files committed but not indexed (crash during indexing): index them again.
        for first_id in sorted(set(self._entries) - indexed):
            if first_id not in plan.redo_merges:
                self._enqueue_index(first_id, None)
        self.recovery_report = {
            "deleted_partials": plan.delete_partials,
            "redone_merges": plan.redo_merges,
            "discarded_event_files": plan.discard_event_files,
            "reindexed_files": unindexed,
            "next_id": self._next_id,
        }
        if plan.redo_merges or plan.delete_partials:
            log.info("provenance recovery: %s", self.recovery_report)

    # -- writing --------------------------------------------------------------------

    def _new_generation(self) -> _Generation:
        paths, slot = [], 0
        for container in self.containers:
            for _ in range(self.config.journals_per_container):
                paths.append((os.path.join(self._journals_dir(container), jf.journal_name(self._next_id, slot)), slot))
                slot += 1
        return _Generation(self._next_id, paths, self._clock(), self.config.sync_journals)

    def register_events(self, events: Sequence[ProvenanceEvent], now_ms: int | None = None) -> range:
        """Store events; returns their ids. Thread-safe; the events are in the OS on return.
        Events without a time get `now_ms` (by default, the repository's clock now)."""
        if not events:
            return range(0)
        return self.register_batch(EventBatch.from_events(events, self._now_ms() if now_ms is None else now_ms))

    def register_batch(self, batch: EventBatch) -> range:
        """Store a columnar batch (the bulk path); returns the ids it got."""
        n = len(batch)
        if n == 0:
            return range(0)
        self._wait_for_capacity()
        with self._lock:
            if self._closed or self._generation is None:
                raise RepositoryClosedError("the provenance repository is closed (or read-only); "
                                            "open it again to register events")
            generation = self._generation
            first_id = self._next_id
            self._next_id += n
            slot = generation.next_slot
            generation.next_slot = (slot + 1) % len(generation.journals)
            generation.events += n
            generation.in_flight += 1
        try:
            started = time.perf_counter()
            stored = batch.with_ids(first_id)
            with generation.slot_locks[slot]:
                written = generation.journals[slot].append(stored)
                generation.batches.append(stored)
            with self._lock:
                generation.bytes += written
                self.stage_seconds["journal_write"] += time.perf_counter() - started
        finally:
            with generation.drained:
                generation.in_flight -= 1
                generation.drained.notify_all()
        if self.config.rollover.max_bytes is not None and generation.bytes >= self.config.rollover.max_bytes:
            self.maybe_rollover()
        return range(first_id, first_id + n)

    def _wait_for_capacity(self) -> None:
        with self._work:
            while self._pending >= self.config.max_pending_rollovers and self._failure is None and not self._closed:
                self._work.wait(1.0)
            self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise ProvenanceError(f"the provenance repository stopped after a failure in the background: "
                                  f"{self._failure!r}; restart it to recover") from self._failure

    def maybe_rollover(self) -> bool:
        """Roll over if the policy says so (time by the injected clock, or size)."""
        generation = self._generation
        if generation is None:
            return False
        due = self.config.rollover.due(opened_at_s=generation.opened_at_s, now_s=self._clock(),
                                       bytes_written=generation.bytes, events=generation.events)
        return self.rollover() if due else False

    def rollover(self) -> bool:
        """Close the current journals and queue them for merge; False if they were empty."""
        with self._rollover_lock:
            with self._lock:
                old = self._generation
                if old is None or old.events == 0:
                    if old is not None:
                        old.opened_at_s = self._clock()
                    return False
                self._generation = self._new_generation()
            old.wait_drained()
            old.close()
            with self._work:
                self._pending += 1
            self._merge_queue.put(old)
            return True

    # -- background work ------------------------------------------------------------

    def _merge_loop(self) -> None:
        while True:
            generation = self._merge_queue.get()
            if generation is None:
                return
            try:
                self._merge(generation.first_id, generation.batches, generation.paths)
            except BaseException as error:  # noqa: BLE001 - reported to writers and sync()
                self._fail(error)
                return

    def _merge(self, first_id: int, batches: list[pa.RecordBatch], journal_paths: list[str]) -> None:
        """Journals of one generation -> one event file; then delete the journals."""
        self._hooks.merge_journals_read(first_id=first_id)
        started = time.perf_counter()
        table = concat_sorted(batches)
        if table.num_rows:
            container = self.containers[self._merge_count % len(self.containers)]
            self._merge_count += 1
            info = write_event_file(
                self._events_dir(container), first_id, table, block_bytes=self.config.block_bytes,
                level=self.config.compression_level, threads=self.config.compression_threads,
                before_commit=lambda path: self._hooks.merge_before_commit(path=path))
            self._add_entry(info.path, info)
            self.stage_seconds["merge"] += time.perf_counter() - started
            self._hooks.merge_before_journal_delete(first_id=first_id)
        for path in journal_paths:
            files.delete(path)
        for directory in {os.path.dirname(p) for p in journal_paths}:
            files.fsync_directory(directory)
        if table.num_rows:
            self._enqueue_index(first_id, table)
        else:
            self._done_one()

    def _enqueue_index(self, first_id: int, table: pa.Table | None) -> None:
        if table is None:
            with self._work:
                self._pending += 1
        self._index_queue.put((first_id, table))

    def _index_loop(self) -> None:
        while True:
            item = self._index_queue.get()
            if item is None:
                return
            first_id, table = item
            try:
                self._index_file(first_id, table)
            except BaseException as error:  # noqa: BLE001
                self._fail(error)
                return
            self._done_one()

    def _index_file(self, first_id: int, table: pa.Table | None) -> None:
        with self._files_lock:
            entry = self._entries.get(first_id)
        if entry is None:
            return  # aged off before it was indexed
        if table is None:
            table = self._read_whole_file(entry)
        if table.num_rows:
            self.index.index_table(
                first_id, entry.last_id, entry.min_time_ms, entry.max_time_ms, table,
                before_manifest=lambda: self._hooks.index_before_manifest(first_id=first_id),
                timings=self.stage_seconds)
        if self._on_indexed is not None:
            self._on_indexed(EventFileInfo(first_id, entry.last_id, table.num_rows, entry.min_time_ms,
                                           entry.max_time_ms, entry.size, 0, entry.path), self._clock())

    def _read_whole_file(self, entry: EventFileEntry) -> pa.Table:
        batches = []
        for i in range(len(entry.reader.blocks)):
            try:
                batches.append(entry.reader.read_block(i))
            except CorruptBlockError as error:
                log.error("not indexing a damaged block: %s", error)
        return pa.Table.from_batches(batches, schema=SCHEMA)

    def _done_one(self) -> None:
        with self._work:
            self._pending -= 1
            self._work.notify_all()

    def _fail(self, error: BaseException) -> None:
        log.exception("provenance background work failed", exc_info=error)
        with self._work:
            self._failure = error
            self._work.notify_all()

    def _timer_loop(self) -> None:
        check = self.config.rollover_check_interval_s
        age = self.config.age_off_interval_s
        tick = min(x for x in (check, age) if x)
        last_age_off = time.monotonic()
        while not self._stop.wait(tick):
            try:
                if check:
                    self.maybe_rollover()
                if age and time.monotonic() - last_age_off >= age:
                    last_age_off = time.monotonic()
                    self.age_off()
            except ProvenanceError:
                pass  # already recorded by _fail; writers see it
            except BaseException as error:  # noqa: BLE001
                self._fail(error)
                return

    def sync(self, timeout: float = 60.0) -> None:
        """Roll over, then wait until every registered event is merged and searchable."""
        self.rollover()
        self.wait_idle(timeout)

    def wait_idle(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        with self._work:
            while self._pending and self._failure is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self._pending} rolled-over generations still not merged and "
                                       f"indexed after {timeout} s")
                self._work.wait(left)
            self._raise_failure()

    # -- age-off --------------------------------------------------------------------

    def age_off(self) -> list[int]:
        """Destroy event files past the age or size limit; then drop shards with no file left."""
        with self._files_lock:
            summaries = [EventFileSummary(e.first_id, e.size, e.max_time_ms) for e in self._entries.values()]
        max_age_ms = None if self.config.max_age_s is None else int(self.config.max_age_s * 1000)
        doomed = plan_age_off(summaries, now_ms=self._now_ms(), max_age_ms=max_age_ms,
                              max_bytes=self.config.max_bytes)
        directories = set()
        for first_id in doomed:
            entry = self._remove_entry(first_id)
            if entry is None:
                continue
            # The event file goes first: a TOC without its event file is an orphan that
            # recovery deletes, an event file without a TOC would be rebuilt.
            files.delete(entry.path)
            files.delete(entry.path[: -len(eff.EVENT_SUFFIX)] + eff.TOC_SUFFIX)
            directories.add(os.path.dirname(entry.path))
        for directory in directories:
            files.fsync_directory(directory)
        with self._files_lock:
            existing = set(self._entries)
        dropped = self.index.drop_shards_without_files(existing)
        if doomed:
            log.info("provenance age-off destroyed %d event files, %d index shards", len(doomed), len(dropped))
        return doomed

    # -- reading --------------------------------------------------------------------

    def _entry_for(self, event_id: int) -> EventFileEntry | None:
        with self._files_lock:
            i = bisect.bisect_right(self._starts, event_id) - 1
            if i < 0:
                return None
            entry = self._entries[self._starts[i]]
        return entry if event_id <= entry.last_id else None

    def _block(self, entry: EventFileEntry, index: int) -> pa.RecordBatch:
        key = (entry.first_id, index)
        with self._cache_lock:
            batch = self._cache.get(key)
            if batch is not None:
                self._cache.move_to_end(key)
                return batch
        batch = entry.reader.read_block(index)
        with self._cache_lock:
            self._cache[key] = batch
            while len(self._cache) > 32:
                self._cache.popitem(last=False)
        return batch

    def _rows(self, entry: EventFileEntry, block: int, ids: list[int]) -> list[ProvenanceEvent]:
        batch = self._block(entry, block)
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
        entry = self._entry_for(event_id)
        if entry is None:
            raise EventNotFoundError(event_id, "no event file holds it (not rolled over yet, aged off, "
                                               "or never written)")
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
        with self._files_lock:
            starts = list(self._starts)
            entries = [self._entries[s] for s in starts]
        i = max(0, bisect.bisect_right(starts, start_id) - 1)
        for entry in entries[i:]:
            if len(out) >= count or entry.last_id < start_id:
                continue
            for b, info in enumerate(entry.reader.blocks):
                if info.last_id < start_id:
                    continue
                try:
                    batch = self._block(entry, b)
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
            return self._query_once(query)
        # The index finds uuids by key, which two uuids may share: drop the events that
        # do not name the uuid, and ask again for more when that left the limit unfilled.
        wanted = query.flowfile_uuid
        asked = query
        while True:
            result = self._query_once(asked)
            found = len(result.events) + result.skipped_missing + len(result.errors)
            result.events = [e for e in result.events if _names_uuid(e, wanted)]
            if found < asked.limit or len(result.events) >= query.limit:
                result.events = result.events[: query.limit]
                return result
            asked = dataclasses.replace(asked, limit=asked.limit * 2)

    def _query_once(self, query: ProvenanceQuery) -> QueryResult:
        ids, searched, skipped = self.index.search(query)
        result = QueryResult(shards_searched=searched, shards_skipped=skipped)
        groups: dict[tuple[int, int], list[int]] = {}
        entries: dict[int, EventFileEntry] = {}
        for event_id in ids:
            entry = self._entry_for(event_id)
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
        return result

    def lineage(self, flowfile_uuid: str, *, max_flowfiles: int = 10_000) -> LineageGraph:
        """Ancestors and descendants of a FlowFile across FORK, CLONE, JOIN and REPLAY."""

        def naming(uuid: str) -> Iterable[ProvenanceEvent]:
            return self.query(ProvenanceQuery(flowfile_uuid=uuid, limit=100_000)).events

        return compute_lineage(flowfile_uuid, naming, max_flowfiles=max_flowfiles)

    # -- status and shutdown -------------------------------------------------------

    @property
    def next_event_id(self) -> int:
        return self._next_id

    def event_files(self) -> list[EventFileEntry]:
        with self._files_lock:
            return [self._entries[s] for s in self._starts]

    def storage_bytes(self) -> int:
        with self._files_lock:
            return sum(e.size for e in self._entries.values())

    def close(self, timeout: float = 120.0) -> None:
        """Merge and index what was registered, then stop the background threads."""
        if self._closed:
            return
        if not self._read_only and self._failure is None:
            self.sync(timeout)
        with self._lock:
            self._closed = True
            generation, self._generation = self._generation, None
        if generation is not None:
            generation.wait_drained()
            generation.close()
            if generation.events == 0:
                for path in generation.paths:
                    files.delete(path)
        self._stop.set()
        self._merge_queue.put(None)
        self._index_queue.put(None)
        for thread in self._threads:
            thread.join(timeout)
        self.index.close()
        with self._files_lock:
            for entry in self._entries.values():
                if entry.reader is not None:
                    entry.reader.close()
        with self._work:
            self._work.notify_all()

    def __enter__(self) -> "ProvenanceRepository":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _names_uuid(event: ProvenanceEvent, uuid: str) -> bool:
    return event.flowfile_uuid == uuid or uuid in event.parent_uuids or uuid in event.child_uuids
