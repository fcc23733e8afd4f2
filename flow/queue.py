"""`FlowFileQueue`: a connection between two components, as NiFi's connection queue.

What it does: prioritized polling (FIFO by default), back-pressure by object count and
data size, penalization (a penalized FlowFile is skipped until its penalty expires),
expiration (FlowFiles older than the connection's expiration are handed back as
expired instead of polled; aged from their entry date on a clock that wall-clock
steps do not move, see `flow.flowfile_ages`), and the in-memory half of swapping: it keeps a summary of
every swapped batch (count, size, oldest and newest entry) and hands batches out and
in. The I/O of swapping is done by `QueueShard`, which owns the WAL and swap store.
A swap file that cannot be read back is set aside (`set_aside_swap_in`) with the time
of its next attempt, out of the line of swap files, so that the others come back
meanwhile; `release_due_set_aside` puts it back at the head of the line when that
time comes (`flow.unreadable_swap` decides when).
An operator's view (`snapshot`, `find`: see `queue_inspection`) and the in-memory
half of a drop (`take_for_drop`, `take_swapped_for_drop`: see `queue_drop`) are here too.

Counting: `count`/`size` cover everything the queue is responsible for - active,
penalized, staging, swapped, batches being swapped, and FlowFiles polled by a session
that has not committed yet (unacknowledged) - as in NiFi, so back-pressure sees them.
The FlowFiles of swap files set aside are counted too, but apply no back-pressure:
they cannot move until their file is repaired, and must not hold the flow upstream.

Lock plan: `_lock` guards every field below it in `__init__`. It is never held
across I/O: a swap-out batch is taken out under the lock (counted as in flight),
written without it, and completed under it again.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from repositories.swap import SwapSummary

from .flowfile import FlowFile
from .flowfile_ages import FlowFileAges
from .prioritizers import key_function
from .queue_inspection import QueueSnapshot
from .swap_policy import (
    DEFAULT_SWAP_BATCH,
    DEFAULT_SWAP_THRESHOLD,
    NOTHING,
    Demote,
    Promote,
    SwapAction,
    SwapState,
    in_swap_mode,
    plan_swap,
)

DEFAULT_BACK_PRESSURE_COUNT = 10_000
DEFAULT_BACK_PRESSURE_SIZE = 1024**3


DATES_EXACT_BELOW = 1000  # FlowFiles in memory below which a summary's entry dates are always exact
DATES_TTL_S = 1.0  # else they are walked at most this often


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class QueueSummary:
    queue: str
    count: int
    size: int
    oldest_entry: int | None
    newest_entry: int | None
    active: int
    staging: int
    penalized: int
    unacknowledged: int
    swapped_count: int
    swapped_size: int
    swap_files: int
    unreadable_count: int = 0  # of swapped_count: in swap files set aside, unreadable for now
    unreadable_files: int = 0

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}


class FlowFileQueue:
    def __init__(
        self,
        queue_id: str,
        *,
        prioritizers: Iterable[str] = (),
        back_pressure_count: int = DEFAULT_BACK_PRESSURE_COUNT,
        back_pressure_size: int = DEFAULT_BACK_PRESSURE_SIZE,
        swap_threshold: int = DEFAULT_SWAP_THRESHOLD,
        swap_batch: int = DEFAULT_SWAP_BATCH,
        expiration_ms: int = 0,
        clock_ms: Callable[[], int] = _now_ms,
        ages: FlowFileAges | None = None,
        source: str | None = None,
        destination: str | None = None,
    ):
        if swap_batch < 1 or swap_threshold < swap_batch:
            raise ValueError(
                f"queue {queue_id}: swap threshold ({swap_threshold}) must be at least the "
                f"swap batch ({swap_batch}), which must be positive"
            )
        self.id = queue_id
        self.source, self.destination = source, destination
        self.prioritizers = tuple(prioritizers)
        self._key = key_function(self.prioritizers)
        self.back_pressure_count = back_pressure_count
        self.back_pressure_size = back_pressure_size
        self.swap_threshold = swap_threshold
        self.swap_batch = swap_batch
        self.expiration_ms = expiration_ms
        self._clock_ms = clock_ms
        # How old each FlowFile is, for expiration, on a clock wall-clock steps do not move
        # (`flow.flowfile_ages`): the flow's, shared by its queues, else this queue's own.
        self._ages = ages if ages is not None or not expiration_ms else FlowFileAges(wall_ms=clock_ms)
        self._listeners: list[Callable[[FlowFileQueue], None]] = []
        self._lock = threading.Lock()
        self._sequence = itertools.count()
        self._active: list[tuple] = []  # heap of (key, sequence, flowfile)
        self._penalized: list[tuple] = []  # heap of (penalty expiration, sequence, entry)
        self._staging: deque[tuple] = deque()  # (key, sequence, flowfile), arrival order
        self._swapped: deque[SwapSummary] = deque()
        self._in_flight_summaries: list[SwapSummary] = []
        self._set_aside: dict[str, tuple[SwapSummary, int]] = {}  # location -> (summary, retry at ms)
        self._next_retry_ms: int | None = None  # the earliest retry of `_set_aside`
        self._unreadable_count = 0  # FlowFiles of `_set_aside`
        self._out_entries: list | None = None  # the batch being written to a swap file
        # Recovered FlowFiles kept in memory above the threshold (`hold_in_memory`): the
        # count allowed in memory, falling with the queue as it drains.
        self._memory_ceiling = 0
        self._swapping = False
        self._polled: dict[str, tuple] = {}  # id -> (key, sequence) of unacknowledged FlowFiles
        self._unacknowledged_count = 0
        self._count = 0
        self._size = 0
        self._dates: tuple[float, int | None, int | None] | None = None  # (walked at, oldest, newest)

    # -- entries ------------------------------------------------------------------

    def _entry(self, flowfile: FlowFile) -> tuple:
        sequence = next(self._sequence)
        key = sequence if self._key is None else (self._key(flowfile), sequence)
        return (key, sequence, flowfile)

    def add_listener(self, listener: Callable[[FlowFileQueue], None]) -> None:
        """Called (outside the lock) whenever FlowFiles arrive: the engine's wake-up."""
        self._listeners.append(listener)

    def _notify(self) -> None:
        for listener in self._listeners:
            listener(self)

    def _swap_state_locked(self) -> SwapState:
        return SwapState(
            len(self._active),
            len(self._staging),
            len(self._swapped),
            self._swapping,
            max(self.swap_threshold, self._memory_ceiling),
            self.swap_batch,
        )

    def hold_in_memory(self) -> None:
        """Let the FlowFiles in memory now stay there, above the swap threshold if they
        are (a recovery's): only what arrives beyond them is swapped out, and the
        allowance falls as the queue drains, back to the threshold. As NiFi's swappable
        queue does, a FlowFile already in memory is never written out to make room;
        the arrivals wait in swap files instead. A shard recovered by its adopter so
        starts at once, without writing its dead owner's queue out first."""
        with self._lock:
            self._memory_ceiling = len(self._active) + len(self._penalized)

    # -- producers ----------------------------------------------------------------

    def put(self, flowfile: FlowFile) -> None:
        self.put_all((flowfile,))

    def put_all(self, flowfiles: Iterable[FlowFile]) -> None:
        with self._lock:
            if self._ages is not None:
                flowfiles = tuple(flowfiles)
                self._ages.entered(flowfiles)
            staging = in_swap_mode(self._swap_state_locked())
            active, push = self._active, heapq.heappush
            for flowfile in flowfiles:
                entry = self._entry(flowfile)
                self._count += 1
                self._size += flowfile.size
                if staging:
                    self._staging.append(entry)
                elif flowfile.penalty_expiration > 0:
                    push(self._penalized, (flowfile.penalty_expiration, entry[1], entry))
                else:
                    push(active, entry)
        self._notify()

    # -- consumers ----------------------------------------------------------------

    def poll(self, max_count: int = 1, now_ms: int | None = None) -> tuple[list[FlowFile], list[FlowFile]]:
        """Up to `max_count` FlowFiles in priority order, and those found expired.

        Both are unacknowledged until the session calls `acknowledge` (commit) or
        `requeue` (rollback)."""
        now = self._clock_ms() if now_ms is None else now_ms
        polled: list[FlowFile] = []
        expired: list[FlowFile] = []
        with self._lock:
            self._release_penalties_locked(now)
            active, pop = self._active, heapq.heappop
            limit = self.expiration_ms
            ages = None
            if limit:
                ages = self._ages
                if ages is None:  # an expiration set after the queue was made
                    ages = self._ages = FlowFileAges(wall_ms=self._clock_ms)
            aged_at = ages.now() if ages is not None else 0
            remembered = self._polled
            while active and len(polled) < max_count:
                key, sequence, flowfile = pop(active)
                remembered[flowfile.id] = (key, sequence)
                if ages is not None and ages.age_ms(flowfile, aged_at) > limit:
                    expired.append(flowfile)
                    continue
                polled.append(flowfile)
            self._unacknowledged_count += len(polled) + len(expired)
        return polled, expired

    def _release_penalties_locked(self, now: int) -> None:
        penalized = self._penalized
        while penalized and penalized[0][0] <= now:
            heapq.heappush(self._active, heapq.heappop(penalized)[2])

    def acknowledge(self, flowfiles: Iterable[FlowFile]) -> None:
        """The session that polled these committed: they left the queue."""
        with self._lock:
            if self._ages is not None:
                flowfiles = tuple(flowfiles)
                self._ages.left(flowfiles)
            pop = self._polled.pop
            count = size = 0
            for flowfile in flowfiles:
                pop(flowfile.id, None)
                count += 1
                size += flowfile.size
            self._unacknowledged_count -= count
            self._count -= count
            self._size -= size
            if self._memory_ceiling:
                # What left the queue leaves the allowance for good (FlowFiles polled and
                # not yet committed still count: a rollback brings them back).
                self._memory_ceiling = min(
                    self._memory_ceiling, len(self._active) + len(self._penalized) + self._unacknowledged_count
                )

    def requeue(self, flowfiles: Iterable[FlowFile]) -> None:
        """The session that polled these rolled back: they are queued again, in their old
        place (a penalty, if the rollback set one, is kept)."""
        with self._lock:
            for flowfile in flowfiles:
                self._unacknowledged_count -= 1
                old = self._polled.pop(flowfile.id, None)
                entry = (old[0], old[1], flowfile) if old is not None else self._entry(flowfile)
                if flowfile.penalty_expiration > 0:
                    heapq.heappush(self._penalized, (flowfile.penalty_expiration, entry[1], entry))
                else:
                    heapq.heappush(self._active, entry)
        self._notify()

    # -- state --------------------------------------------------------------------

    def now_ms(self) -> int:
        """The queue's clock (entry dates, penalties, expiry, retries of swap files)."""
        return self._clock_ms()

    @property
    def count(self) -> int:
        return self._count

    @property
    def size(self) -> int:
        return self._size

    def is_full(self) -> bool:
        """Back-pressure: the source of this connection must not be scheduled."""
        return (self.back_pressure_count > 0 and self._count - self._unreadable_count >= self.back_pressure_count) or (
            self.back_pressure_size > 0 and self._size >= self.back_pressure_size
        )

    def has_available(self, now_ms: int | None = None) -> bool:
        """Whether a poll now could return something (active, or a penalty that expired)."""
        if self._active:
            return True
        penalized = self._penalized
        if penalized:
            now = self._clock_ms() if now_ms is None else now_ms
            return penalized[0][0] <= now
        return False

    def has_swapped(self) -> bool:
        """FlowFiles wait in staging or in swap files (not being swapped right now), or a
        swap file set aside is due for its retry."""
        if self._swapping:
            return False
        if self._swapped or self._staging:
            return True
        retry = self._next_retry_ms
        return retry is not None and retry <= self._clock_ms()

    def next_penalty_expiration(self) -> int | None:
        with self._lock:
            return self._penalized[0][0] if self._penalized else None

    def is_empty(self) -> bool:
        return self._count == 0

    def summary(self) -> QueueSummary:
        with self._lock:
            oldest, newest = self._entry_dates_locked()
            swapped = list(self._swapped) + [summary for summary, _ in self._set_aside.values()]
            return QueueSummary(
                self.id,
                self._count,
                self._size,
                oldest,
                newest,
                len(self._active),
                len(self._staging),
                len(self._penalized),
                self._unacknowledged_count,
                sum(s.count for s in swapped),
                sum(s.size for s in swapped),
                len(swapped),
                self._unreadable_count,
                len(self._set_aside),
            )

    def _entry_dates_locked(self) -> tuple[int | None, int | None]:
        """The oldest and newest entry dates of what the queue holds. Finding them walks
        every FlowFile in memory (milliseconds for tens of thousands, under the lock the
        flow's tasks need), so above `DATES_EXACT_BELOW` in memory they are walked at most
        every `DATES_TTL_S` and may be that old; the counts are always exact."""
        in_memory = len(self._active) + len(self._staging) + len(self._penalized)
        now = time.monotonic()
        if in_memory >= DATES_EXACT_BELOW and self._dates is not None and now - self._dates[0] < DATES_TTL_S:
            return self._dates[1], self._dates[2]
        dates = [entry[2].entry_date for entry in itertools.chain(self._active, self._staging)]
        dates += [entry[2][2].entry_date for entry in self._penalized]
        for summary in itertools.chain(
            self._swapped, self._in_flight_summaries, (summary for summary, _ in self._set_aside.values())
        ):
            if summary.count and summary.oldest_entry:  # 0: unknown (a summary that could not be read)
                dates += (summary.oldest_entry, summary.newest_entry)
        oldest, newest = (min(dates), max(dates)) if dates else (None, None)
        self._dates = (now, oldest, newest)
        return oldest, newest

    def snapshot(self) -> QueueSnapshot:
        """A copy of the in-memory entries and the queue's numbers (`queue_inspection`)."""
        with self._lock:
            entries = list(self._active)
            entries += [entry for _, _, entry in self._penalized]
            entries += self._staging
            # A batch being written to a swap file, and one being read back, count as swapped.
            going = self._out_entries or []
            swapped = list(
                itertools.chain(
                    self._swapped, self._in_flight_summaries, (summary for summary, _ in self._set_aside.values())
                )
            )
            return QueueSnapshot(
                self.id,
                entries,
                sum(s.count for s in swapped) + len(going),
                sum(s.size for s in swapped) + sum(entry[2].size for entry in going),
                self._unacknowledged_count,
                self._count,
                self._size,
            )

    def find(self, flowfile_id: str) -> FlowFile | None:
        """The FlowFile `flowfile_id` if this queue holds it in memory (not swapped, not polled)."""
        with self._lock:
            for entry in itertools.chain(self._active, (e for _, _, e in self._penalized), self._staging):
                if entry[2].id == flowfile_id:
                    return entry[2]
        return None

    def swap_summaries(self) -> list[SwapSummary]:
        with self._lock:
            return list(self._swapped)

    def in_memory(self) -> int:
        """FlowFiles this queue holds in memory (active, penalized, staging)."""
        return len(self._active) + len(self._penalized) + len(self._staging)

    # -- swapping (driven by QueueShard) -----------------------------------------

    def plan_swap(self) -> SwapAction:
        """The next swap action for the shard to carry out (NOTHING when none)."""
        with self._lock:
            action = plan_swap(self._swap_state_locked())
            # Pure moves between active and staging are done here at once; only the
            # actions that need I/O go back to the shard.
            while isinstance(action, (Demote, Promote)):
                if isinstance(action, Demote):
                    self._demote_locked(action.count)
                else:
                    self._promote_locked(action.count)
                action = plan_swap(self._swap_state_locked())
            if action is not NOTHING:
                self._swapping = True
            return action

    def _demote_locked(self, count: int) -> None:
        ordered = sorted(self._active)
        keep, demoted = ordered[: len(ordered) - count], ordered[len(ordered) - count :]
        self._active = keep  # a sorted list is a heap
        # Demoted FlowFiles are newer (lower priority) than the active ones but older
        # than anything in staging only for FIFO; staging is re-sorted when written.
        self._staging.extendleft(reversed(demoted))

    def _promote_locked(self, count: int) -> None:
        for _ in range(count):
            entry = self._staging.popleft()
            heapq.heappush(self._active, entry)

    def take_swap_out_batch(self, count: int) -> list[FlowFile]:
        """The `count` highest-priority FlowFiles of staging, now in flight."""
        with self._lock:
            entries = sorted(self._staging)
            batch, rest = entries[:count], entries[count:]
            self._staging = deque(rest)
            self._out_entries = batch  # one swap at a time: an abort puts these back as they were
            return [entry[2] for entry in batch]

    def complete_swap_out(self, flowfiles: list[FlowFile], summary: SwapSummary) -> None:
        with self._lock:
            self._out_entries = None  # in the swap file now (a listing counts it once)
            if self._ages is not None:
                self._ages.swapped_out(summary.location, flowfiles)
            self._swapped.append(summary)
            self._swapping = False

    def abort_swap_out(self, flowfiles: list[FlowFile]) -> None:
        with self._lock:
            entries = self._out_entries or [self._entry(f) for f in flowfiles]
            self._out_entries = None
            self._staging = deque(sorted(list(self._staging) + list(entries)))
            self._swapping = False

    def take_swap_in(self) -> SwapSummary | None:
        with self._lock:
            if not self._swapped:
                self._swapping = False
                return None
            summary = self._swapped.popleft()
            self._in_flight_summaries.append(summary)
            return summary

    def complete_swap_in(self, summary: SwapSummary, flowfiles: list[FlowFile]) -> None:
        with self._lock:
            if self._ages is not None:
                self._ages.swapped_in(summary.location, flowfiles)
            self._in_flight_summaries.remove(summary)
            for flowfile in flowfiles:
                entry = self._entry(flowfile)
                if flowfile.penalty_expiration > 0:
                    heapq.heappush(self._penalized, (flowfile.penalty_expiration, entry[1], entry))
                else:
                    heapq.heappush(self._active, entry)
            self._swapping = False
        self._notify()

    def abort_swap_in(self, summary: SwapSummary) -> None:
        with self._lock:
            self._return_swapped_locked(summary)
            self._swapping = False

    # -- swap files that cannot be read (driven by QueueShard, see flow.unreadable_swap) --

    def set_aside_swap_in(self, taken: SwapSummary, kept: SwapSummary, retry_at_ms: int) -> None:
        """The swap file `taken` to swap in could not be read: out of the line until
        `retry_at_ms`, as `kept` (its summary, at its location now)."""
        with self._lock:
            self._in_flight_summaries.remove(taken)
            self._set_aside_locked(kept, retry_at_ms, taken)
            self._swapping = False

    def set_aside_swapped(self, taken: SwapSummary, kept: SwapSummary, retry_at_ms: int) -> None:
        """A swap file taken out of the line (`take_swapped_for_drop`) could not be read."""
        with self._lock:
            self._in_flight_summaries.remove(taken)
            self._set_aside_locked(kept, retry_at_ms, taken)

    def register_set_aside(self, summary: SwapSummary, retry_at_ms: int) -> None:
        """Recovery: a swap file the WAL lists, unreadable or quarantined: counted, set aside."""
        with self._lock:
            self._count += summary.count
            self._size += summary.size
            self._set_aside_locked(summary, retry_at_ms)

    def _set_aside_locked(self, summary: SwapSummary, retry_at_ms: int, taken: SwapSummary | None = None) -> None:
        if taken is not None and taken.location != summary.location and self._ages is not None:
            self._ages.forget(taken.location)  # quarantined: read back, it is aged by its entry dates
        previous = self._set_aside.get(summary.location)
        if previous is not None:
            self._unreadable_count -= previous[0].count
        self._set_aside[summary.location] = (summary, retry_at_ms)
        self._unreadable_count += summary.count
        self._next_retry_ms = min(at for _, at in self._set_aside.values())

    def release_due_set_aside(self, now_ms: int | None = None) -> list[SwapSummary]:
        """The swap files set aside whose retry is due, back at the head of the line
        (the oldest first), to be read as soon as the queue has room."""
        if self._next_retry_ms is None:
            return []  # the common case, after every commit: no lock taken
        now = self._clock_ms() if now_ms is None else now_ms
        with self._lock:
            if self._next_retry_ms is None or self._next_retry_ms > now:
                return []
            due = sorted(
                (summary for summary, at in self._set_aside.values() if at <= now),
                key=lambda summary: (summary.oldest_entry, summary.location),
            )
            for summary in reversed(due):
                del self._set_aside[summary.location]
                self._unreadable_count -= summary.count
                self._swapped.appendleft(summary)
            self._next_retry_ms = min((at for _, at in self._set_aside.values()), default=None)
            return due

    def retry_set_aside(self, location: str, at_ms: int) -> bool:
        """Move the retry of the swap file set aside at `location` to `at_ms`."""
        with self._lock:
            entry = self._set_aside.get(location)
            if entry is None:
                return False
            self._set_aside[location] = (entry[0], at_ms)
            self._next_retry_ms = min(at for _, at in self._set_aside.values())
            return True

    def set_aside_summaries(self) -> list[SwapSummary]:
        with self._lock:
            return [summary for summary, _ in self._set_aside.values()]

    # -- dropping (driven by flow.queue_drop, under the shard's swap lock) --------

    def take_for_drop(self, max_count: int) -> list[FlowFile]:
        """Up to `max_count` FlowFiles held in memory, penalized and staging ones too,
        now unacknowledged as if polled: the drop's commit acknowledges them, a failed
        one `requeue`s them (into active, even those taken from staging)."""
        taken: list[FlowFile] = []
        with self._lock:
            remembered = self._polled
            while len(taken) < max_count:
                if self._active:
                    entry = heapq.heappop(self._active)
                elif self._penalized:
                    entry = heapq.heappop(self._penalized)[2]
                elif self._staging:
                    entry = self._staging.popleft()
                else:
                    break
                remembered[entry[2].id] = (entry[0], entry[1])
                taken.append(entry[2])
            self._unacknowledged_count += len(taken)
        return taken

    def take_swapped_for_drop(self) -> SwapSummary | None:
        """The next swap file to drop whole, now in flight (no swap-in takes it)."""
        with self._lock:
            if not self._swapped:
                return None
            summary = self._swapped.popleft()
            self._in_flight_summaries.append(summary)
            return summary

    def complete_swap_drop(self, summary: SwapSummary) -> None:
        """The WAL forgot the swap file: its FlowFiles left the queue."""
        with self._lock:
            if self._ages is not None:
                self._ages.forget(summary.location)
            self._in_flight_summaries.remove(summary)
            self._count -= summary.count
            self._size -= summary.size

    def return_swapped(self, summary: SwapSummary) -> None:
        """A swap file taken out (to drop or to swap in) stays swapped, first in line."""
        with self._lock:
            self._return_swapped_locked(summary)

    def _return_swapped_locked(self, summary: SwapSummary) -> None:
        self._in_flight_summaries.remove(summary)
        self._swapped.appendleft(summary)

    def register_swapped(self, summary: SwapSummary) -> None:
        """Recovery: a swap file the WAL lists, registered without loading it."""
        with self._lock:
            if self._ages is not None:
                self._ages.registered(summary.location)
            self._swapped.append(summary)
            self._count += summary.count
            self._size += summary.size
