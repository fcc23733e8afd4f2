"""A provenance query: indexed fields, a time range and a page, ANDed together.

Answers come newest first (by event id). A page is `offset` index hits on, at most
`limit` events; `max_event_id` pins the pages of one listing to the events indexed
when it began. Event files are indexed in increasing id order, so every event
indexed later has a larger id than every event indexed before: pinned to the newest
hit of the first page, later pages neither shift when new events arrive nor, since
age-off removes the oldest events, when old ones go.

The time bounds callers may write (`parse_time`) and the event type names they may
ask for (`parse_event_type`) are read here, so that the CLI and the admin API read
them alike.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass, field

from .event import EventType, ProvenanceEvent

# Every name of NiFi's ProvenanceEventType. This repository records the members of
# `EventType`; a query for another (FETCH, ADDINFO) is valid and matches nothing.
NIFI_EVENT_TYPES = (
    "CREATE",
    "RECEIVE",
    "FETCH",
    "SEND",
    "DROP",
    "EXPIRE",
    "FORK",
    "JOIN",
    "CLONE",
    "CONTENT_MODIFIED",
    "ATTRIBUTES_MODIFIED",
    "ROUTE",
    "ADDINFO",
    "REPLAY",
)
assert {kind.value for kind in EventType} <= set(NIFI_EVENT_TYPES)

# `\Z`, not `$`: `$` also matches before a trailing newline, which `strict` must refuse.
_RELATIVE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([smhd])\Z")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


_DIGITS = re.compile(r"^[0-9]+\Z")
# The index keeps times as signed 64-bit milliseconds: a bound beyond them is no bound.
_LATEST_MS = (1 << 63) - 1
_EARLIEST_MS = -(1 << 63)
# RFC 3339's date-time: what an API's spec can promise ("format: date-time"), with its zone.
_RFC3339 = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})\Z"
)


def parse_time(text: str, *, now: float | None = None, strict: bool = False) -> int:
    """Milliseconds since the epoch from '15m' / '2h' (ago, from `now` in seconds), an
    ISO 8601 time (UTC when it names no zone), or epoch milliseconds. `strict`: the
    time must be an RFC 3339 date-time, with its zone, and nothing may surround a form."""
    now = time.time() if now is None else now
    match = _RELATIVE.match(text if strict else text.strip())
    if match:
        return int((now - float(match.group(1)) * _UNITS[match.group(2)]) * 1000)
    if _DIGITS.match(text):
        return min(int(text), _LATEST_MS)  # beyond any index's range: no bound
    try:
        if strict and not _RFC3339.match(text):
            raise ValueError(text)
        moment = dt.datetime.fromisoformat(text.upper() if strict else text)
    except ValueError:
        form = "an RFC 3339 time with its zone" if strict else "an ISO time"
        raise ValueError(f"cannot read time {text!r}: use 15m, 2h, 3d, {form} or epoch ms") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return max(_EARLIEST_MS, min(_LATEST_MS, int(moment.timestamp() * 1000)))
    except (OverflowError, ValueError):  # a zone that moves it past year 1 or 9999
        return _EARLIEST_MS if moment.year < 5000 else _LATEST_MS


def parse_event_type(text: str) -> str:
    """One of `NIFI_EVENT_TYPES`, in any case; ValueError naming the known ones."""
    name = text.strip().upper()
    if name not in NIFI_EVENT_TYPES:
        raise ValueError(f"{text!r} is not a provenance event type; NiFi's are {', '.join(NIFI_EVENT_TYPES)}")
    return name


@dataclass(frozen=True, slots=True)
class ProvenanceQuery:
    event_type: EventType | str | None = None
    flowfile_uuid: str | None = None
    filename: str | None = None
    component_id: str | None = None
    relationship: str | None = None
    start_ms: int | None = None  # inclusive
    end_ms: int | None = None  # inclusive
    limit: int = 1000
    offset: int = 0  # index hits to pass over, newest first
    max_event_id: int | None = None  # inclusive: pins a listing (see the module docstring)

    def terms(self) -> dict[str, str]:
        """Index field name -> exact value, for every field the query constrains."""
        kind = self.event_type.value if isinstance(self.event_type, EventType) else self.event_type
        pairs = {
            "type": kind,
            "uuid": self.flowfile_uuid,
            "filename": self.filename,
            "component": self.component_id,
            "relationship": self.relationship,
        }
        return {k: v for k, v in pairs.items() if v is not None}

    def overlaps(self, min_time_ms: int, max_time_ms: int) -> bool:
        """Whether a shard or file holding times [min, max] can match."""
        if self.start_ms is not None and max_time_ms < self.start_ms:
            return False
        if self.end_ms is not None and min_time_ms > self.end_ms:
            return False
        return True


@dataclass
class QueryResult:
    """Matching events, newest first, plus what could not be returned and why.

    Hits are what the index found. Some hits are not returned: their event file was
    aged off since (`skipped_missing`), their block is damaged (`errors`), or, for a
    uuid, they name another uuid with the same index key. So a page may hold fewer
    events than its limit while more follow: the next page starts at `offset + hits`
    (or, as a cursor, at `max_event_id = last_hit_id - 1`), and the listing is done
    when a page covers fewer hits than its limit.
    """

    events: list[ProvenanceEvent] = field(default_factory=list)
    # Hits whose event file has been aged off since they were indexed (skipped).
    skipped_missing: int = 0
    # Hits in damaged blocks: (event id, message). The other hits are still returned.
    errors: list[tuple[int, str]] = field(default_factory=list)
    shards_searched: int = 0
    shards_skipped: int = 0
    total: int = 0  # hits of the whole listing: offset and limit aside
    hits: int = 0  # hits this answer covered, from `offset` on
    newest_hit_id: int | None = None  # of the whole listing: pins its later pages
    last_hit_id: int | None = None  # the oldest hit this answer covered
