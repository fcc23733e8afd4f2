"""The provenance outbox: provenance that survives a crash between the WAL and provenance.

NiFi writes provenance after the FlowFile repository; a crash in between loses the
events of a committed session. Custody closes that window: each commit also puts, in
its own WAL transaction, one record per commit slot (a slot is held by one committing
thread at a time) carrying that commit's events and the provenance repository's next
event id at the time. Only the last commit of a slot can be missing from provenance
(a slot registers its events before its next commit), so at recovery `reconcile`
looks for each slot's events from that id on and registers those that are missing.

Record: id `__provenance_outbox__/<slot>`, queue `__provenance_outbox__`, attributes
`{"next": <event id>, "format": "marshal-4", "events": <the events>}`. The events are a
list of plain tuples (see `encode_events`) serialized with `marshal` (version 4) and
carried as a latin-1 string: it is C-fast, shares the attribute maps events have in
common, and was a third of the cost of JSON in the flow benchmark. marshal is tied to
the Python version, which is acceptable for what only a restart of the same node
reads; a record that cannot be decoded is logged and skipped (it can only be the last
commit of its slot).
"""

from __future__ import annotations

import logging
import marshal

from repositories.claims import ContentClaim, ResourceClaim
from repositories.provenance import ProvenanceEvent

from .flowfile import FlowFile
from .shard import OUTBOX_QUEUE

log = logging.getLogger(__name__)


FORMAT = "marshal-4"


def _unclaim(value):
    if value is None:
        return None
    container, section, resource, offset, length = value
    return ContentClaim(ResourceClaim(container, section, resource), offset, length)


def encode_events(events, now_ms: int | None = None) -> str:
    """Events without a time are stamped `now_ms`: the commit registers them with the
    same time, so a replayed copy is recognisably the same event."""
    rows = []
    claims: dict = {}

    def claim(value):
        if value is None:
            return None
        row = claims.get(value)
        if row is None:
            resource = value.resource
            row = claims[value] = (resource.container, resource.section, resource.id, value.offset, value.length)
        return row

    for e in events:
        before, after = e.attributes_before, e.attributes_after
        rows.append((e.event_type.value, e.flowfile_uuid, e.component_id, e.component_type,
                     e.event_time_ms if e.event_time_ms is not None else now_ms,
                     tuple(e.parent_uuids), tuple(e.child_uuids),
                     before if type(before) is dict else dict(before), after if type(after) is dict else dict(after),
                     claim(e.content_before), claim(e.content_after), e.transit_uri, e.details, e.relationship,
                     e.size))
    return marshal.dumps(rows, 4).decode("latin-1")


def decode_events(text: str) -> list[ProvenanceEvent]:
    events = []
    for (kind, uuid, component, component_type, time_ms, parents, children, before, after, content_before,
         content_after, transit, details, relationship, size) in marshal.loads(text.encode("latin-1")):
        events.append(ProvenanceEvent(kind, uuid, component, component_type, time_ms, tuple(parents),
                                      tuple(children), before, after, _unclaim(content_before),
                                      _unclaim(content_after), transit, details, relationship, size))
    return events


def outbox_record(slot: int, next_event_id: int, events, now_ms: int) -> FlowFile:
    attributes = {"next": str(next_event_id), "format": FORMAT, "events": encode_events(events, now_ms)}
    return FlowFile(f"{OUTBOX_QUEUE}/{slot}", attributes, None, OUTBOX_QUEUE, 0, now_ms, now_ms, 0)


def _key(event: ProvenanceEvent) -> tuple:
    return (event.event_type.value, event.flowfile_uuid, event.component_id, event.relationship,
            event.transit_uri)


def reconcile(records, provenance, *, foreign: bool = False) -> int:
    """Register the outbox events provenance does not have. Returns how many.

    `foreign`: the records come from another node's shard (a clustered node adopted
    it), whose events were registered, if at all, in that node's provenance: register
    every one here (a cluster-wide view collapses copies by event identity)."""
    registered = 0
    for record in records:
        if record.attributes.get("format") != FORMAT:
            log.warning("provenance outbox %s: unknown format %r, skipped", record.id, record.attributes.get("format"))
            continue
        try:
            events = decode_events(record.attributes["events"])
        except (ValueError, EOFError, TypeError, KeyError) as error:
            log.warning("provenance outbox %s cannot be decoded (%s); its events are skipped", record.id, error)
            continue
        if not events:
            continue
        start = int(record.attributes.get("next", "0"))
        end = provenance.next_event_id
        present = set()
        if end > start and not foreign:
            for found in provenance.events(start, end - start, skip_damaged=True):
                present.add(_key(found))
        missing = [e for e in events if _key(e) not in present]
        if missing:
            provenance.register_events(missing)
            registered += len(missing)
            log.info("provenance outbox %s: registered %d events a crash had kept from provenance",
                     record.id, len(missing))
    return registered
