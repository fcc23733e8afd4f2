"""The provenance outbox: provenance that survives a crash between the WAL and provenance.

NiFi writes provenance after the FlowFile repository; a crash in between loses the
events of a committed session. Custody closes that window: each commit also puts, in
its own WAL transaction, one record per commit slot (a slot is held by one committing
thread at a time) carrying that commit's events and the provenance repository's next
event id at the time. Only the last commit of a slot can be missing from provenance
(a slot is taken again only once its events are registered: at once for a large
commit, once its group is registered for a small one), so at recovery `reconcile`
looks for each slot's events from that id on and registers those that are missing.

Record: id `__provenance_outbox__/<slot>`, queue `__provenance_outbox__`, attributes
`{"next": <event id>, "format": <format>, "events": <the events>}`, where the events
are, by format:

* `json-rows-1` (written now for a commit of at most `ROWS_AT_MOST` events, which
  provenance registers together with other commits' events, `register_rows_later`):
  the events as a JSON array (UTF-8, no whitespace), one array per event holding the
  columns of `BODY_SCHEMA` in order: time in ms (integer), event type (string),
  FlowFile uuid, parent uuids (array of strings), child uuids, component id,
  component type (string or null), attributes before (object of strings), attributes
  after, content before (null or `[container, section, resource id, offset,
  length]`), content after, transit URI (string or null), details, relationship,
  size (integer). JSON, not Arrow: the rows are written per commit and turned into
  Arrow once per group; JSON's text is the same in every Python.
* `arrow-ipc-zstd-1` (written now for larger commits): the commit's events as the provenance repository
  registers them, an `EventBatch` in one Arrow IPC record-batch message
  (`EventBatch.to_message`: the columns of `BODY_SCHEMA`, events without ids, each
  with its time), compressed with zstd (one frame), carried as a latin-1 string (one
  character per byte); attribute `size` is the message's length before compression.
  A commit builds that batch once and both the outbox and the provenance repository
  use it, so the events are encoded once per commit, in Arrow's C++ code; zstd keeps
  the record smaller than the marshal format's. Arrow's IPC format is stable across
  versions, so a node of another Python or pyarrow reads it.
* `marshal-4` (written by earlier releases, still read): a list of plain tuples
  (`decode_marshal`) serialized with `marshal` (version 4), as a latin-1 string.

A record that cannot be decoded is logged and skipped (it can only be the last commit
of its slot).
"""

from __future__ import annotations

import json
import logging
import marshal
import threading
from collections import Counter
from collections.abc import Sequence

import pyarrow as pa
import zstandard

from repositories.claims import ContentClaim, ResourceClaim
from repositories.provenance import EventBatch, InvalidEventError, ProvenanceEvent
from repositories.provenance.event_batch import EventRow, check_row, claim_tuple, event_of_row, to_events

from .flowfile import FlowFile
from .shard import OUTBOX_QUEUE

log = logging.getLogger(__name__)


FORMAT = "arrow-ipc-zstd-1"
ROWS_FORMAT = "json-rows-1"
ROWS_AT_MOST = 32  # a commit of more events pays for one batch of its own, and its record is compressed
MARSHAL_FORMAT = "marshal-4"
CODEC = "zstd"
# A message this many times its compressed size is not one this module wrote
# (zstd rarely passes 20:1 on events, whose uuids do not compress).
MOST_EXPANSION = 1000
# Events read per step of the scan for a slot's events at recovery: the first step,
# then doubling up to the largest (a slot's events are most often right at its start).
FIRST_SCAN_WINDOW = 256
SCAN_WINDOW = 4096


def _unclaim(value):
    if value is None:
        return None
    container, section, resource, offset, length = value
    return ContentClaim(ResourceClaim(container, section, resource), offset, length)


def decode_marshal(text: str) -> list[ProvenanceEvent]:
    """The events of a `marshal-4` record: rows of (type, uuid, component id, component
    type, time, parents, children, attributes before, after, content before, after as
    (container, section, resource id, offset, length) or None, transit URI, details,
    relationship, size)."""
    events = []
    for (
        kind,
        uuid,
        component,
        component_type,
        time_ms,
        parents,
        children,
        before,
        after,
        content_before,
        content_after,
        transit,
        details,
        relationship,
        size,
    ) in marshal.loads(text.encode("latin-1")):
        events.append(
            ProvenanceEvent(
                kind,
                uuid,
                component,
                component_type,
                time_ms,
                tuple(parents),
                tuple(children),
                before,
                after,
                _unclaim(content_before),
                _unclaim(content_after),
                transit,
                details,
                relationship,
                size,
            )
        )
    return events


def decode_events(attributes: dict) -> list[ProvenanceEvent]:
    """The events of an outbox record's attributes, whichever format wrote them.
    Raises ValueError for a record that cannot be decoded."""
    form, text = attributes.get("format"), attributes.get("events")
    if text is None:
        raise ValueError("the record has no events")
    if form == FORMAT:
        return to_events(_batch(text, attributes).record_batch)
    if form == ROWS_FORMAT:
        return decode_rows(text)
    if form == MARSHAL_FORMAT:
        try:
            return decode_marshal(text)
        except (EOFError, TypeError) as error:
            raise ValueError(f"{type(error).__name__}: {error}") from None
    raise ValueError(f"unknown format {form!r}")


def _batch(text: str, attributes: dict) -> EventBatch:
    """The `EventBatch` of an `arrow-ipc-zstd-1` record, checked as `decode_events` checks it."""
    return EventBatch.from_message(_decompress(text.encode("latin-1"), attributes.get("size")))


def _arrow_batch(attributes: dict) -> EventBatch | None:
    """The batch of an `arrow-ipc-zstd-1` record as written; None for another format."""
    text = attributes.get("events")
    return _batch(text, attributes) if attributes.get("format") == FORMAT and text is not None else None


def _decompress(data: bytes, size: str | None) -> bytes:
    try:
        expected = int(size or "")
    except ValueError:
        raise ValueError(f"the record's size {size!r} is not a number") from None
    if not 0 < expected <= MOST_EXPANSION * max(len(data), 1):
        raise ValueError(f"the record's size {expected} does not fit its {len(data)} compressed bytes")
    try:
        message = pa.decompress(data, decompressed_size=expected, codec=CODEC, asbytes=True)
    except (pa.ArrowException, OSError, ValueError) as error:
        raise ValueError(f"the events do not decompress: {error}") from None
    if len(message) != expected:
        raise ValueError(f"the events decompress to {len(message)} bytes, not {expected}")
    return message


_compressors = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    """This thread's zstd compressor, at Arrow's default level (1), which wrote these
    records before: one frame, its content size in its header. Made once per thread,
    not per commit (a context costs more than compressing a commit's events)."""
    compressor = getattr(_compressors, "compressor", None)
    if compressor is None:
        compressor = _compressors.compressor = zstandard.ZstdCompressor(level=1)
    return compressor


def outbox_record(slot: int, next_event_id: int, batch: EventBatch, now_ms: int) -> FlowFile:
    """The record of `slot` carrying `batch`, the commit's events stamped with their time."""
    message = batch.to_message()
    attributes = {
        "next": str(next_event_id),
        "format": FORMAT,
        "size": str(len(message)),
        "events": _compressor().compress(message).decode("latin-1"),
    }
    return FlowFile(f"{OUTBOX_QUEUE}/{slot}", attributes, None, OUTBOX_QUEUE, 0, now_ms, now_ms, 0)


def _json_row(row: EventRow) -> list[object]:
    return [
        *row[0:3],
        list(row[3]),
        list(row[4]),
        row[5],
        row[6],
        dict(row[7]),
        dict(row[8]),
        claim_tuple(row[9]),  # a JSON array
        claim_tuple(row[10]),
        *row[11:15],
    ]


def rows_record(slot: int, next_event_id: int, rows: Sequence[EventRow], now_ms: int) -> FlowFile:
    """The record of `slot` carrying `rows` (`EventRow`s with their times), `json-rows-1`."""
    text = json.dumps([_json_row(row) for row in rows], ensure_ascii=False, separators=(",", ":"))
    attributes = {"next": str(next_event_id), "format": ROWS_FORMAT, "events": text}
    return FlowFile(f"{OUTBOX_QUEUE}/{slot}", attributes, None, OUTBOX_QUEUE, 0, now_ms, now_ms, 0)


def decode_rows(text: str) -> list[ProvenanceEvent]:
    """The events of a `json-rows-1` record. Raises ValueError for text that is not
    such rows, or an event that breaks provenance's rules."""
    try:
        rows = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the events are not JSON: {error}") from None
    if not isinstance(rows, list):
        raise ValueError("the events are not a JSON array")
    events = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(EventRow._fields):
            raise ValueError(f"an event is not an array of {len(EventRow._fields)} columns")
        try:
            if type(row[0]) is not int:
                raise TypeError(f"its time {row[0]!r} is not an integer")
            time_ms, kind, uuid, parents, children, component, component_type, before, after = row[:9]
            transit, details, relationship, size = row[11:]
            event = EventRow(
                time_ms,
                kind,
                uuid,
                tuple(parents),
                tuple(children),
                component,
                component_type,
                before,
                after,
                _unclaim(row[9]),
                _unclaim(row[10]),
                transit,
                details,
                relationship,
                size,
            )
            check_row(event)
            events.append(event_of_row(event))
        except (TypeError, ValueError) as error:
            raise ValueError(f"an event does not fit: {error}") from None
    return events


def _key(event: ProvenanceEvent) -> tuple:
    return (event.event_type.value, event.flowfile_uuid, event.component_id, event.relationship, event.transit_uri)


def reconcile(records, provenance, *, foreign: bool = False) -> int:
    """Register the outbox events provenance does not have. Returns how many.

    `foreign`: the records come from another node's shard (a clustered node adopted
    it), whose events were registered, if at all, in that node's provenance: register
    every one here (a cluster-wide view collapses copies by event identity). A record
    written as an Arrow batch is registered as that batch: decoding it to event objects
    only to encode them again would hold up the adoption."""
    registered = 0
    for record in records:
        attributes = record.attributes
        try:
            whole = _arrow_batch(attributes) if foreign else None
            events = decode_events(attributes) if whole is None else []
        except (ValueError, InvalidEventError) as error:
            log.warning("provenance outbox %s cannot be decoded (%s); its events are skipped", record.id, error)
            continue
        if whole is not None:
            count = len(whole)
            if count:
                provenance.register_batch(whole)
        else:
            missing = events if foreign else _missing(events, int(attributes.get("next", "0")), provenance)
            count = len(missing)
            if count:
                provenance.register_events(missing)
        if count:
            registered += count
            log.info("provenance outbox %s: registered %d events a crash had kept from provenance", record.id, count)
    return registered


def _missing(events: list[ProvenanceEvent], start: int, provenance) -> list[ProvenanceEvent]:
    """The events provenance does not hold at or after id `start`.

    A slot's events were registered, if at all, in one block soon after `start` (the
    next id when the slot committed): the scan reads forward a window at a time and
    stops once every event is found. A slot idle since early in a long history is
    found near its `start` and costs a window, not the whole history since; events
    that are missing mean the crash followed the commit, so the tail after `start`
    is short. A `start` older than every event provenance keeps (recovery merged the
    journals into event files before this runs) means the events were registered and
    aged off since: a node that ran that long registered them."""
    end = provenance.next_event_id
    if end <= start:
        return events
    files = provenance.event_files()
    if (files[0].first_id if files else end) > start:
        return []
    wanted = Counter(_key(event) for event in events)
    position, size = start, FIRST_SCAN_WINDOW
    while position < end and wanted:
        window = provenance.events(position, min(size, end - position), skip_damaged=True)
        size = min(2 * size, SCAN_WINDOW)
        for found in window:
            key = _key(found)
            if wanted[key] > 0:
                wanted[key] -= 1
                if not wanted[key]:
                    del wanted[key]
        position = window[-1].event_id + 1 if window else end
    missing = []
    for event in reversed(events):  # the last copies of a repeated key are the ones missing
        key = _key(event)
        if wanted[key] > 0:
            wanted[key] -= 1
            missing.append(event)
    return missing[::-1]
