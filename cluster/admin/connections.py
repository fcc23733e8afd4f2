"""The admin API's connections: how many it holds, and how long a client may take.

The server runs in the node's own process, so every connection it holds is a file
descriptor the flow no longer has: with the descriptors gone, the flow cannot open a
content claim, a WAL segment or a socket to ZooKeeper, and stops. uvicorn alone holds
whatever a client opens for as long as it likes: its keep-alive timeout starts only
after a first answer, and `limit_concurrency` answers 503 to requests past the limit
but still accepts and holds the connections, so a connection that sends no request
is refused by nothing. So the protocol uvicorn runs for each connection (its h11
protocol, subclassed as `AdminConnection`) adds:

  a cap       at most `max_connections` at once; one more is answered 503 and closed
              as soon as it is accepted. The cap is a fraction of the process's
              descriptor limit (`connection_cap(RLIMIT_NOFILE)`); the rest is the flow's
  headers     a request's line and headers must all arrive within `header_timeout_s`
              of the connection, or of the last answer on it: a client that sends
              nothing, or trickles its headers a byte at a time (slowloris), is
              answered 408 and cut, however steadily it trickles
  a body      must all arrive within `body_timeout_s` of its headers (408, cut)
  an answer   a client that stops reading it for `send_stall_s` is cut

asyncio accepts up to the listen backlog's number of connections each time the
listening socket is ready, before any of them is refused, so the backlog is small
(ACCEPT_BACKLOG): it bounds the descriptors a burst of connections holds at once.

With TLS, a connection counts once its handshake is done; one that stalls in the
handshake is cut by asyncio after 60 s, and is not counted against the cap.

Refusals are logged once per kind per interval (`LimitedLog`), never with a
traceback: a hostile client repeats them as fast as it likes. That includes uvicorn's
own line for each malformed request and asyncio's for an accept that found no
descriptor (`AcceptErrors`), which it logged with a traceback each time it retried.
"""

from __future__ import annotations

import errno
import json
import logging
from dataclasses import dataclass

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from repositories.log_limits import LimitedLog

log = logging.getLogger(__name__)

# The connections the admin API holds at most, as a share of the process's descriptors.
DESCRIPTOR_SHARE = 8
MIN_CONNECTIONS = 4
MAX_CONNECTIONS = 256
ACCEPT_BACKLOG = 16
HEADER_BYTES = 16 << 10  # a request line and headers larger than this are refused (400)


def connection_cap(descriptor_limit: int) -> int:
    """The most connections the admin API holds in a process allowed `descriptor_limit`
    descriptors (RLIMIT_NOFILE's soft limit; 0 or less: unlimited): an eighth of them,
    at least MIN_CONNECTIONS and at most MAX_CONNECTIONS. An operator, a dashboard,
    Prometheus and a rolling deploy need a few; the flow's files and sockets, the rest."""
    if descriptor_limit <= 0:
        return MAX_CONNECTIONS
    return max(MIN_CONNECTIONS, min(MAX_CONNECTIONS, descriptor_limit // DESCRIPTOR_SHARE))


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = MAX_CONNECTIONS
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    send_stall_s: float = 60.0
    keep_alive_s: int = 5  # uvicorn's: an idle connection after an answer

    @classmethod
    def for_descriptors(cls, descriptor_limit: int, **changes) -> ConnectionLimits:
        return cls(max_connections=connection_cap(descriptor_limit), **changes)


def _raw_answer(status: int, reason: str, message: str, extra: str = "") -> bytes:
    """An answer written on the connection itself, outside any request (h11 has none
    to answer): the API's error shape, and the connection closed after it."""
    body = json.dumps({"error": message, "status": status}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"{extra}Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _UvicornLog:
    """uvicorn's protocol logs each malformed request ("Invalid HTTP request received.")
    and each failed one, with its traceback: written through `LimitedLog`, one line per
    message per interval (its messages are uvicorn's constants: a bounded set of kinds)."""

    def __init__(self, logger: logging.Logger, refusals: LimitedLog):
        self._logger = logger
        self._refusals = refusals

    @property
    def level(self) -> int:
        return self._logger.level

    def log(self, level: int, message: str, *args, **kwargs) -> None:
        if level >= logging.WARNING:
            self._refusals.log(level, f"uvicorn: {message}", f"admin API: {message}", *args, **kwargs)
        else:
            self._logger.log(level, message, *args, **kwargs)

    def debug(self, message: str, *args, **kwargs) -> None:
        self.log(logging.DEBUG, message, *args, **kwargs)

    def info(self, message: str, *args, **kwargs) -> None:
        self.log(logging.INFO, message, *args, **kwargs)

    def warning(self, message: str, *args, **kwargs) -> None:
        self.log(logging.WARNING, message, *args, **kwargs)

    def error(self, message: str, *args, **kwargs) -> None:
        self.log(logging.ERROR, message, *args, **kwargs)


class AdminConnection(H11Protocol):
    """One connection of the admin API: uvicorn's h11 protocol, with the cap and the
    deadlines of the module's docstring. The deadline that applies follows h11's view
    of the client: IDLE (its request line and headers are due), SEND_BODY (its body
    is), anything else (the app answers: no read deadline)."""

    def __init__(self, config, server_state, app_state, _loop=None, *, limits: ConnectionLimits, refusals: LimitedLog):
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        self.refusals = refusals
        self.logger = _UvicornLog(self.logger, refusals)
        self._deadline = None  # asyncio.TimerHandle of the read deadline that applies
        self._deadline_for = None  # h11.IDLE (headers) or h11.SEND_BODY (a body)
        self._send_stall = None

    # -- the cap -----------------------------------------------------------------------
    def connection_made(self, transport) -> None:
        if len(self.connections) >= self.limits.max_connections:
            self.transport = transport  # for uvicorn's connection_lost, which closes it
            self.refusals.warning(
                "connection cap",
                "admin API: refused a connection%s: it holds its most, %d, at once",
                _peer(transport),
                self.limits.max_connections,
            )
            transport.write(
                _raw_answer(
                    503,
                    "Service Unavailable",
                    f"the admin API holds its most connections at once ({self.limits.max_connections}); retry in a "
                    f"moment, and close connections you do not use",
                    "Retry-After: 1\r\n",
                )
            )
            transport.close()
            return
        super().connection_made(transport)
        self._follow_the_client()

    def connection_lost(self, exc) -> None:
        self._set_deadline(None)
        self._cancel_send_stall()
        super().connection_lost(exc)

    # -- read deadlines ----------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow_the_client()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_the_client()  # the next request's headers are due (if the connection stays)

    def _follow_the_client(self) -> None:
        if self.transport is None or self.transport.is_closing():
            self._set_deadline(None)
            return
        state = self.conn.their_state
        self._set_deadline(state if state in (h11.IDLE, h11.SEND_BODY) else None)

    def _set_deadline(self, due) -> None:
        if due is self._deadline_for:
            return  # the same deadline runs on: a trickle of bytes does not extend it
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._deadline_for = due
        if due is not None:
            seconds = self.limits.header_timeout_s if due is h11.IDLE else self.limits.body_timeout_s
            self._deadline = self.loop.call_later(seconds, self._read_deadline_passed, due, seconds)

    def _read_deadline_passed(self, due, seconds: float) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        what = "request line and headers" if due is h11.IDLE else "request body"
        self.refusals.warning(
            f"{what} deadline",
            "admin API: cut a connection%s: its %s did not arrive within %g s",
            _peer(self.transport),
            what,
            seconds,
        )
        if self.cycle is None or self.cycle.response_complete or not self.cycle.response_started:
            self.transport.write(
                _raw_answer(
                    408,
                    "Request Timeout",
                    f"the {what} did not arrive within {seconds:g} s; send the whole request at once",
                )
            )
        self.transport.close()

    # -- a client that does not read its answer ----------------------------------------
    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_stall is None:
            self._send_stall = self.loop.call_later(self.limits.send_stall_s, self._send_stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._cancel_send_stall()

    def _cancel_send_stall(self) -> None:
        if self._send_stall is not None:
            self._send_stall.cancel()
            self._send_stall = None

    def _send_stalled(self) -> None:
        self._send_stall = None
        self.refusals.warning(
            "answer stalled",
            "admin API: cut a connection%s: it read none of its answer for %g s",
            _peer(self.transport),
            self.limits.send_stall_s,
        )
        self.transport.abort()  # close() would wait for the buffer the client does not read


class AcceptErrors:
    """The event loop's exception handler for the admin API's loop: asyncio logs an
    accept that finds no descriptor (EMFILE, ENFILE) or memory with a traceback, and
    retries a second later, as long as the shortage lasts. One line per interval
    instead, naming the limit; everything else goes to asyncio's own handler."""

    _SHORTAGES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)

    def __init__(self, refusals: LimitedLog, descriptor_limit: int):
        self.refusals = refusals
        self.descriptor_limit = descriptor_limit

    def __call__(self, loop, context: dict) -> None:
        error = context.get("exception")
        if isinstance(error, OSError) and error.errno in self._SHORTAGES:
            self.refusals.error(
                "accept",
                "admin API: cannot accept a connection: %s (the process may hold %d "
                "descriptors); the flow may be short of them too: raise the limit (ulimit -n) "
                "or find what holds them",
                error.strerror or error,
                self.descriptor_limit,
            )
            return
        loop.default_exception_handler(context)


def _peer(transport) -> str:
    peer = transport.get_extra_info("peername") if transport is not None else None
    return f" from {peer[0]}" if peer else ""
