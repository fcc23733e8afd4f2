"""ListenHTTP's requests waiting for their answer (`flow.processors.http`): `_Pending`,
one request read and waiting, and `_Intake`, the queue that moves each from its arrival
to its answer exactly once, and that knows which idempotency keys are in flight."""

from __future__ import annotations

import collections
import threading

WAITING, TAKEN, ANSWERED = "waiting", "taken", "answered"
# Why `offer` did not queue a request (its answer, at once).
FULL, IN_FLIGHT, REUSED = 503, 409, 422


class _Pending:
    __slots__ = ("body", "attributes", "client", "key", "fingerprint", "done", "status", "state", "packaged")

    def __init__(
        self, body: bytes, attributes: dict, client: str, key: str | None = None, fingerprint: str | None = None
    ):
        self.body, self.attributes, self.client, self.key = body, attributes, client, key
        self.fingerprint = fingerprint  # of body and attributes, with a key (`intake.format.payload_fingerprint`)
        self.done = threading.Event()
        self.status: int | None = None  # once answered, None: the outcome is unknown, close unanswered
        self.state = WAITING
        # The FlowFiles of a FlowFile Stream v3 body (`flow.flowfile_v3`), read whole when
        # the request came; None for a plain body (one FlowFile).
        self.packaged: list | None = None


class _Intake:
    """The requests of one scheduling of the processor, from their arrival to their
    answer. Its lock guards every request's state, so that each moves once:
    waiting -> taken (by `on_trigger`) or answered (503: timed out, or the processor
    stopped); taken -> answered (by the commit's outcome, or unknown: stopped first).

    A request with an idempotency key is in flight from its `offer` to its answer, and
    the IETF Idempotency-Key draft answers another request with the same key meanwhile
    at once: 409 (a retry: the first's outcome is not known yet) or 422 (the key reused
    with another payload). When the first is answered its commit is over, so a retry
    after it finds the key committed (`on_trigger` answers it) or not (it is taken)."""

    def __init__(self, max_pending: int):
        self._lock = threading.Lock()
        self._waiting: collections.deque[_Pending] = collections.deque()
        self._taken: set[_Pending] = set()
        self._in_flight: dict[str, _Pending] = {}
        self._max_pending = max_pending
        self._open = True

    def offer(self, request: _Pending) -> int | None:
        """Queue `request` for `on_trigger` (None); or the status to answer it with at
        once: FULL (503) when full or closed, IN_FLIGHT (409) or REUSED (422) when a
        request with its key is in flight."""
        with self._lock:
            if not self._open or len(self._waiting) >= self._max_pending:
                return FULL
            if request.key is not None:
                first = self._in_flight.get(request.key)
                if first is not None:
                    return IN_FLIGHT if first.fingerprint == request.fingerprint else REUSED
                self._in_flight[request.key] = request
            self._waiting.append(request)
            return None

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

    def _answer(self, request: _Pending, status: int | None) -> None:
        request.state, request.status = ANSWERED, status
        request.body = b""  # in the session's content already, or never to be
        if request.key is not None and self._in_flight.get(request.key) is request:
            del self._in_flight[request.key]
        request.done.set()
