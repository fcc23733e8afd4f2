"""The provenance repository's background threads, and the backlog between them.

Four threads, all daemons:
  * `provenance-merge` takes rolled-over generations off its queue and merges each
    into an event file;
  * `provenance-index` takes merged (or recovered) event files off its queue and
    indexes them;
  * `provenance-runs`, when the repository gives it work (`merge_runs`), merges the
    index's sorted runs after each indexed file, so that indexing never waits on a
    merge of runs (LSM compaction on a thread of its own, as in LevelDB);
  * `provenance-timer`, only when an interval is configured, rolls over and ages off
    on time.

The backlog counts the rolled-over generations (and recovered files) not yet merged,
indexed and (with `merge_runs`) through a merge pass of runs: so a merge of runs that
falls behind holds writers back, as a slow merge or indexing does, and the count of
unmerged runs stays bounded. Writers wait while it is at the configured maximum, so that merging and
indexing keep up with ingest; `wait_idle` waits for it to reach zero. A failure of
any thread (or of a rollover, see `fail`) stops that thread and is kept: every writer
and waiter then raises it, until the repository is opened again.

Lock plan: `_backlog` (a Condition) guards `_pending`, `_failure` and `_stopping`.
The queues are thread-safe; nothing else is shared.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

import pyarrow as pa

from .errors import ProvenanceError

log = logging.getLogger(__name__)


class BackgroundWork:
    def __init__(
        self,
        *,
        merge: Callable[[object], None],
        index: Callable[[int, pa.Table | None], None],
        max_pending: int,
        merge_runs: Callable[[], object] | None = None,
    ):
        self._merge = merge
        self._index = index
        self._merge_runs = merge_runs
        self._max_pending = max_pending
        self._merge_queue: queue.Queue = queue.Queue()
        self._index_queue: queue.Queue = queue.Queue()
        self._runs_queue: queue.Queue = queue.Queue()
        self._backlog = threading.Condition()
        self._pending = 0
        self._failure: BaseException | None = None
        self._stopping = False
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- threads ----------------------------------------------------------------------

    def start(
        self,
        *,
        maybe_rollover: Callable[[], object],
        rollover_check_interval: float | None,
        age_off: Callable[[], object],
        age_off_interval: float | None,
    ) -> None:
        """Start the merge and index threads, the runs thread if there is `merge_runs`,
        and the timer if either interval is set (seconds of real time; None: the caller
        drives that job)."""
        targets = [(self._merge_loop, "provenance-merge"), (self._index_loop, "provenance-index")]
        if self._merge_runs is not None:
            targets.append((self._runs_loop, "provenance-runs"))
        if rollover_check_interval or age_off_interval:
            targets.append(
                (
                    lambda: self._timer_loop(maybe_rollover, rollover_check_interval, age_off, age_off_interval),
                    "provenance-timer",
                )
            )
        for target, name in targets:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float) -> None:
        """Wake every waiting writer, and stop every thread once its queue is done."""
        with self._backlog:
            self._stopping = True
            self._backlog.notify_all()
        self._stop.set()
        self._merge_queue.put(None)
        self._index_queue.put(None)
        self._runs_queue.put(None)
        for thread in self._threads:
            thread.join(timeout)

    def _merge_loop(self) -> None:
        while True:
            generation = self._merge_queue.get()
            if generation is None:
                return
            try:
                self._merge(generation)
            except BaseException as error:  # noqa: BLE001 - reported to writers and waiters
                self.fail(error)
                return

    def _index_loop(self) -> None:
        while True:
            item = self._index_queue.get()
            if item is None:
                return
            first_id, events = item
            try:
                self._index(first_id, events)
            except BaseException as error:  # noqa: BLE001
                self.fail(error)
                return
            if self._merge_runs is None:
                self.done()
            else:
                self._runs_queue.put(first_id)  # still counted: settled by the runs thread

    def _runs_loop(self) -> None:
        assert self._merge_runs is not None
        while True:
            item = self._runs_queue.get()
            if item is None:
                return
            try:
                # One pass merges every level that is full, so a pass queued behind
                # another usually finds nothing to do: the thread catches up.
                self._merge_runs()
            except BaseException as error:  # noqa: BLE001
                self.fail(error)
                return
            self.done()

    def _timer_loop(
        self,
        maybe_rollover: Callable[[], object],
        check: float | None,
        age_off: Callable[[], object],
        age: float | None,
    ) -> None:
        tick = min(x for x in (check, age) if x)
        last_age_off = time.monotonic()
        while not self._stop.wait(tick):
            try:
                if check:
                    maybe_rollover()
                if age and time.monotonic() - last_age_off >= age:
                    last_age_off = time.monotonic()
                    age_off()
            except ProvenanceError:
                pass  # already recorded by fail(); writers see it
            except BaseException as error:  # noqa: BLE001
                self.fail(error)
                return

    # -- the backlog ----------------------------------------------------------------

    def merge_later(self, generation) -> None:
        """Count a rolled-over generation and queue it for the merge thread."""
        self.count()
        self._merge_queue.put(generation)

    def index_later(self, first_id: int, events: pa.Table) -> None:
        """Queue a merged file for the index thread (its generation is counted already)."""
        self._index_queue.put((first_id, events))

    def reindex_later(self, first_id: int) -> None:
        """Count a committed file that is not indexed, and queue it (read from disk)."""
        self.count()
        self._index_queue.put((first_id, None))

    def merge_runs_later(self) -> None:
        """Count and queue one merge pass of runs with no file indexed before it (after
        recovery: merges a crash interrupted are finished)."""
        if self._merge_runs is not None:
            self.count()
            self._runs_queue.put(-1)

    def count(self) -> None:
        """One more generation or file to merge and index."""
        with self._backlog:
            self._pending += 1

    def done(self) -> None:
        """One generation or file is merged, indexed and through its merge pass of runs
        (or had nothing to index)."""
        with self._backlog:
            self._pending -= 1
            self._backlog.notify_all()

    def fail(self, error: BaseException) -> None:
        """Keep the failure of a merge, an indexing, a merge of runs or a rollover: the
        repository stops."""
        log.exception("provenance rollover, merge, indexing or merge of runs failed", exc_info=error)
        with self._backlog:
            self._failure = error
            self._backlog.notify_all()

    @property
    def failed(self) -> bool:
        with self._backlog:
            return self._failure is not None

    def wait_for_capacity(self) -> None:
        """Return when the backlog is below the maximum; raise the kept failure."""
        with self._backlog:
            while self._pending >= self._max_pending and self._failure is None and not self._stopping:
                self._backlog.wait(1.0)
            self._raise_failure()

    def wait_idle(self, timeout: float) -> None:
        """Return when the backlog is empty; raise the kept failure, or TimeoutError."""
        deadline = time.monotonic() + timeout
        with self._backlog:
            while self._pending and self._failure is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"{self._pending} rolled-over generations still not merged and indexed after {timeout} s"
                    )
                self._backlog.wait(left)
            self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise ProvenanceError(
                f"the provenance repository stopped after a failed rollover, merge or indexing: "
                f"{self._failure!r}; restart it to recover"
            ) from self._failure
