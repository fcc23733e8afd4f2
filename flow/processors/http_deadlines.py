"""How long a client of ListenHTTP (`flow.processors.http`) may take to send its request.

The request line and the headers must all have arrived `header_timeout` after the
connection opened (its TLS handshake included); the body then gets `body_timeout`,
plus one second for every `body_min_rate` bytes received. These are Apache httpd's
mod_reqtimeout rules ("header=10 body=10,MinRate=1024"). The per-read `idle_timeout`
alone cannot stop a slowloris client: a byte every few seconds is never idle for long,
and would hold a connection (and one of `max_connections`) for as long as it likes.
With these deadlines a trickling client is answered 408 and closed within a bound,
however it paces its bytes.

`RequestDeadlines` decides, pure (the time is passed in); `PacedReader` carries its
decisions out on the connection's socket, one read at a time.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Callable

HEADERS, BODY = "headers", "body"


class RequestTimeout(Exception):
    """The client did not send its request within its deadline: answer 408, then close."""

    def __init__(self, phase: str, message: str):
        super().__init__(message)
        self.phase, self.message = phase, message


class RequestDeadlines:
    """The deadline of one connection's request, phase by phase: the header block's,
    then the body's (which each byte received pushes back by 1 / `body_min_rate` s)."""

    def __init__(self, opened_at: float, *, header_timeout: float, body_timeout: float, body_min_rate: int):
        self.header_timeout, self.body_timeout, self.body_min_rate = header_timeout, body_timeout, body_min_rate
        self.phase = HEADERS
        self.deadline = opened_at + header_timeout

    def body_started(self, now: float) -> None:
        """The header block is complete: the body's deadline starts."""
        self.phase = BODY
        self.deadline = now + self.body_timeout

    def received(self, count: int) -> None:
        if self.phase == BODY:
            self.deadline += count / self.body_min_rate

    def allowance(self, now: float, idle_timeout: float) -> tuple[float, bool]:
        """How long the next read may wait, and whether the deadline (not the idle
        timeout) is what bounds it. Raises `RequestTimeout` once the deadline has passed."""
        left = self.deadline - now
        if left <= 0:
            raise RequestTimeout(self.phase, self._overdue())
        return (left, True) if left < idle_timeout else (idle_timeout, False)

    def _overdue(self) -> str:
        if self.phase == HEADERS:
            return (
                f"the request line and headers did not all arrive within {self.header_timeout:g} s "
                "(header_timeout): send them at once; nothing was kept"
            )
        return (
            f"the body arrived slower than {self.body_min_rate} bytes a second after the first "
            f"{self.body_timeout:g} s (body_min_rate, body_timeout); nothing was kept"
        )


class PacedReader(io.RawIOBase):
    """The connection's socket as a raw stream whose every read waits at most until the
    request's deadline (and at most `idle_timeout`). Wrapped in a BufferedReader, it is
    the handler's `rfile`. Leaves the socket's timeout at `idle_timeout` between reads,
    for the writes."""

    def __init__(
        self, connection: socket.socket, deadlines: RequestDeadlines, idle_timeout: float, clock: Callable[[], float]
    ):
        super().__init__()
        self._connection, self._deadlines = connection, deadlines
        self._idle_timeout, self._clock = idle_timeout, clock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while True:
            wait, by_deadline = self._deadlines.allowance(self._clock(), self._idle_timeout)
            self._connection.settimeout(wait)
            try:
                count = self._connection.recv_into(buffer)
            except TimeoutError:
                if not by_deadline:
                    raise  # idle: closed without an answer, as before
                continue  # the deadline's: the next allowance raises RequestTimeout
            finally:
                self._connection.settimeout(self._idle_timeout)
            self._deadlines.received(count)
            return count
