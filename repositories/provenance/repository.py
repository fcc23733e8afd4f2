"""The provenance repository: journals, rollover, event files, index, queries, age-off.

Write path (NiFi's provenance repository design): `register_events` assigns ids, picks
the next journal of the current generation round-robin (containers x journals per
container) and appends one uncompressed frame. No compression, no indexing. A
rollover (by time or size, see `RolloverPolicy`) swaps in a new generation; the merge
thread sorts the old generation's events by id into one event file named after its
first id, compressed in ~1 MB blocks with a table of contents, then deletes the
journals; the index thread indexes the file into the current shard. Age-off destroys
the oldest event files and then whole index shards.

This module holds the write path and composes the rest, one job per module:
  `layout`       where the files are (`layout.ProvenanceLayout`)
  `generation`   the journals being written (`JournalGeneration`)
  `background`   the merge, index, runs and timer threads, and the backlog between them
  `merging`      a rolled-over generation into an event file (`Merger`)
  `indexing`     an event file into the index (`IndexFeeder`)
  `event_files`  the committed event files and a cache of their blocks
  `reading`      get, sequential retrieval, query, lineage (`EventReader`)
  `recovery`     what a restart must finish
  `pending`      the rows of small commits, registered together (`register_rows_later`)
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence

import pyarrow as pa

from . import event_file_format as eff
from . import files
from .background import BackgroundWork
from .config import ProvenanceConfig
from .errors import RepositoryClosedError
from .event import ProvenanceEvent
from .event_batch import EventBatch
from .event_file import EventFileInfo
from .event_files import EventFileEntry, EventFileTable, read_rows
from .generation import JournalGeneration
from .hooks import ProvenanceHooks, RunMergeHooks
from .index import ShardedIndex
from .indexing import IndexFeeder
from .layout import ProvenanceLayout
from .lineage import LineageGraph
from .merging import EventFileListener, Merger
from .pending import Done, PendingRows
from .policies import plan_age_off
from .query import ProvenanceQuery, QueryResult
from .reading import EventReader
from .recovery import RedoMerge, recover

log = logging.getLogger(__name__)


class ProvenanceRepository:
    """Provenance events of one node, in one or more containers (see the module docstring).

    Lock plan:
      * `_lock` guards `_next_id`, `_generation` (which generation is current),
        `_closed`, and the current generation's `next_slot`, `events`, `bytes` and
        `opened_at_s`. Ids are assigned and a slot chosen under it, so every id of
        generation N is below every id of generation N+1 (files never overlap). It is
        held across no I/O but the creation of the next generation's journals at a
        rollover, so that no writer can pick a generation without journals.
      * `_rollover_lock` serialises rollovers: held while the old generation drains,
        its journals close and it is queued for the merge.
      * In each `JournalGeneration`: `drained` guards `in_flight`, and a writer enters
        while it also holds `_lock`, so a rollover waits for every writer of the
        generation it swapped out; `slot_locks[i]` guards journal i and the batches
        appended to it.
      * `BackgroundWork._backlog` guards the count of rolled-over generations not yet
        merged and indexed, the failure of a background thread, and `_stopping`.
      * `EventFileTable._lock` guards the event-file table; `BlockCache._lock` the
        cache of decompressed blocks that `get`, `events` and `query` share;
        `ShardedIndex._lock` the index's shards and manifests; each `EventFile`
        reader has its own lock for its descriptor.
      * Unlocked, with one writer each: the merger's container rotation (the merge
        thread, or recovery before the threads start), and `stage_s`, each key
        written by one thread only ("journal_write" under `_lock`, "merge" by the merge
        thread, "index_*" by the index thread, "runs_merge" by the runs thread) and read for profiling.
      * `peek_next_event_id` reads `_next_id` without `_lock`: a hint, at most one
        registration old. `PendingRows` has its own lock, taken alone; its thread
        registers through `register_batch`.
      * Order: `_rollover_lock`, then `_lock`, then a generation's `drained`;
        `_rollover_lock`, then `_backlog`. Every other lock is taken alone.
    """

    def __init__(
        self,
        config: ProvenanceConfig,
        *,
        clock: Callable[[], float] = time.time,
        hooks: ProvenanceHooks | None = None,
        read_only: bool = False,
        on_indexed: Callable[[EventFileInfo, float], None] | None = None,
        on_event_file: EventFileListener | None = None,
        run_hooks: RunMergeHooks | None = None,
    ):
        """`on_indexed` is called by the index thread after each event file is indexed;
        `on_event_file` by the merge thread after each event file is committed (see
        `merging`): both must return quickly and leave I/O to threads of their own.
        `run_hooks`: the crash points of the index's merges of sorted runs (tests)."""
        self.config = config
        self._clock = clock
        self._hooks = ProvenanceHooks.coerce(hooks)  # read at each seam: a test may swap them
        self._read_only = read_only
        self._lock = threading.Lock()
        self._rollover_lock = threading.Lock()
        self._closed = False
        self.recovery_report: dict = {}
        # Seconds spent per stage (wall time of the thread doing it), for profiling.
        self.stage_s = {
            "journal_write": 0.0,
            "merge": 0.0,
            "index_documents": 0.0,
            "index_commit": 0.0,
            "runs_merge": 0.0,
        }
        self._layout = ProvenanceLayout(config.containers)
        self.containers = self._layout.containers
        if not read_only:
            self._layout.prepare()
        self.index = ShardedIndex(
            self._layout.index_directory,
            clock_ms=self._now_ms,
            shard_bytes=config.shard_bytes,
            shard_max_age_ms=int(config.max_age_s * 1000 / 4) if config.max_age_s else None,
            writer_heap_bytes=config.index_heap_bytes,
            writer_threads=config.index_threads,
            read_only=read_only,
            run_fan_in=config.run_fan_in,
            run_hooks=run_hooks,
        )
        self._files = EventFileTable()
        for path in self._layout.event_file_paths():
            self._files.add(path)
        self._reader = EventReader(self._files, self.index)
        self._merger = Merger(
            self._layout, self._files, config, lambda: self._hooks, self.stage_s, on_event_file=on_event_file
        )
        self._indexer = IndexFeeder(
            self._files, self.index, lambda: self._hooks, self.stage_s, clock=clock, on_indexed=on_indexed
        )
        self._work = BackgroundWork(
            merge=self._merge_generation,
            index=self._indexer.index_file,
            max_pending=config.max_pending_rollovers,
            merge_runs=self._merge_runs,
        )
        self._next_id = self._files.largest_id() + 1
        self._generation: JournalGeneration | None = None
        self._pending = PendingRows(self._register_rows, name=f"provenance {config.containers[0]}")
        if read_only:
            return
        try:
            self._recover()
            self._work.merge_runs_later()  # what a crash left to merge, if anything
            self._generation = self._new_generation()
        except BaseException:
            # No thread runs yet; let go of the index writer and the event files, so that
            # the repository can be opened again in this process.
            self.index.close()
            self._files.close()
            raise
        self._work.start(
            maybe_rollover=self.maybe_rollover,
            rollover_check_interval=config.rollover_check_interval_s,
            age_off=self.age_off,
            age_off_interval=config.age_off_interval_s,
        )

    @classmethod
    def open(cls, path: str, *, read_only: bool = True, **kwargs) -> ProvenanceRepository:
        """Open the repository whose first container is `path` (reads its layout.json)."""
        containers = ProvenanceLayout.read_containers(path)
        config = kwargs.pop("config", None) or ProvenanceConfig(
            containers=tuple(containers), rollover_check_interval_s=None, age_off_interval_s=None
        )
        return cls(config, read_only=read_only, **kwargs)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _recover(self) -> None:
        work = recover(self._layout, self._files, self.index)
        self._next_id = work.next_id
        # In increasing first id, merges and re-indexings interleaved: the index queue
        # then holds them in the order the index relies on (see `recovery`).
        for step in work.steps:
            if isinstance(step, RedoMerge):
                self._work.count()  # settled by the index thread, as after a rollover
                self._merge(step.first_id, step.batches, step.journal_paths)
            else:
                self._work.reindex_later(step.first_id)
        self.recovery_report = work.report

    # -- writing --------------------------------------------------------------------

    def _new_generation(self) -> JournalGeneration:
        paths = self._layout.journal_paths(self._next_id, self.config.journals_per_container)
        return JournalGeneration(self._next_id, paths, self._clock(), self.config.sync_journals)

    def register_events(self, events: Sequence[ProvenanceEvent], now_ms: int | None = None) -> range:
        """Store events; returns their ids. Thread-safe; the events are in the OS on return.
        Events without a time get `now_ms` (by default, the repository's clock now)."""
        if not events:
            return range(0)
        return self.register_batch(EventBatch.from_events(events, self._now_ms() if now_ms is None else now_ms))

    def register_rows_later(self, rows: Sequence[tuple[object, ...]], done: Done) -> None:
        """Queue the rows of one small commit, to be registered with other commits' rows
        as one batch on the registering thread (`pending`); `done(None)` once they are
        registered, `done(error)` if they could not be. Rows without a time get the
        time they are registered at. Reads and `sync` see them: they wait for what
        was queued before them. Raises `RepositoryClosedError` once closed."""
        if self._read_only:
            raise RepositoryClosedError("the provenance repository is read-only")
        self._pending.add(rows, done)

    def _register_rows(self, rows: list[tuple[object, ...]]) -> None:
        self.register_batch(EventBatch.from_rows(rows, self._now_ms()))

    def register_batch(self, batch: EventBatch) -> range:
        """Store a columnar batch (the bulk path); returns the ids it got."""
        n = len(batch)
        if n == 0:
            return range(0)
        self._work.wait_for_capacity()
        with self._lock:
            if self._closed or self._generation is None:
                raise RepositoryClosedError(
                    "the provenance repository is closed (or read-only); open it again to register events"
                )
            generation = self._generation
            first_id = self._next_id
            self._next_id += n
            slot = generation.choose_slot(n)
        try:
            started = time.perf_counter()
            written = generation.append(slot, batch.with_ids(first_id))
            with self._lock:
                generation.bytes += written
                self.stage_s["journal_write"] += time.perf_counter() - started
                full = self.config.rollover.max_bytes is not None and generation.bytes >= self.config.rollover.max_bytes
        finally:
            generation.leave()
        if full:
            self.maybe_rollover()
        return range(first_id, first_id + n)

    def maybe_rollover(self) -> bool:
        """Roll over if the policy says so (time by the injected clock, or size)."""
        with self._lock:
            generation = self._generation
            if generation is None:
                return False
            due = self.config.rollover.due(
                opened_at_s=generation.opened_at_s,
                now_s=self._clock(),
                bytes_written=generation.bytes,
                events=generation.events,
            )
        return self._rollover() if due else False

    def rollover(self) -> bool:
        """Close the current journals and queue them for merge; False if they were empty.
        Rows queued by `register_rows_later` before it are registered first.

        A failure once the new generation is in place stops the repository, as a failed
        merge does: the rolled-over generation would be merged by nobody until a restart.
        """
        self._pending.drain()
        return self._rollover()

    def _rollover(self) -> bool:
        with self._rollover_lock:
            with self._lock:
                old = self._generation
                if old is None or old.events == 0:
                    if old is not None:
                        old.opened_at_s = self._clock()
                    return False
                self._generation = self._new_generation()
            try:
                old.wait_drained()
                old.close()
                self._hooks.rollover_before_merge_queue(first_id=old.first_id)
                self._work.merge_later(old)
            except BaseException as error:
                self._work.fail(error)
                raise
            return True

    # -- background work (the merge and index threads call these) ----------------------

    def _merge_generation(self, generation: JournalGeneration) -> None:
        self._merge(generation.first_id, generation.all_batches(), generation.paths)

    def _merge(self, first_id: int, batches: list[pa.RecordBatch], journal_paths: list[str]) -> None:
        events = self._merger.merge(first_id, batches, journal_paths)
        if events.num_rows:
            self._work.index_later(first_id, events)
        else:
            self._work.done()

    def _merge_runs(self) -> None:
        started = time.perf_counter()
        self.index.merge_runs()
        self.stage_s["runs_merge"] += time.perf_counter() - started

    def sync(self, timeout: float = 60.0) -> None:
        """Roll over, then wait until every registered event is merged and searchable."""
        self.rollover()
        self.wait_idle(timeout)

    def wait_idle(self, timeout: float = 60.0) -> None:
        self._pending.drain()
        self._work.wait_idle(timeout)

    # -- age-off --------------------------------------------------------------------

    def age_off(self) -> list[int]:
        """Destroy event files past the age or size limit; then drop shards with no file left."""
        max_age_ms = None if self.config.max_age_s is None else int(self.config.max_age_s * 1000)
        doomed = plan_age_off(
            self._files.summaries(), now_ms=self._now_ms(), max_age_ms=max_age_ms, max_bytes=self.config.max_bytes
        )
        directories = set()
        for first_id in doomed:
            entry = self._files.remove(first_id)
            if entry is None:
                continue
            # The event file goes first: a TOC without its event file is an orphan that
            # recovery deletes, an event file without a TOC would be rebuilt.
            files.delete(entry.path)
            files.delete(entry.path[: -len(eff.EVENT_SUFFIX)] + eff.TOC_SUFFIX)
            directories.add(os.path.dirname(entry.path))
        for directory in directories:
            files.fsync_directory(directory)
        dropped = self.index.drop_shards_without_files(self._files.ids())
        if doomed:
            log.info("provenance age-off destroyed %d event files, %d index shards", len(doomed), len(dropped))
        return doomed

    # -- reading --------------------------------------------------------------------

    def get(self, event_id: int) -> ProvenanceEvent:
        """One event by id; decompresses at most one block."""
        return self._reader.get(event_id)

    def events(self, start_id: int, count: int, *, skip_damaged: bool = False) -> list[ProvenanceEvent]:
        """Up to `count` events with ids >= start_id, in id order (sequential retrieval).
        A damaged block raises CorruptBlockError, or with `skip_damaged` is passed over."""
        return self._reader.events(start_id, count, skip_damaged=skip_damaged)

    def query(self, query: ProvenanceQuery) -> QueryResult:
        """Events matching every given field and the time range, newest first."""
        return self._reader.query(query)

    def lineage(self, flowfile_uuid: str, *, max_flowfiles: int = 10_000) -> LineageGraph:
        """Ancestors and descendants of a FlowFile across FORK, CLONE, JOIN and REPLAY."""
        return self._reader.lineage(flowfile_uuid, max_flowfiles=max_flowfiles)

    # -- status and shutdown -------------------------------------------------------

    @property
    def next_event_id(self) -> int:
        """The id the next event will get, once every queued row is registered."""
        self._pending.drain()
        return self._next_id

    def peek_next_event_id(self) -> int:
        """The next id not yet given, not waiting for queued rows (theirs come at or after it)."""
        return self._next_id

    def event_files(self) -> list[EventFileEntry]:
        return self._files.entries()

    def event_file_rows(self, first_id: int) -> pa.Table | None:
        """Every event of the event file starting at `first_id`, in the stored schema
        (`event_batch.SCHEMA`), damaged blocks left out; None if it was aged off."""
        entry = self._files.get(first_id)
        return None if entry is None else read_rows(entry)

    def storage_bytes(self) -> int:
        return self._files.total_bytes()

    def close(self, timeout: float = 120.0) -> None:
        """Merge and index what was registered, then stop the background threads."""
        with self._lock:
            if self._closed:
                return
        self._pending.close(timeout)  # registers what is queued, refuses what comes later
        if not self._read_only and not self._work.failed:
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
        self._work.stop(timeout)
        self.index.close()
        self._files.close()

    def __enter__(self) -> ProvenanceRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
