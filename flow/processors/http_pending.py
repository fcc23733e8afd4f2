"""ListenHTTP's requests waiting for their answer (`flow.processors.http`): `_Pending`,
one request read and waiting, and `_Intake`, the queue that moves each from its arrival
to its answer exactly once."""

from __future__ import annotations

import collections
import threading

WAITING, TAKEN, ANSWERED = "waiting", "taken", "answered"


class _Pending:
    __slots__ = ("body", "attributes", "client", "key", "done", "status", "state")

    def __init__(self, body: bytes, attributes: dict, client: str, key: str | None = None):
        self.body, self.attributes, self.client, self.key = body, attributes, client, key
        self.done = threading.Event()
        self.status: int | None = None  # once answered, None: the outcome is unknown, close unanswered
        self.state = WAITING


class _Intake:
    """The requests of one scheduling of the processor, from their arrival to their
    answer. Its lock guards every request's state, so that each moves once:
    waiting -> taken (by `on_trigger`) or answered (503: timed out, or the processor
    stopped); taken -> answered (by the commit's outcome, or unknown: stopped first)."""

    def __init__(self, max_pending: int):
        self._lock = threading.Lock()
        self._waiting: collections.deque[_Pending] = collections.deque()
        self._taken: set[_Pending] = set()
        self._max_pending = max_pending
        self._open = True

    def offer(self, request: _Pending) -> bool:
        """Queue `request` for `on_trigger`; False when full or closed (answer 503)."""
        with self._lock:
            if not self._open or len(self._waiting) >= self._max_pending:
                return False
            self._waiting.append(request)
            return True

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)

    def take(self, count: int) -> list[_Pending]:
        with self._lock:
            batch = []
            while self._waiting and len(batch) < count:
                request = self._waiting.popleft()
                request.state = TAKEN
                batch.append(request)
            self._taken.update(batch)
            return batch

    def outcome(self, request: _Pending, timeout: float) -> int | None:
        """The status to answer `request` with: its commit's, or 503 when it was not
        taken within `timeout` (then it never will be)."""
        if not request.done.wait(timeout):
            with self._lock:
                if request.state == WAITING:
                    self._waiting.remove(request)
                    self._answer(request, 503)
            # Taken: the commit decides, whenever it ends; `close` ends the wait otherwise.
            request.done.wait()
        return request.status

    def settle(self, requests, status: int | None) -> None:
        """Answer the taken `requests` with `status` (None: unknown); those answered already keep their answer."""
        with self._lock:
            for request in requests:
                if request.state == TAKEN:
                    self._taken.discard(request)
                    self._answer(request, status)

    def close(self) -> None:
        """No more requests: those waiting get 503, those taken are closed unanswered."""
        with self._lock:
            self._open = False
            while self._waiting:
                self._answer(self._waiting.popleft(), 503)
            for request in self._taken:
                self._answer(request, None)
            self._taken.clear()

    @staticmethod
    def _answer(request: _Pending, status: int | None) -> None:
        request.state, request.status = ANSWERED, status
        request.body = b""  # in the session's content already, or never to be
        request.done.set()
