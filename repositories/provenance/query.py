"""A provenance query: indexed fields, a time range and a limit, ANDed together."""

from __future__ import annotations

from dataclasses import dataclass, field

from .event import EventType, ProvenanceEvent


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

    def terms(self) -> dict[str, str]:
        """Index field name -> exact value, for every field the query constrains."""
        kind = self.event_type.value if isinstance(self.event_type, EventType) else self.event_type
        pairs = {"type": kind, "uuid": self.flowfile_uuid, "filename": self.filename,
                 "component": self.component_id, "relationship": self.relationship}
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
    """Matching events, newest first, plus what could not be returned and why."""

    events: list[ProvenanceEvent] = field(default_factory=list)
    # Hits whose event file has been aged off since they were indexed (skipped).
    skipped_missing: int = 0
    # Hits in damaged blocks: (event id, message). The other hits are still returned.
    errors: list[tuple[int, str]] = field(default_factory=list)
    shards_searched: int = 0
    shards_skipped: int = 0
