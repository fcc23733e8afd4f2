"""Columnar batches of events: the unit the journals, event files and index handle.

Events travel as Arrow record batches so that encoding, merging (concatenate and sort
by id), compression and index-document building run in Arrow's C++ kernels instead of
a Python loop per event. `EventBatch` holds the columns of `BODY_SCHEMA` (everything
but the id); the repository prepends the ids it assigns, giving `SCHEMA`, which is what
the journals and event files store.

`SCHEMA` is part of the on-disk format: journal frames and event-file blocks hold Arrow
IPC record-batch messages of exactly this schema, read back with it. Changing it means
a new format version in `journal_format` and `event_file_format`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import is_
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from ..claims import ContentClaim, ResourceClaim
from .errors import InvalidEventError
from .event import EventType, ProvenanceEvent

CLAIM_TYPE = pa.struct(
    [
        ("container", pa.string()),
        ("section", pa.int32()),
        ("id", pa.string()),
        ("offset", pa.int64()),
        ("length", pa.int64()),
    ]
)
ATTRIBUTES_TYPE = pa.map_(pa.string(), pa.string())
UUIDS_TYPE = pa.list_(pa.string())

BODY_SCHEMA = pa.schema(
    [
        pa.field("time_ms", pa.int64(), nullable=False),
        pa.field("event_type", pa.string(), nullable=False),
        pa.field("flowfile_uuid", pa.string(), nullable=False),
        pa.field("parent_uuids", UUIDS_TYPE),
        pa.field("child_uuids", UUIDS_TYPE),
        pa.field("component_id", pa.string(), nullable=False),
        pa.field("component_type", pa.string()),
        pa.field("attributes_before", ATTRIBUTES_TYPE),
        pa.field("attributes_after", ATTRIBUTES_TYPE),
        pa.field("content_before", CLAIM_TYPE),
        pa.field("content_after", CLAIM_TYPE),
        pa.field("transit_uri", pa.string()),
        pa.field("details", pa.string()),
        pa.field("relationship", pa.string()),
        pa.field("size", pa.int64()),
    ]
)
_ID_FIELD = pa.field("id", pa.int64(), nullable=False)
SCHEMA = pa.schema([_ID_FIELD] + list(BODY_SCHEMA))

_REQUIRED = ("time_ms", "event_type", "flowfile_uuid", "component_id")
_TYPE_NAMES = pa.array([t.value for t in EventType])


def _claims_array(claims: Sequence[ContentClaim | None]) -> pa.Array:
    present = [c is not None for c in claims]
    if not any(present):
        return pa.nulls(len(claims), CLAIM_TYPE)
    fill = [c if c is not None else _NO_CLAIM for c in claims]
    return pa.StructArray.from_arrays(
        [
            pa.array([c.resource.container for c in fill], pa.string()),
            pa.array([c.resource.section for c in fill], pa.int32()),
            pa.array([c.resource.id for c in fill], pa.string()),
            pa.array([c.offset for c in fill], pa.int64()),
            pa.array([c.length for c in fill], pa.int64()),
        ],
        fields=list(CLAIM_TYPE),
        mask=pa.array([not p for p in present], pa.bool_()),
    )


def _maps_array(maps: Sequence) -> pa.Array:
    """A map column from attribute maps: keys and values flattened with their offsets,
    which Arrow converts faster than a list of dicts (and the same map is often met
    twice in a batch, as one event's after and the next one's before)."""
    keys: list[str] = []
    values: list[str] = []
    offsets = [0]
    for attributes in maps:
        keys.extend(attributes)
        values.extend(attributes.values())
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, pa.string()), pa.array(values, pa.string())
    )


def _maps_columns(before: Sequence, after: Sequence) -> tuple[pa.Array, pa.Array]:
    """The before and after map columns, each map object converted once: a FlowFile's
    events in one commit share their maps (a SEND's and a DROP's before and after are
    one map, a step's after is the next one's before), found by identity. Arrow's
    `take` repeats a converted map far faster than converting it again."""
    if all(map(is_, before, after)):
        after = before
    position: dict[int, int] = {}
    unique: list = []
    indexes: list[list[int]] = []
    for column in (before,) if after is before else (before, after):
        at = []
        for attributes in column:
            key = id(attributes)  # every map is alive in the rows meanwhile: ids are unique
            index = position.get(key)
            if index is None:
                index = position[key] = len(unique)
                unique.append(attributes)
            at.append(index)
        indexes.append(at)
    if len(unique) == sum(map(len, indexes)):  # nothing shared: each column as it is
        columns = [_maps_array(before)] if after is before else [_maps_array(before), _maps_array(after)]
    else:
        maps = _maps_array(unique)
        columns = [maps.take(pa.array(at, pa.int32())) for at in indexes]
    return columns[0], columns[-1]


_BODY_STRUCT = pa.struct(list(BODY_SCHEMA))
# A batch of at most this many events is converted row by row, as one struct column:
# one conversion call instead of some thirty (one per column and child), which is
# what a commit of one FlowFile pays for (36 us against 120 us for one event here;
# the two are level at about a hundred events, where the columns' shared maps start
# to pay).
FEW_ROWS = 32


def claim_tuple(claim: ContentClaim | None) -> tuple | None:
    """A claim as (container, section, resource id, offset, length), or None."""
    if claim is None:
        return None
    resource = claim.resource
    return (resource.container, resource.section, resource.id, claim.offset, claim.length)


def _as_dict(attributes: Mapping[str, str]) -> Mapping[str, str]:
    # Arrow converts a map from a dict only (or pairs), not from any mapping.
    return attributes if type(attributes) is dict else dict(attributes)


def _few_rows(rows: Sequence[EventRow], now_ms: int) -> pa.RecordBatch:
    """`from_rows` for a few rows: the same record batch, built from one struct array
    whose values are the rows as tuples (a map from its dict, a claim from a tuple)."""
    # A row is any tuple of the columns in `EventRow`'s order (an `EventRow` or not):
    # time, type, uuid, parents, children, component id and type (0-6), the attribute
    # maps (7, 8), the claims (9, 10), transit URI, details, relationship, size (11-14).
    values = [
        (
            now_ms if row[0] is None else row[0],
            *row[1:7],
            _as_dict(row[7]),
            _as_dict(row[8]),
            claim_tuple(row[9]),
            claim_tuple(row[10]),
            *row[11:],
        )
        for row in rows
    ]
    return pa.RecordBatch.from_struct_array(pa.array(values, _BODY_STRUCT))


def _columns_of_rows(rows: Sequence[EventRow], now_ms: int) -> pa.RecordBatch:
    """`from_rows` for many rows: each column converted on its own, the maps and claims
    that rows share converted once."""
    column = EventRow._make(zip(*rows, strict=False))  # each field: that column's values
    times = column.time_ms
    if None in times:
        times = [now_ms if t is None else t for t in times]
    maps_before, maps_after = _maps_columns(column.attributes_before, column.attributes_after)
    # A DROP, or a step that changed only attributes, has the same claim before and
    # after: convert it once (checked by identity, in one C loop).
    content_before, content_after = column.content_before, column.content_after
    claims_before = _claims_array(content_before)
    claims_after = claims_before if all(map(is_, content_before, content_after)) else _claims_array(content_after)
    columns = [
        pa.array(times, pa.int64()),
        pa.array(column.event_type, pa.string()),
        pa.array(column.flowfile_uuid, pa.string()),
        pa.array(column.parent_uuids, UUIDS_TYPE),
        pa.array(column.child_uuids, UUIDS_TYPE),
        pa.array(column.component_id, pa.string()),
        pa.array(column.component_type, pa.string()),
        maps_before,
        maps_after,
        claims_before,
        claims_after,
        pa.array(column.transit_uri, pa.string()),
        pa.array(column.details, pa.string()),
        pa.array(column.relationship, pa.string()),
        pa.array(column.size, pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=BODY_SCHEMA)


_NO_CLAIM = ContentClaim(ResourceClaim("none", 0, "none"), 0, 0)
_COUNTING = pa.array(range(1 << 16), pa.int64())
# A generation whose batches average fewer events than this is merged as one chunk.
SMALL_BATCH_ROWS = 256


class EventRow(NamedTuple):
    """One event as the flow's session builds it: `BODY_SCHEMA`'s columns in order (a
    tuple, far cheaper to make than a `ProvenanceEvent`, which a batch transposes in one
    C loop), the event type as its text, and `time_ms` None for "stamp it with the
    commit's time". Rows obey `ProvenanceEvent`'s rules by construction, or come from
    `row_of` an event that checked them."""

    time_ms: int | None
    event_type: str
    flowfile_uuid: str
    parent_uuids: tuple[str, ...]
    child_uuids: tuple[str, ...]
    component_id: str
    component_type: str
    attributes_before: Mapping[str, str]
    attributes_after: Mapping[str, str]
    content_before: ContentClaim | None
    content_after: ContentClaim | None
    transit_uri: str | None
    details: str | None
    relationship: str | None
    size: int


# `from_rows` transposes rows straight into the columns of `BODY_SCHEMA`.
if EventRow._fields != tuple(BODY_SCHEMA.names):
    raise ImportError(f"EventRow's fields {EventRow._fields} are not the provenance columns {BODY_SCHEMA.names}")


_TEXT_OR_NONE = (str, type(None))
_INT_OR_NONE = (int, type(None))


def _texts(value, name: str) -> None:
    if not all(type(item) is str for item in value):
        raise TypeError(f"{name} holds a value that is not a string")


def check_row(row: tuple) -> None:
    """Raise TypeError if `row` has a value its column cannot hold (what `from_rows`
    would refuse): for rows that are kept before they become a batch. A row from
    `row_of` or the session passes."""
    if len(row) != len(BODY_SCHEMA):
        raise TypeError(f"an event row has {len(row)} values, not {len(BODY_SCHEMA)}")
    time_ms, kind, uuid, parents, children, component, component_type, before, after = row[:9]
    if not (time_ms is None or type(time_ms) is int) or type(kind) is not str or type(uuid) is not str:
        raise TypeError(f"an event's time, type or uuid does not fit: {time_ms!r}, {kind!r}, {uuid!r}")
    if type(component) is not str or not isinstance(component_type, _TEXT_OR_NONE):
        raise TypeError(f"an event's component does not fit: {component!r}, {component_type!r}")
    _texts(parents, "parent_uuids")
    _texts(children, "child_uuids")
    for name, attributes in (("attributes_before", before), ("attributes_after", after)):
        if not isinstance(attributes, Mapping):
            raise TypeError(f"{name} is not a mapping")
        _texts(attributes, name)
        _texts(attributes.values(), name)
    for name, claim in (("content_before", row[9]), ("content_after", row[10])):
        if claim is not None and not isinstance(claim, ContentClaim):
            raise TypeError(f"{name} is not a content claim: {claim!r}")
    for name, text in (("transit_uri", row[11]), ("details", row[12]), ("relationship", row[13])):
        if not isinstance(text, _TEXT_OR_NONE):
            raise TypeError(f"{name} is not a string: {text!r}")
    if not isinstance(row[14], _INT_OR_NONE) or isinstance(row[14], bool):
        raise TypeError(f"size is not an integer: {row[14]!r}")


def row_of(event: ProvenanceEvent) -> EventRow:
    """`event` as a row (its id, if any, is not part of it)."""
    return EventRow(
        time_ms=event.event_time_ms,
        event_type=event.event_type.value,
        flowfile_uuid=event.flowfile_uuid,
        parent_uuids=event.parent_uuids,
        child_uuids=event.child_uuids,
        component_id=event.component_id,
        component_type=event.component_type,
        attributes_before=event.attributes_before,
        attributes_after=event.attributes_after,
        content_before=event.content_before,
        content_after=event.content_after,
        transit_uri=event.transit_uri,
        details=event.details,
        relationship=event.relationship,
        size=event.size,
    )


def event_of_row(row: EventRow) -> ProvenanceEvent:
    """The `ProvenanceEvent` a row stands for (checked by its rules)."""
    return ProvenanceEvent(
        EventType(row.event_type),
        row.flowfile_uuid,
        row.component_id,
        row.component_type,
        row.time_ms,
        tuple(row.parent_uuids),
        tuple(row.child_uuids),
        row.attributes_before,
        row.attributes_after,
        row.content_before,
        row.content_after,
        row.transit_uri,
        row.details,
        row.relationship,
        row.size,
    )


class EventBatch:
    """Events without ids, as Arrow columns of `BODY_SCHEMA`."""

    __slots__ = ("record_batch",)

    def __init__(self, record_batch: pa.RecordBatch):
        self.record_batch = record_batch

    def __len__(self) -> int:
        return self.record_batch.num_rows

    @classmethod
    def from_events(cls, events: Sequence[ProvenanceEvent], now_ms: int) -> EventBatch:
        """Columns of `events`; events without a time are stamped with `now_ms`."""
        return cls.from_rows([row_of(event) for event in events], now_ms)

    @classmethod
    def from_rows(cls, rows: Sequence[EventRow], now_ms: int) -> EventBatch:
        """Columns of event rows; rows without a time get `now_ms`."""
        if not rows:
            return cls(pa.RecordBatch.from_pylist([], schema=BODY_SCHEMA))
        return cls(_few_rows(rows, now_ms) if len(rows) <= FEW_ROWS else _columns_of_rows(rows, now_ms))

    @classmethod
    def from_arrow(cls, data: pa.RecordBatch | pa.Table) -> EventBatch:
        """Adopt columns built by a bulk producer, after checking schema and required fields.

        This is the fast path: it skips the per-event rules of `ProvenanceEvent`, and
        checks only what the repository itself relies on.
        """
        if isinstance(data, pa.Table):
            data = (
                data.combine_chunks().to_batches()[0]
                if data.num_rows
                else pa.RecordBatch.from_pylist([], schema=BODY_SCHEMA)
            )
        if not data.schema.equals(BODY_SCHEMA):
            try:
                data = data.select(BODY_SCHEMA.names).cast(BODY_SCHEMA)
            except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as error:
                raise InvalidEventError(f"event columns do not match the provenance schema: {error}") from None
        for name in _REQUIRED:
            if data.column(name).null_count:
                raise InvalidEventError(f"event columns: {name} is null in {data.column(name).null_count} rows")
        if len(data):
            _check_rules(data)
        return cls(data)

    def to_message(self) -> bytes:
        """The batch as one Arrow IPC record-batch message of `BODY_SCHEMA`: how the
        flow's provenance outbox carries a commit's events in the FlowFile WAL."""
        return self.record_batch.serialize().to_pybytes()

    @classmethod
    def from_message(cls, message) -> EventBatch:
        """The batch `to_message` wrote, checked in full as `read_stored_batch` checks a
        stored one, and against the rules every event obeys. Raises ValueError."""
        batch = _read_message(message, BODY_SCHEMA)
        if len(batch):
            try:
                _check_rules(batch)
            except InvalidEventError as error:
                raise ValueError(str(error)) from None
        return cls(batch)

    def with_ids(self, first_id: int) -> pa.RecordBatch:
        """The stored form: ids `first_id, first_id+1, ...` prepended."""
        n = self.record_batch.num_rows
        if FEW_ROWS < n <= len(_COUNTING):  # an add in Arrow, not a Python int per event
            ids = pc.add(_COUNTING.slice(0, n), pa.scalar(first_id, pa.int64()))
        else:  # a few Python ints cost less than a call into Arrow's compute
            ids = pa.array(range(first_id, first_id + n), pa.int64())
        # Added to the batch, not rebuilt from its columns (a Python object per column).
        return self.record_batch.add_column(0, _ID_FIELD, ids)


def _any(mask: pa.Array) -> bool:
    return bool(pc.any(mask).as_py())


def _check_rules(data: pa.RecordBatch) -> None:
    """The rules of `ProvenanceEvent.__post_init__`, column-wise, so stored rows always load."""
    kind = data.column("event_type")
    if not pc.all(pc.is_in(kind, value_set=_TYPE_NAMES)).as_py():
        raise InvalidEventError("event columns: unknown event type")

    def of(*types: str) -> pa.Array:
        return pc.is_in(kind, value_set=pa.array(types))

    def empty_list(name: str) -> pa.Array:
        return pc.fill_null(pc.equal(pc.list_value_length(data.column(name)), 0), True)

    def empty_text(name: str) -> pa.Array:
        return pc.fill_null(pc.equal(pc.utf8_length(data.column(name)), 0), True)

    for types, bad, rule in (
        (("FORK", "CLONE"), empty_list("child_uuids"), "FORK and CLONE events need child uuids"),
        (("JOIN",), empty_list("parent_uuids"), "JOIN events need parent uuids"),
        (("SEND", "RECEIVE"), empty_text("transit_uri"), "SEND and RECEIVE events need a transit URI"),
        (("ROUTE",), empty_text("relationship"), "ROUTE events need a relationship"),
    ):
        if _any(pc.and_(of(*types), bad)):
            raise InvalidEventError(f"event columns: {rule}")
    if _any(empty_text("flowfile_uuid")) or _any(empty_text("component_id")):
        raise InvalidEventError("event columns: every event needs a FlowFile uuid and a component id")


def _claim(value: dict | None) -> ContentClaim | None:
    if value is None:
        return None
    return ContentClaim(
        ResourceClaim(value["container"], value["section"], value["id"]), value["offset"], value["length"]
    )


def read_stored_batch(message) -> pa.RecordBatch:
    """The record batch of `SCHEMA` in an Arrow IPC message read from disk (a journal
    frame's payload, an event file's block), checked in full: Arrow reads a message
    without checking that its offsets and lengths stay inside its buffers, and the rows
    of a batch whose do not can crash the process when they are read. Raises ValueError
    for anything that is not such a batch, or that has a null where `SCHEMA` has none."""
    return _read_message(message, SCHEMA)


def _read_message(message, schema: pa.Schema) -> pa.RecordBatch:
    try:
        batch = pa.ipc.read_record_batch(pa.py_buffer(message), schema)
        batch.validate(full=True)
    except (pa.ArrowException, OSError, EOFError, ValueError) as error:  # what the IPC reader raises
        raise ValueError(f"not an Arrow record batch of events: {type(error).__name__}: {error}") from None
    for field in schema:
        if not field.nullable and batch.column(field.name).null_count:
            raise ValueError(f"{field.name} is null in {batch.column(field.name).null_count} stored events")
    return batch


def to_events(data: pa.RecordBatch | pa.Table) -> list[ProvenanceEvent]:
    """Rows of the stored schema (or of `BODY_SCHEMA`: events without ids) back to
    event objects (read path only). A row no writer writes (a forged file's) raises
    InvalidEventError."""
    return [_event(row) for row in data.to_pylist()]


def _event(row: dict) -> ProvenanceEvent:
    try:
        return ProvenanceEvent(
            event_type=EventType(row["event_type"]),
            flowfile_uuid=row["flowfile_uuid"],
            component_id=row["component_id"],
            component_type=row["component_type"] or "",
            event_time_ms=row["time_ms"],
            parent_uuids=tuple(row["parent_uuids"] or ()),
            child_uuids=tuple(row["child_uuids"] or ()),
            attributes_before=dict(row["attributes_before"] or ()),
            attributes_after=dict(row["attributes_after"] or ()),
            content_before=_claim(row["content_before"]),
            content_after=_claim(row["content_after"]),
            transit_uri=row["transit_uri"],
            details=row["details"],
            relationship=row["relationship"],
            size=row["size"] or 0,
            event_id=row.get("id"),
        )
    except InvalidEventError:
        raise
    except ValueError as error:  # an unknown event type, an invalid content claim
        raise InvalidEventError(f"stored event {row.get('id')} cannot be read back: {error}") from None


def concat_sorted(batches: Iterable[pa.RecordBatch]) -> pa.Table:
    """All batches as one table in event-id order (the merge step of a rollover).

    Ids inside a batch are consecutive and batches never overlap (one id range per
    registration), so ordering the batches by their first id orders every event;
    no row-level sort is needed.
    """
    ordered = sorted((b for b in batches if b.num_rows), key=lambda b: b.column(0)[0].as_py())
    table = pa.Table.from_batches(ordered, schema=SCHEMA)
    if table.num_rows < SMALL_BATCH_ROWS * len(ordered):
        # Batches of commits of a few FlowFiles each: what comes after (the event file's
        # blocks, the index's documents and sorted runs) pays per chunk, so one chunk
        # (a copy, in C++) costs far less than thousands (20,000 one-event batches:
        # 12 s to merge and index; about 3 s once combined).
        table = table.combine_chunks()
    return table
