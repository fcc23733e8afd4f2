"""SerDes: how updates and records become bytes, and back, version by version.

A SerDe has a `name` and the `version` it writes. Its name and version are stored at
the head of every journal and snapshot, and every read passes the version the file
was written with, so a file written by an older version still restores (as NiFi's
SerDe versions do). `FlowFileSerDe` is the default; another SerDe only has to provide
the same five members (see `SerDe`).

`FlowFileSerDe` record layout, version 3 (current):

    struct RECORD_V3: u32 id length, u32 queue length, u64 size, i64 entry date,
        i64 lineage start date, i64 penalty expiration, u8 flags, u16 claim section,
        u64 claim offset, u64 claim length, u16 claim text length, u32 attributes
        length; then the id, the queue (UTF-8), the claim text (container NUL resource
        id, UTF-8; empty without a claim), then the attributes.
    flags bit 0: the record has a content claim; bit 1: the attributes are
    length-prefixed.
    The attributes are key, value, key, value... joined with NUL characters when no
    key or value contains one (one split() decodes them), and otherwise written as
    u32 count then u32 length + bytes per string. No attributes: zero bytes.
    Every string sits at an offset the fixed struct gives, so a restored record is
    decoded lazily (see `record`): recovery reads only the id; the head (claim,
    queue, size, dates) and the attributes are decoded on first access, each alone.

Version 2 (kept readable; `FlowFileSerDe(version=2)` still writes it):

    struct RECORD_V2: u64 size, i64 entry date, i64 lineage start date,
        i64 penalty expiration, u8 flags, u16 claim section, u64 claim offset,
        u64 claim length, u32 text length; then the text (UTF-8).
    flags bit 0: the record has a content claim; bit 1: the text is length-prefixed.
    The text holds id, queue, [claim container, claim resource id], then key, value
    for each attribute, joined with NUL characters when no string contains one, and
    otherwise written as u32 count then u32 length + bytes per string. Decoded
    eagerly: the id sits inside the text, so nothing is saved by deferring the rest.

Version 1 (kept readable; `FlowFileSerDe(version=1)` still writes it):

    struct RECORD_V1: u64 size, i64 entry date, u8 flags, u16 claim section,
        u64 claim offset, u64 claim length, u16 string count; then u16 length + bytes
    for each string (same order as v2). It had no lineage start date (taken to be the
    entry date) and no penalty expiration (0).

Update layout: one type byte (PUT 1, DELETE 2, SWAP_OUT 3, SWAP_IN 4) then:
    PUT: the record; DELETE: the id (UTF-8); SWAP_IN: the location (UTF-8);
    SWAP_OUT: the swap-file entry of `format`, then u32 count, then u16 length +
    bytes for each FlowFile id that moved to the swap file.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Iterable
from itertools import chain, repeat
from typing import Protocol

from ..claims import ContentClaim, ResourceClaim
from . import format as fmt
from .errors import CorruptRecordError
from .record import Delete, FlowFileRecord, Head, LazyFlowFileRecord, Put, SwapIn, SwapOut, Update

RECORD_V3 = struct.Struct("<IIQqqqBHQQHI")
RECORD_V2 = struct.Struct("<QqqqBHQQI")
RECORD_V1 = struct.Struct("<QqBHQQH")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
_V3_FLAGS_AND_ATTRIBUTES = struct.Struct("<40xB20xI")  # the two fields of RECORD_V3 the attributes need
assert (
    _V3_FLAGS_AND_ATTRIBUTES.size == RECORD_V3.size
    and RECORD_V3.size == 65
    and RECORD_V2.size == 55
    and RECORD_V1.size == 37
), (RECORD_V3.size, RECORD_V2.size, RECORD_V1.size)

PUT, DELETE, SWAP_OUT, SWAP_IN = 1, 2, 3, 4
HAS_CLAIM = 0x01
LENGTH_PREFIXED = 0x02
NUL = "\0"
_intern = sys.intern

# (data, start, stop) -> the record encoded in data[start:stop] (`record_decoder`).
RecordDecoder = Callable[[bytes, int, int], FlowFileRecord]
# (ids, pieces) -> the records of a snapshot block (`record_batch_decoder`).
BatchDecoder = Callable[[list[str], list[bytes]], list[FlowFileRecord]]


class SerDe(Protocol):
    name: str
    version: int  # the version this instance writes

    def can_read(self, version: int) -> bool: ...

    def encode_update(self, update: Update) -> bytes: ...

    def decode_update(self, data: fmt.BytesLike, version: int) -> Update: ...

    def encode_record(self, record: FlowFileRecord) -> bytes: ...

    def decode_record(self, data: fmt.BytesLike, version: int) -> FlowFileRecord: ...


class FlowFileSerDe:
    """The default SerDe of custody's FlowFile records. Thread-safe: its only state is
    caches of ResourceClaims and queue names (many FlowFiles share one), which make
    decoding cheap; a race on them only builds an equal value twice."""

    name = "custody.flowfile"
    CURRENT_VERSION = 3
    OLDEST_VERSION = 1

    def __init__(self, version: int = CURRENT_VERSION) -> None:
        if not self.OLDEST_VERSION <= version <= self.CURRENT_VERSION:
            raise ValueError(
                f"FlowFileSerDe writes versions {self.OLDEST_VERSION}..{self.CURRENT_VERSION}, not {version}"
            )
        self.version = version
        self._resources: dict[tuple[str, int, str], ResourceClaim] = {}
        self.lazy_decoder = LazyDecoder(self)

    def __repr__(self) -> str:
        return f"FlowFileSerDe(version={self.version})"

    def can_read(self, version: int) -> bool:
        return self.OLDEST_VERSION <= version <= self.CURRENT_VERSION

    # -- records ------------------------------------------------------------------

    def encode_record(self, record: FlowFileRecord) -> bytes:
        if self.version == 3:
            return self._encode_v3(record)
        if self.version == 1:
            return _encode_record_v1(record)
        return _encode_record_v2(record)

    def _encode_v3(self, record: FlowFileRecord) -> bytes:
        encoded, decoder = record._encoded, record._decoder
        if encoded is not None and decoder is not None:
            if decoder.version == 3 and decoder.name == self.name:
                # Restored from this SerDe's name and version, and never changed
                # (records are immutable): its bytes are what encoding would produce,
                # as the name and version in a file header promise. This is what makes
                # a checkpoint after recovery, or an adopter's copy, cheap.
                return encoded
        head = record._head
        if head is None:
            head = record._decode_head()
        attributes = record._attributes
        if attributes is None:
            attributes = record._decode_attributes()
        claim, queue, size, entry, lineage, penalty = head
        record_id = record.id.encode("utf-8")
        queue_bytes = queue.encode("utf-8")
        if claim is not None:
            resource = claim.resource
            claim_text = (resource.container + NUL + resource.id).encode("utf-8")
            flags, section, offset, length = HAS_CLAIM, resource.section, claim.offset, claim.length
        else:
            claim_text = b""
            flags = section = offset = length = 0
        if attributes:
            text = NUL.join(chain.from_iterable(attributes.items()))
            if text.count(NUL) == 2 * len(attributes) - 1:
                blob = text.encode("utf-8")
            else:
                flags |= LENGTH_PREFIXED
                blob = _join_length_prefixed(chain.from_iterable(attributes.items()))
        else:
            blob = b""
        return b"".join(
            (
                RECORD_V3.pack(
                    len(record_id),
                    len(queue_bytes),
                    size,
                    entry,
                    lineage,
                    penalty,
                    flags,
                    section,
                    offset,
                    length,
                    len(claim_text),
                    len(blob),
                ),
                record_id,
                queue_bytes,
                claim_text,
                blob,
            )
        )

    def decode_record(self, data: fmt.BytesLike, version: int) -> FlowFileRecord:
        """Decode completely (every field checked now): for callers outside recovery."""
        if version == 3:
            data = bytes(data)
            return self.record_decoder(3)(data, 0, len(data)).decode()
        return self._eager_record_decoder(version)(data, 0, len(data))

    def record_decoder(self, version: int) -> RecordDecoder:
        """A function (data, start, stop) -> FlowFileRecord decoding data[start:stop],
        where data is bytes. Recovery calls it a million times.

        Version 3 returns a lazy record: it decodes the id and keeps a copy of the
        bytes (not a view, so the file's buffer is not pinned by the records)."""
        if version == 3:
            unpack_id_length = U32.unpack_from
            id_offset = RECORD_V3.size
            Lazy, lazy_decoder = LazyFlowFileRecord, self.lazy_decoder

            def decode_v3(data: bytes, start: int, stop: int) -> FlowFileRecord:
                (id_length,) = unpack_id_length(data, start)
                id_start = start + id_offset
                id_stop = id_start + id_length
                if id_stop > stop:
                    raise ValueError(f"record id of {id_length} bytes runs past the record")
                return Lazy(str(data[id_start:id_stop], "utf-8"), data[start:stop], lazy_decoder)

            return decode_v3
        return self._eager_record_decoder(version)

    def _eager_record_decoder(self, version: int) -> Callable[[fmt.BytesLike, int, int], FlowFileRecord]:
        """`record_decoder` of the versions decoded eagerly (1 and 2), which also read a view."""
        if version == 1:
            return self._decode_v1
        if version != 2:
            raise ValueError(f"FlowFileSerDe cannot read version {version}")
        unpack = RECORD_V2.unpack_from
        head_size = RECORD_V2.size
        resources = self._resources
        resource_of = self._resource
        Record, Claim = FlowFileRecord, ContentClaim

        def decode_v2(data: fmt.BytesLike, start: int, stop: int) -> FlowFileRecord:
            size, entry, lineage, penalty, flags, section, offset, length, text_length = unpack(data, start)
            if start + head_size + text_length != stop:
                raise ValueError(f"record text is {stop - start - head_size} bytes, header says {text_length}")
            if flags & LENGTH_PREFIXED:
                strings = _split_length_prefixed(data[start + head_size : stop], 0)
            else:
                strings = str(data[start + head_size : stop], "utf-8").split(NUL)
            if flags & HAS_CLAIM:
                resource = resources.get((strings[2], section, strings[3])) or resource_of(
                    strings[2], section, strings[3]
                )
                claim = Claim(resource, offset, length)
                if len(strings) & 1:
                    raise ValueError("record has an attribute key without a value")
                attributes = dict(zip(strings[4::2], strings[5::2], strict=False))
            else:
                claim = None
                if len(strings) & 1:
                    raise ValueError("record has an attribute key without a value")
                attributes = dict(zip(strings[2::2], strings[3::2], strict=False))
            return Record(strings[0], attributes, claim, strings[1], size, entry, lineage, penalty)

        return decode_v2

    def record_batch_decoder(self, version: int) -> BatchDecoder:
        """A function (ids, pieces) -> [FlowFileRecord] for a snapshot block: the ids
        were read from the block's id column, each piece is one record's bytes.

        Version 3 builds lazy records in one C-level map (the embedded id is checked
        against the column's when the head is decoded); older versions decode each
        record and check its id."""
        if version == 3:
            Lazy, lazy_decoder = LazyFlowFileRecord, self.lazy_decoder

            def decode_batch_v3(ids: list[str], pieces: list[bytes]) -> list[FlowFileRecord]:
                return list(map(Lazy, ids, pieces, repeat(lazy_decoder, len(ids))))

            return decode_batch_v3
        decode = self.record_decoder(version)

        def decode_batch(ids: list[str], pieces: list[bytes]) -> list[FlowFileRecord]:
            decoded = [decode(piece, 0, len(piece)) for piece in pieces]
            for record_id, record in zip(ids, decoded, strict=False):
                if record.id != record_id:
                    raise ValueError(f"record {record.id!r} is listed as {record_id!r} in its block")
            return decoded

        return decode_batch

    def _resource(self, container: str, section: int, resource_id: str) -> ResourceClaim:
        if len(self._resources) > 100_000:
            self._resources.clear()
        resource = self._resources[(container, section, resource_id)] = ResourceClaim(container, section, resource_id)
        return resource

    def _decode_v1(self, data: fmt.BytesLike, start: int, stop: int) -> FlowFileRecord:
        data = data[start:stop]
        size, entry, flags, section, offset, length, count = RECORD_V1.unpack_from(data, 0)
        strings = _split_u16_strings(data, RECORD_V1.size, count)
        first = 2
        claim = None
        if flags & HAS_CLAIM:
            claim = ContentClaim(
                self._resources.get((strings[2], section, strings[3]))
                or self._resource(strings[2], section, strings[3]),
                offset,
                length,
            )
            first = 4
        if (len(strings) - first) % 2:
            raise ValueError("record has an attribute key without a value")
        attributes = dict(zip(strings[first::2], strings[first + 1 :: 2], strict=False))
        return FlowFileRecord(strings[0], attributes, claim, strings[1], size, entry, entry, 0)

    # -- updates ------------------------------------------------------------------

    def encode_update(self, update: Update) -> bytes:
        if type(update) is Put:
            return b"\x01" + self.encode_record(update.record)
        if type(update) is Delete:
            return b"\x02" + update.record_id.encode("utf-8")
        if type(update) is SwapOut:
            out = bytearray(b"\x03")
            out += fmt.pack_swap_file(update.swap_file)
            out += U32.pack(len(update.record_ids))
            for record_id in update.record_ids:
                encoded = record_id.encode("utf-8")
                out += U16.pack(len(encoded))
                out += encoded
            return bytes(out)
        if type(update) is SwapIn:
            return b"\x04" + update.location.encode("utf-8")
        raise TypeError(f"not a WAL update: {update!r} (use Put, Delete, SwapOut or SwapIn)")

    def decode_update(self, data: fmt.BytesLike, version: int) -> Update:
        kind = data[0]
        if kind == PUT:
            if version == 3:  # lazy, like a snapshot record: the frame CRC covered these bytes
                record = bytes(data[1:])
                return Put(self.record_decoder(3)(record, 0, len(record)))
            return Put(self.decode_record(data[1:], version))
        if kind == DELETE:
            return Delete(str(data[1:], "utf-8"))
        if kind == SWAP_OUT:
            swap_file, offset = fmt.unpack_swap_file(data, 1)
            (count,) = U32.unpack_from(data, offset)
            ids = _split_u16_strings(data, offset + 4, count)
            return SwapOut(swap_file, tuple(ids))
        if kind == SWAP_IN:
            return SwapIn(str(data[1:], "utf-8"))
        raise ValueError(f"unknown update type {kind}")


class LazyDecoder:
    """Decodes the two lazy tiers of a version-3 record (see `record`). One per SerDe
    instance; a restored record points to it, which also tells `encode_record` that
    the record's bytes are already in this SerDe's current encoding."""

    version = 3

    def __init__(self, serde: FlowFileSerDe) -> None:
        self.name = serde.name
        self._serde = serde
        self._queues: dict[bytes, str] = {}
        self._resources: dict[tuple[int, bytes], ResourceClaim] = {}  # (section, claim text bytes) -> claim

    def decode_head(self, encoded: bytes, record_id: str) -> Head:
        try:
            (
                id_length,
                queue_length,
                size,
                entry,
                lineage,
                penalty,
                flags,
                section,
                offset,
                length,
                claim_length,
                attributes_length,
            ) = RECORD_V3.unpack_from(encoded, 0)
            start = RECORD_V3.size + id_length
            if encoded[RECORD_V3.size : start] != record_id.encode("utf-8"):
                raise ValueError(f"the record's bytes carry the id {bytes(encoded[RECORD_V3.size : start])!r}")
            if start + queue_length + claim_length + attributes_length != len(encoded):
                raise ValueError(
                    f"field lengths add up to {start + queue_length + claim_length + attributes_length} bytes, "
                    f"the record has {len(encoded)}"
                )
            queue_bytes = encoded[start : start + queue_length]
            queue = self._queues.get(queue_bytes)
            if queue is None:
                if len(self._queues) > 10_000:
                    self._queues.clear()
                queue = self._queues[queue_bytes] = _intern(str(queue_bytes, "utf-8"))
            if flags & HAS_CLAIM:
                start += queue_length
                claim_text = encoded[start : start + claim_length]
                resource = self._resources.get((section, claim_text))
                if resource is None:
                    resource = self._resource(section, claim_text)
                claim = ContentClaim(resource, offset, length)
            else:
                claim = None
        except Exception as error:  # struct.error, ValueError, UnicodeDecodeError, InvalidClaimError
            raise CorruptRecordError(record_id, f"head: {error}") from None
        return (claim, queue, size, entry, lineage, penalty)

    def _resource(self, section: int, claim_text: bytes) -> ResourceClaim:
        container, separator, resource_id = str(claim_text, "utf-8").partition(NUL)
        if not separator:
            raise ValueError("claim text has no NUL between container and resource id")
        serde = self._serde
        resource = serde._resources.get((container, section, resource_id)) or serde._resource(
            container, section, resource_id
        )
        if len(self._resources) > 100_000:
            self._resources.clear()
        self._resources[(section, claim_text)] = resource
        return resource

    def decode_attributes(self, encoded: bytes, record_id: str) -> dict[str, str]:
        try:
            flags, attributes_length = _V3_FLAGS_AND_ATTRIBUTES.unpack_from(encoded, 0)
            if not attributes_length:
                return {}
            start = len(encoded) - attributes_length
            if start < RECORD_V3.size:
                raise ValueError(f"attributes of {attributes_length} bytes overlap the record's head")
            if flags & LENGTH_PREFIXED:
                strings = _split_length_prefixed(encoded[start:], 0)
            else:
                strings = str(encoded[start:], "utf-8").split(NUL)
            if len(strings) & 1:
                raise ValueError("an attribute key has no value")
        except Exception as error:
            raise CorruptRecordError(record_id, f"attributes: {error}") from None
        # Keys repeat across millions of FlowFiles: one interned copy of each.
        return dict(zip(map(_intern, strings[0::2]), strings[1::2], strict=False))


def _join_length_prefixed(strings: Iterable[str]) -> bytes:
    encoded = [s.encode("utf-8") for s in strings]
    return U32.pack(len(encoded)) + b"".join(U32.pack(len(e)) + e for e in encoded)


def head_and_strings(record: FlowFileRecord, *, queue: bool = True) -> tuple[tuple[int, int, int, int], list[str]]:
    """A record flattened as record versions 1 and 2 store it, and as a swap file does:
    the claim head (HAS_CLAIM, section, offset, length; zeros without a claim) and the
    strings in stored order: id, the queue (not in a swap file, which holds one queue:
    `queue=False`), the claim's container and resource id, then key, value for each
    attribute. The formats differ in how they frame the strings, not in these."""
    claim = record.content_claim
    strings = [record.id, record.queue] if queue else [record.id]
    if claim is not None:
        resource = claim.resource
        strings += (resource.container, resource.id)
        head = (HAS_CLAIM, resource.section, claim.offset, claim.length)
    else:
        head = (0, 0, 0, 0)
    for key, value in record.attributes.items():
        strings += (key, value)
    return head, strings


def _encode_record_v2(record: FlowFileRecord) -> bytes:
    head, strings = head_and_strings(record)
    text = NUL.join(strings)
    flags = head[0]
    if text.count(NUL) != len(strings) - 1:
        flags |= LENGTH_PREFIXED
        blob = _join_length_prefixed(strings)
    else:
        blob = text.encode("utf-8")
    return (
        RECORD_V2.pack(
            record.size,
            record.entry_date,
            record.lineage_start_date,
            record.penalty_expiration,
            flags,
            head[1],
            head[2],
            head[3],
            len(blob),
        )
        + blob
    )


def _encode_record_v1(record: FlowFileRecord) -> bytes:
    head, strings = head_and_strings(record)
    out = bytearray(RECORD_V1.pack(record.size, record.entry_date, head[0], head[1], head[2], head[3], len(strings)))
    for string in strings:
        encoded = string.encode("utf-8")
        out += U16.pack(len(encoded))
        out += encoded
    return bytes(out)


def _split_strings(data: fmt.BytesLike, offset: int, count: int, prefix: struct.Struct) -> list[str]:
    """`count` UTF-8 strings, each behind a length of `prefix`, filling `data` to its end."""
    strings = []
    width = prefix.size
    for _ in range(count):
        (length,) = prefix.unpack_from(data, offset)
        offset += width
        if offset + length > len(data):
            raise ValueError("string runs past the record")
        strings.append(str(data[offset : offset + length], "utf-8"))
        offset += length
    if offset != len(data):
        raise ValueError(f"{len(data) - offset} stray bytes after the last string")
    return strings


def _split_u16_strings(data: fmt.BytesLike, offset: int, count: int) -> list[str]:
    return _split_strings(data, offset, count, U16)


def _split_length_prefixed(data: fmt.BytesLike, offset: int) -> list[str]:
    (count,) = U32.unpack_from(data, offset)
    return _split_strings(data, offset + 4, count, U32)
