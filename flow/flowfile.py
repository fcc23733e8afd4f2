"""The FlowFile, after NiFi's FlowFile repository design: attributes plus a pointer to
content, immutable.

A `FlowFile` is a named tuple with the fields of the WAL's `FlowFileRecord`, in the same
order (`to_record` / `from_record` convert; the WAL's record type is its own business,
e.g. lazily decoded). A change never edits a FlowFile: `with_attributes`, `with_content` and the session make
a new version. Attribute maps are shared between versions until one is changed
(copy-on-write) and must never be mutated in place; content claims are immutable
slices of the content repository (copy-on-write content).

`uuid` is the FlowFile's identity for its whole life: every version of a FlowFile
keeps it; a clone or a child gets a new one.
"""

from __future__ import annotations

from typing import NamedTuple

from repositories.claims import ContentClaim
from repositories.flowfile.record import FlowFileRecord

from .identifiers import new_uuid

CORE_ATTRIBUTES = ("filename", "path", "uuid")
_new = tuple.__new__


class FlowFile(NamedTuple):
    id: str
    attributes: dict
    content_claim: ContentClaim | None
    queue: str
    size: int
    entry_date: int  # ms since the epoch
    lineage_start_date: int  # ms since the epoch
    penalty_expiration: int = 0  # ms since the epoch; 0 when never penalized

    @property
    def uuid(self) -> str:
        return self.id

    def attribute(self, key: str, default: str | None = None) -> str | None:
        if key == "uuid":
            return self.id
        return self.attributes.get(key, default)

    @property
    def penalized_until(self) -> int:
        return self.penalty_expiration

    # The versions below are built directly: NamedTuple's `_replace` costs several
    # times as much, and the engine makes a few versions of every FlowFile.
    def with_attributes(self, attributes: dict[str, str]) -> FlowFile:
        return _new(FlowFile, (self[0], attributes, self[2], self[3], self[4], self[5], self[6], self[7]))

    def with_content(self, claim: ContentClaim | None, size: int) -> FlowFile:
        return _new(FlowFile, (self[0], self[1], claim, self[3], size, self[5], self[6], self[7]))

    def in_queue(self, queue: str) -> FlowFile:
        if self[3] == queue:
            return self
        return _new(FlowFile, (self[0], self[1], self[2], queue, self[4], self[5], self[6], self[7]))

    def penalized(self, until_ms: int) -> FlowFile:
        return _new(FlowFile, (self[0], self[1], self[2], self[3], self[4], self[5], self[6], until_ms))

    def to_record(self) -> FlowFileRecord:
        return FlowFileRecord(
            self.id,
            self.attributes,
            self.content_claim,
            self.queue,
            self.size,
            self.entry_date,
            self.lineage_start_date,
            self.penalty_expiration,
        )

    @classmethod
    def from_record(cls, record) -> FlowFile:
        if type(record) is cls:
            return record
        return cls(
            record.id,
            record.attributes,
            record.content_claim,
            record.queue,
            record.size,
            record.entry_date,
            record.lineage_start_date,
            record.penalty_expiration,
        )

    @classmethod
    def new(
        cls,
        now_ms: int,
        attributes: dict[str, str] | None = None,
        *,
        lineage_start: int | None = None,
        identity: str | None = None,
    ) -> FlowFile:
        flowfile_id = identity or new_uuid()
        merged = {"filename": flowfile_id, "path": "./"}
        if attributes:
            merged.update(attributes)
        merged.pop("uuid", None)
        return cls(flowfile_id, merged, None, "", 0, now_ms, now_ms if lineage_start is None else lineage_start, 0)
