"""The provenance event model (NiFi's): one immutable snapshot of a FlowFile at one step.

An event copies the FlowFile's attributes and its content pointer at the moment the
session committed (SEND keeps the attributes as they were when sent), together with
its relations to other FlowFiles. Ids are assigned by the repository when the event is
registered; they increase monotonically within a node.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..claims import ContentClaim
from .errors import InvalidEventError


class EventType(str, enum.Enum):
    CREATE = "CREATE"
    RECEIVE = "RECEIVE"
    SEND = "SEND"
    FORK = "FORK"
    CLONE = "CLONE"
    JOIN = "JOIN"
    ATTRIBUTES_MODIFIED = "ATTRIBUTES_MODIFIED"
    CONTENT_MODIFIED = "CONTENT_MODIFIED"
    ROUTE = "ROUTE"
    DROP = "DROP"
    EXPIRE = "EXPIRE"
    REPLAY = "REPLAY"


# Types that link FlowFiles to one another: lineage walks only these.
LINEAGE_TYPES = frozenset({EventType.FORK, EventType.CLONE, EventType.JOIN, EventType.REPLAY})


# Types whose events need nothing beyond a uuid and a component id.
_NO_RULES = frozenset(EventType) - {
    EventType.FORK,
    EventType.CLONE,
    EventType.JOIN,
    EventType.SEND,
    EventType.RECEIVE,
    EventType.ROUTE,
}


@dataclass(frozen=True, slots=True)
class ProvenanceEvent:
    """One provenance event.

    Relations follow NiFi: a FORK or CLONE event belongs to the parent FlowFile
    (`flowfile_uuid` is the parent, `child_uuids` the new FlowFiles); a JOIN event
    belongs to the child it created, with its inputs in `parent_uuids`.
    `event_id` is None until the repository assigns it; `event_time_ms` None means
    "stamp it with the repository clock when registered".
    """

    event_type: EventType
    flowfile_uuid: str
    component_id: str
    component_type: str = ""
    event_time_ms: int | None = None
    parent_uuids: tuple[str, ...] = ()
    child_uuids: tuple[str, ...] = ()
    attributes_before: Mapping[str, str] = field(default_factory=dict)
    attributes_after: Mapping[str, str] = field(default_factory=dict)
    content_before: ContentClaim | None = None
    content_after: ContentClaim | None = None
    transit_uri: str | None = None
    details: str | None = None
    relationship: str | None = None
    size: int = 0
    event_id: int | None = None

    def __post_init__(self) -> None:
        kind = self.event_type
        if kind in _NO_RULES and self.flowfile_uuid and self.component_id and type(kind) is EventType:
            return  # most events: only the uuid and component are required
        if not isinstance(kind, EventType):
            try:
                kind = EventType(kind)
            except ValueError:
                raise InvalidEventError(f"unknown provenance event type {self.event_type!r}") from None
            object.__setattr__(self, "event_type", kind)
        if not self.flowfile_uuid:
            raise InvalidEventError(f"{kind.value} event without a FlowFile uuid")
        if not self.component_id:
            raise InvalidEventError(f"{kind.value} event for {self.flowfile_uuid} without a component id")
        if kind in (EventType.FORK, EventType.CLONE) and not self.child_uuids:
            raise InvalidEventError(f"{kind.value} event for {self.flowfile_uuid} names no child FlowFile")
        if kind is EventType.JOIN and not self.parent_uuids:
            raise InvalidEventError(f"JOIN event for {self.flowfile_uuid} names no parent FlowFile")
        if kind in (EventType.SEND, EventType.RECEIVE) and not self.transit_uri:
            raise InvalidEventError(f"{kind.value} event for {self.flowfile_uuid} needs a transit URI")
        if kind is EventType.ROUTE and not self.relationship:
            raise InvalidEventError(f"ROUTE event for {self.flowfile_uuid} needs a relationship")

    @property
    def filename(self) -> str | None:
        """The FlowFile's `filename` attribute after the event (before, if it was removed)."""
        return self.attributes_after.get("filename") or self.attributes_before.get("filename")

    def with_id(self, event_id: int, event_time_ms: int) -> ProvenanceEvent:
        return replace(self, event_id=event_id, event_time_ms=event_time_ms)

    def to_dict(self) -> dict:
        """A JSON-ready view (used by the CLI and the admin API)."""

        def claim(c: ContentClaim | None):
            if c is None:
                return None
            r = c.resource
            return {"container": r.container, "section": r.section, "id": r.id, "offset": c.offset, "length": c.length}

        return {
            "event_id": self.event_id,
            "event_type": self.event_type.value,
            "event_time_ms": self.event_time_ms,
            "flowfile_uuid": self.flowfile_uuid,
            "parent_uuids": list(self.parent_uuids),
            "child_uuids": list(self.child_uuids),
            "component_id": self.component_id,
            "component_type": self.component_type,
            "attributes_before": dict(self.attributes_before),
            "attributes_after": dict(self.attributes_after),
            "content_before": claim(self.content_before),
            "content_after": claim(self.content_after),
            "transit_uri": self.transit_uri,
            "details": self.details,
            "relationship": self.relationship,
            "size": self.size,
        }
