"""Events of many small commits registered together, off the committing threads.

A commit of one FlowFile makes one or two events. Registering them on their own costs
a record batch, an id column and a journal frame each, and then a chunk in the merge:
most of the cost lies in the batch, not the events. `PendingRows` collects the rows of
such commits and registers them as one batch on a thread of its own (the way a Kafka
producer fills a batch for `linger.ms` before it sends), then tells each commit that
its events are registered.

    pending = PendingRows(register, name="provenance")   # register(rows) -> None
    pending.add(rows, done)      # done(None) once registered, done(error) if not
    pending.drain()              # returns once every row added before it is registered
    pending.close()              # drains, then refuses what comes later

A group is registered once it holds `GROUP_ROWS` rows, once its first row has waited
`LINGER_S`, or at once when someone drains. `add` waits while `MAX_PENDING` commits
wait (back pressure: registration that cannot keep up slows the commits, as a full
journal would). A group whose registration fails is tried commit by commit, so that
one commit's bad rows fail that commit alone. Whatever `register` raises is told to
the commits, and the thread goes on: a drain never waits on a thread that died. `done` runs on the registering thread
and must return quickly; `drain` there (from `done` or from `register`) does nothing.

What a crash loses here is covered by the caller: the flow's committer keeps each
commit's events in its provenance outbox record until `done` says they are registered.

Lock plan: `_changed` (a condition over one lock) guards every field but `_thread`'s
work in progress; `register` and `done` run without it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from .errors import RepositoryClosedError

log = logging.getLogger(__name__)

LINGER_S = 0.02  # the longest a row waits for others to join its group
GROUP_ROWS = 512  # a group this large is registered without waiting
MAX_PENDING = 1024  # commits waiting at most; `add` waits beyond it
DRAIN_TIMEOUT_S = 300.0

Done = Callable[[BaseException | None], None]
Row = tuple[object, ...]


class PendingRows:
    def __init__(self, register: Callable[[list[Row]], None], *, name: str = "provenance"):
        self._register = register
        self._name = name
        self._changed = threading.Condition(threading.Lock())
        self._rows: list[Row] = []
        self._commits: list[tuple[int, Done]] = []  # (rows, done) of each commit in `_rows`, in order
        self._first_at = 0.0  # when the oldest pending row was added
        self._added = 0  # commits added, ever
        self._finished = 0  # commits registered (or failed), ever: a prefix of those added
        self._draining = 0  # drains waiting
        self._closed = False
        self._thread: threading.Thread | None = None

    def add(self, rows: Sequence[Row], done: Done) -> None:
        """Queue one commit's rows; `done` is told how their registration ended.
        Raises `RepositoryClosedError` once closed."""
        with self._changed:
            while len(self._commits) >= MAX_PENDING and not self._closed:
                self._changed.wait()
            if self._closed:
                raise RepositoryClosedError(f"{self._name}: closed; the events were not registered")
            if not self._commits:
                self._first_at = time.monotonic()
            self._rows.extend(rows)
            self._commits.append((len(rows), done))
            self._added += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self._name} registrar", daemon=True)
                self._thread.start()
            if len(self._rows) >= GROUP_ROWS or len(self._commits) == 1:
                self._changed.notify_all()

    def drain(self, timeout: float = DRAIN_TIMEOUT_S) -> None:
        """Return once every commit added before this call is registered (or failed).
        Raises TimeoutError if that takes longer than `timeout`."""
        if threading.current_thread() is self._thread:
            return  # `register` or a `done` of this very thread: what it waits for is its own work
        with self._changed:
            target = self._added
            if self._finished >= target:
                return
            self._draining += 1
            self._changed.notify_all()
            try:
                if not self._changed.wait_for(lambda: self._finished >= target, timeout):
                    left = target - self._finished
                    raise TimeoutError(f"{self._name}: events of {left} commits not registered after {timeout:.0f} s")
            finally:
                self._draining -= 1

    def close(self, timeout: float = DRAIN_TIMEOUT_S) -> None:
        """Refuse new rows, register what is pending, stop the thread."""
        with self._changed:
            if self._closed:
                return
            self._closed = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _next_group(self) -> tuple[list[Row], list[tuple[int, Done]]] | None:
        """Wait for a group worth registering and take it; None once closed and empty."""
        with self._changed:
            while True:
                if self._commits:
                    if self._closed or self._draining or len(self._rows) >= GROUP_ROWS:
                        break
                    left = self._first_at + LINGER_S - time.monotonic()
                    if left <= 0:
                        break
                    self._changed.wait(left)
                elif self._closed:
                    return None
                else:
                    self._changed.wait()
            rows, commits = self._rows, self._commits
            self._rows, self._commits = [], []
            self._changed.notify_all()  # room for waiting `add`s
            return rows, commits

    def _run(self) -> None:
        while True:
            group = self._next_group()
            if group is None:
                return
            rows, commits = group
            outcomes = self._registered(rows, commits)
            with self._changed:
                self._finished += len(commits)
                self._changed.notify_all()
            for (_, done), error in zip(commits, outcomes, strict=True):
                try:
                    done(error)
                except Exception:  # noqa: BLE001 - one commit's callback must not stop the others'
                    log.exception("%s: a commit's registration callback raised", self._name)

    def _registered(self, rows: list[Row], commits: list[tuple[int, Done]]) -> list[BaseException | None]:
        """Register the group; each commit's error, or None."""
        try:
            self._register(rows)
            return [None] * len(commits)
        except BaseException as error:  # noqa: BLE001 - told to each commit below; this thread goes on
            if len(commits) == 1:
                return [error]
            group_error = error
        log.warning(
            "%s: registering %d commits' events together failed (%s); each is registered on its own",
            self._name,
            len(commits),
            str(group_error).splitlines()[0][:300] if str(group_error) else type(group_error).__name__,
        )
        outcomes: list[BaseException | None] = []
        start = 0
        for count, _ in commits:
            try:
                self._register(rows[start : start + count])
                outcomes.append(None)
            except BaseException as error:  # noqa: BLE001 - this commit's alone
                outcomes.append(error)
            start += count
        return outcomes
