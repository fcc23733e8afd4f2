"""The FlowFile record and the updates a transaction carries.

`FlowFileRecord` is a small slots class whose fields read like a NamedTuple's (it
also unpacks, compares and `replace`s like one). Treat it, including its `attributes`
dict, as immutable; `replace(...)` makes a new version.

A record restored from a snapshot or journal is *lazy*: recovery decodes only its id
and keeps the rest as the SerDe's bytes, already checked by the CRC of the block or
transaction they came in (recovery never accepts bytes whose CRC does not match).
The rest is decoded on first access, in two tiers, so that what a restore touches for
every FlowFile stays cheap:
  * the head: content claim, queue, size and dates (what the flow engine needs to put
    a FlowFile back in its queue and count claimants);
  * the attributes, often never needed for a FlowFile that sits queued or swapped.
A record a caller builds is decoded from the start. Decoding is idempotent, so two
threads racing on the first access both get the same values. If bytes that matched
their CRC still cannot be decoded (only a SerDe bug or a forged file does that), the
access raises `CorruptRecordError` naming the record; `custody wal fsck` decodes every
record in full to find such records before anyone reads them.

Swapping is recorded in bulk, one record per swap file (not one per FlowFile as NiFi
does): `SwapOut` removes the swapped FlowFiles from the live map and registers the
swap file; `SwapIn` unregisters it, and the same transaction carries a `Put` for every
FlowFile brought back.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar, NamedTuple, TypedDict, Unpack, overload

from ..claims import ContentClaim

if TYPE_CHECKING:
    from .serde import LazyDecoder

FIELDS = (
    "id",
    "attributes",
    "content_claim",
    "queue",
    "size",
    "entry_date",
    "lineage_start_date",
    "penalty_expiration",
)

# content_claim, queue, size, entry_date, lineage_start_date, penalty_expiration
Head = tuple[ContentClaim | None, str, int, int, int, int]
# The value of any field, as iteration and indexing give it.
FieldValue = str | dict[str, str] | ContentClaim | int | None


class RecordFields(TypedDict, total=False):
    """A record's fields by name: every one from `_asdict`, any of them as `replace`'s keywords."""

    id: str
    attributes: dict[str, str]
    content_claim: ContentClaim | None
    queue: str
    size: int
    entry_date: int
    lineage_start_date: int
    penalty_expiration: int


class FlowFileRecord:
    """id, attributes, content claim (or None), queue, size, entry date, lineage start
    date and penalty expiration (dates in milliseconds since the epoch; 0 when not
    penalized).

    Slots: `id`; `_head` = (content_claim, queue, size, entry_date, lineage_start_date,
    penalty_expiration) or None while undecoded; `_attributes` (None while undecoded);
    `_encoded`, the SerDe bytes while some tier is undecoded (also what a checkpoint
    writes back unchanged); `_decoder`, what decodes them (see `serde.LazyDecoder`).
    """

    __slots__ = ("id", "_head", "_attributes", "_encoded", "_decoder")
    _fields = FIELDS
    id: str
    _head: Head | None
    _attributes: dict[str, str] | None
    _encoded: bytes | None
    _decoder: LazyDecoder | None

    if TYPE_CHECKING:  # the head's fields: properties made by `_head_field` below

        @property
        def content_claim(self) -> ContentClaim | None: ...
        @property
        def queue(self) -> str: ...
        @property
        def size(self) -> int: ...
        @property
        def entry_date(self) -> int: ...
        @property
        def lineage_start_date(self) -> int: ...
        @property
        def penalty_expiration(self) -> int: ...

    def __init__(
        self,
        id: str,
        attributes: dict[str, str],
        content_claim: ContentClaim | None,
        queue: str,
        size: int,
        entry_date: int,
        lineage_start_date: int,
        penalty_expiration: int = 0,
    ) -> None:
        self.id = id
        self._attributes = attributes
        self._head = (content_claim, queue, size, entry_date, lineage_start_date, penalty_expiration)
        self._encoded = None
        self._decoder = None

    # -- lazily decoded fields ----------------------------------------------------

    @property
    def attributes(self) -> dict[str, str]:
        attributes = self._attributes
        if attributes is None:
            attributes = self._decode_attributes()
        return attributes

    def _decode_head(self) -> Head:
        encoded, decoder = self._encoded, self._decoder
        if encoded is None or decoder is None:  # another thread finished decoding meanwhile
            assert self._head is not None  # set before the bytes are let go
            return self._head
        head = decoder.decode_head(encoded, self.id)
        self._head = head
        if self._attributes is not None:
            self._encoded = None
        return head

    def _decode_attributes(self) -> dict[str, str]:
        encoded, decoder = self._encoded, self._decoder
        if encoded is None or decoder is None:
            assert self._attributes is not None  # set before the bytes are let go
            return self._attributes
        attributes = decoder.decode_attributes(encoded, self.id)
        self._attributes = attributes
        if self._head is not None:
            self._encoded = None
        return attributes

    def decode(self) -> FlowFileRecord:
        """Decode every field now (raises CorruptRecordError); returns self."""
        if self._head is None:
            self._decode_head()
        if self._attributes is None:
            self._decode_attributes()
        return self

    @property
    def is_decoded(self) -> bool:
        return self._head is not None and self._attributes is not None

    # -- tuple-like behaviour, as when this was a NamedTuple -------------------------

    def __iter__(self) -> Iterator[FieldValue]:
        return iter((self.id, self.attributes, *self.head))

    def __len__(self) -> int:
        return len(FIELDS)

    @overload
    def __getitem__(self, index: int) -> FieldValue: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[FieldValue, ...]: ...
    def __getitem__(self, index: int | slice) -> FieldValue | tuple[FieldValue, ...]:
        return tuple(self)[index]

    @property
    def head(self) -> Head:
        head = self._head
        if head is None:
            head = self._decode_head()
        return head

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlowFileRecord):
            return NotImplemented
        return self.id == other.id and self.head == other.head and self.attributes == other.attributes

    # Unhashable, like the NamedTuple it replaces: it holds a dict.
    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # None over object's method, as typeshed's dict does

    def __repr__(self) -> str:
        return (
            "FlowFileRecord(" + ", ".join(f"{name}={value!r}" for name, value in zip(FIELDS, self, strict=False)) + ")"
        )

    def __reduce__(self) -> tuple[type[FlowFileRecord], tuple[FieldValue, ...]]:
        return (FlowFileRecord, tuple(self))

    def _asdict(self) -> RecordFields:
        attributes = self.attributes
        claim, queue, size, entry_date, lineage_start_date, penalty_expiration = self.head
        return {
            "id": self.id,
            "attributes": attributes,
            "content_claim": claim,
            "queue": queue,
            "size": size,
            "entry_date": entry_date,
            "lineage_start_date": lineage_start_date,
            "penalty_expiration": penalty_expiration,
        }

    def replace(self, **changes: Unpack[RecordFields]) -> FlowFileRecord:
        fields = self._asdict()
        unknown = set(changes) - set(FIELDS)
        if unknown:
            raise ValueError(f"FlowFileRecord has no field(s) {sorted(unknown)}")
        fields.update(changes)
        return FlowFileRecord(**fields)

    _replace = replace


def _head_field(index: int, name: str) -> property:
    def get(self: FlowFileRecord) -> FieldValue:
        head = self._head
        if head is None:
            head = self._decode_head()
        return head[index]

    get.__name__ = name
    return property(get, doc=f"{name} (decoded on first access for a restored record)")


for _index, _name in enumerate(FIELDS[2:]):
    setattr(FlowFileRecord, _name, _head_field(_index, _name))
del _index, _name


class LazyFlowFileRecord(FlowFileRecord):
    """A restored record: only the id is decoded; see the module docstring."""

    __slots__ = ()

    def __init__(self, id: str, encoded: bytes, decoder: LazyDecoder) -> None:
        self.id = id
        self._head = None
        self._attributes = None
        self._encoded = encoded
        self._decoder = decoder


def decode_records(records: Iterable[FlowFileRecord], *, attributes: bool = True) -> None:
    """Decode the head (and, by default, the attributes) of many records now, with the
    cyclic garbage collector paused: for a caller that will read every restored record
    anyway (a restore that rebuilds every queue). Decoding a million records one by one
    with the collector running also pays for the collections their new objects trigger.
    Raises CorruptRecordError at the first record that cannot be decoded."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        for record in records:
            if record._head is None:
                record._decode_head()
            if attributes and record._attributes is None:
                record._decode_attributes()
    finally:
        if collecting:
            gc.enable()


class SwapFile(NamedTuple):
    """A swap file as the WAL knows it: where it is, whose queue, how much it holds."""

    location: str
    queue: str
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, as it always has (a public name)
    size: int


class Put(NamedTuple):
    """Create the record, or replace the version with the same id."""

    record: FlowFileRecord


class Delete(NamedTuple):
    record_id: str


class SwapOut(NamedTuple):
    """The FlowFiles `record_ids` now live in `swap_file` (written and synced beforehand)."""

    swap_file: SwapFile
    record_ids: tuple[str, ...]


class SwapIn(NamedTuple):
    """The swap file at `location` was read back; its FlowFiles come back as `Put`s."""

    location: str


Update = Put | Delete | SwapOut | SwapIn


def apply_update(records: dict[str, FlowFileRecord], swap_files: dict[str, SwapFile], update: Update) -> None:
    """Apply one update to a record map and a swap-file map (used live and in replay)."""
    if type(update) is Put:
        record = update.record
        records[record.id] = record
    elif type(update) is Delete:
        records.pop(update.record_id, None)
    elif type(update) is SwapOut:
        for record_id in update.record_ids:
            records.pop(record_id, None)
        swap_files[update.swap_file.location] = update.swap_file
    elif type(update) is SwapIn:
        swap_files.pop(update.location, None)
    else:
        raise TypeError(f"not a WAL update: {update!r}")
