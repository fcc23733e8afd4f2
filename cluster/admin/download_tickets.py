"""Download tickets for a FlowFile's content, after NiFi's one-time download tokens: a
browser link cannot carry an `Authorization` header, so a caller with the read role
asks for a ticket (`POST /api/v1/flowfiles/{uuid}/content/ticket`) and puts it in the
content link as `?ticket=`; the content route then serves that FlowFile's content to
whoever holds the link, until the ticket expires.

A ticket is `<expires, ms since the epoch>.<mac>`, the mac an HMAC-SHA256 of the
FlowFile's uuid and the expiry under a secret drawn when the node's admin API is made
(nothing is stored, and a ticket made before a restart is refused after it). It
serves one FlowFile only, for `TTL_S` seconds.

    tickets = DownloadTickets()                  # a random secret, the wall clock
    ticket = tickets.issue(uuid)                 # Ticket(value, expires_at)
    tickets.check(ticket.value, uuid)            # or TicketRefused
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

TTL_S = 60.0
SECRET_BYTES = 32
MAX_TICKET_CHARS = 128  # a ticket is 20 digits at most, a dot and 43 characters of mac
MAX_FILENAME_CHARS = 200
REFUSED = (
    "the download ticket is not valid for this FlowFile or has expired (a ticket serves one FlowFile "
    "for 60 s, on the node that made it): ask for a new one with POST /api/v1/flowfiles/{uuid}/content/ticket"
)
_TICKET = re.compile(r"^([0-9]{1,20})\.([A-Za-z0-9_-]{43})$")
# What a quoted filename in Content-Disposition keeps as it is; every other character is '_'.
_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9 ._()+-]")


class TicketRefused(Exception):
    """The ticket is malformed, not made by this node, for another FlowFile, or expired."""

    def __init__(self, reason: str):
        super().__init__(REFUSED)
        self.reason = reason  # for the log: the caller is told only `REFUSED`


@dataclass(frozen=True)
class Ticket:
    value: str
    expires_at: float  # unix seconds


class DownloadTickets:
    """Issues and checks tickets; `clock` gives unix seconds (injected by tests)."""

    def __init__(self, *, secret: bytes | None = None, clock: Callable[[], float] = time.time, ttl_s: float = TTL_S):
        self._secret = secret if secret is not None else secrets.token_bytes(SECRET_BYTES)
        self._clock = clock
        self._ttl_s = ttl_s

    def issue(self, uuid: str) -> Ticket:
        expires_ms = int((self._clock() + self._ttl_s) * 1000)
        return Ticket(f"{expires_ms}.{self._mac(uuid, expires_ms)}", expires_ms / 1000)

    def check(self, ticket: str, uuid: str) -> None:
        """Return if `ticket` serves `uuid` now; raise `TicketRefused` if not."""
        found = _TICKET.fullmatch(ticket) if len(ticket) <= MAX_TICKET_CHARS else None
        if found is None:
            raise TicketRefused("malformed")
        expires_ms = int(found.group(1))
        # The mac first: an expiry is believed only once it is known to be ours.
        if not hmac.compare_digest(found.group(2), self._mac(uuid, expires_ms)):
            raise TicketRefused("not made by this node for this FlowFile")
        if self._clock() * 1000 >= expires_ms:
            raise TicketRefused("expired")

    def _mac(self, uuid: str, expires_ms: int) -> str:
        message = f"{uuid.lower()}\n{expires_ms}".encode()
        digest = hmac.new(self._secret, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def attachment_filename(filename: str | None, uuid: str) -> str:
    """The name a download is saved under: the FlowFile's filename attribute with its
    directories dropped and every character a quoted header value or a file system
    could misread replaced by '_'; the uuid when nothing of it is left."""
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE_IN_FILENAME.sub("_", name).strip(" .")[:MAX_FILENAME_CHARS]
    return name if name.strip("_") else uuid
