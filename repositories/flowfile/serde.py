"""SerDes: how updates and records become bytes, and back, version by version.

A SerDe has a `name` and the `version` it writes. Its name and version are stored at
the head of every journal and snapshot, and every read passes the version the file
was written with, so a file written by an older version still restores (seed 000,
restore step 5). `FlowFileSerDe` is the default; another SerDe only has to provide
the same five members (see `SerDe`).

`FlowFileSerDe` record layout, version 2 (current):

    struct RECORD_V2: u64 size, i64 entry date, i64 lineage start date,
        i64 penalty expiration, u8 flags, u16 claim section, u64 claim offset,
        u64 claim length, u32 text length; then the text (UTF-8).
    flags bit 0: the record has a content claim; bit 1: the text is length-prefixed.
    The text holds id, queue, [claim container, claim resource id], then key, value
    for each attribute. It is joined with NUL characters when no string contains one
    (one split() decodes it: this is what makes recovery of 1M records fast), and
    otherwise written as u32 count then u32 length + bytes per string.

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
from typing import Protocol

from ..claims import ContentClaim, ResourceClaim
from . import format as fmt
from .record import Delete, FlowFileRecord, Put, SwapIn, SwapOut, Update

RECORD_V2 = struct.Struct("<QqqqBHQQI")
RECORD_V1 = struct.Struct("<QqBHQQH")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
assert RECORD_V2.size == 55 and RECORD_V1.size == 37, (RECORD_V2.size, RECORD_V1.size)

PUT, DELETE, SWAP_OUT, SWAP_IN = 1, 2, 3, 4
HAS_CLAIM = 0x01
LENGTH_PREFIXED = 0x02
NUL = "\0"

_new_record = tuple.__new__


class SerDe(Protocol):
    name: str
    version: int  # the version this instance writes

    def can_read(self, version: int) -> bool: ...

    def encode_update(self, update: Update) -> bytes: ...

    def decode_update(self, data, version: int) -> Update: ...

    def encode_record(self, record: FlowFileRecord) -> bytes: ...

    def decode_record(self, data, version: int) -> FlowFileRecord: ...


class FlowFileSerDe:
    """The default SerDe of custody's FlowFile records. Thread-safe: its only state is
    a cache of ResourceClaims (many FlowFiles share one), which makes decoding cheap."""

    name = "custody.flowfile"
    CURRENT_VERSION = 2
    OLDEST_VERSION = 1

    def __init__(self, version: int = CURRENT_VERSION):
        if not self.OLDEST_VERSION <= version <= self.CURRENT_VERSION:
            raise ValueError(f"FlowFileSerDe writes versions {self.OLDEST_VERSION}..{self.CURRENT_VERSION}, not {version}")
        self.version = version
        self._resources: dict[tuple, ResourceClaim] = {}

    def __repr__(self) -> str:
        return f"FlowFileSerDe(version={self.version})"

    def can_read(self, version: int) -> bool:
        return self.OLDEST_VERSION <= version <= self.CURRENT_VERSION

    # -- records ------------------------------------------------------------------

    def encode_record(self, record: FlowFileRecord) -> bytes:
        if self.version == 1:
            return _encode_record_v1(record)
        claim = record.content_claim
        strings = [record.id, record.queue]
        if claim is not None:
            resource = claim.resource
            strings += (resource.container, resource.id)
            head = (HAS_CLAIM, resource.section, claim.offset, claim.length)
        else:
            head = (0, 0, 0, 0)
        for key, value in record.attributes.items():
            strings += (key, value)
        text = NUL.join(strings)
        flags = head[0]
        if text.count(NUL) != len(strings) - 1:
            flags |= LENGTH_PREFIXED
            encoded = [s.encode("utf-8") for s in strings]
            blob = U32.pack(len(encoded)) + b"".join(U32.pack(len(e)) + e for e in encoded)
        else:
            blob = text.encode("utf-8")
        return RECORD_V2.pack(
            record.size, record.entry_date, record.lineage_start_date, record.penalty_expiration,
            flags, head[1], head[2], head[3], len(blob),
        ) + blob

    def decode_record(self, data, version: int) -> FlowFileRecord:
        return self.record_decoder(version)(data, 0, len(data))

    def record_decoder(self, version: int):
        """A function (data, start, stop) -> FlowFileRecord decoding data[start:stop].

        Recovery calls it a million times, so it binds everything it uses to locals
        and has a straight path for the common record (a claim, NUL-joined text)."""
        if version == 1:
            return self._decode_v1
        if version != 2:
            raise ValueError(f"FlowFileSerDe cannot read version {version}")
        unpack = RECORD_V2.unpack_from
        head_size = RECORD_V2.size
        resources = self._resources
        resource_of = self._resource
        new, Record, Claim = _new_record, FlowFileRecord, ContentClaim

        def decode_v2(data, start: int, stop: int) -> FlowFileRecord:
            size, entry, lineage, penalty, flags, section, offset, length, text_length = unpack(data, start)
            if start + head_size + text_length != stop:
                raise ValueError(f"record text is {stop - start - head_size} bytes, header says {text_length}")
            if flags & LENGTH_PREFIXED:
                strings = _split_length_prefixed(data[start + head_size : stop], 0)
            else:
                strings = str(data[start + head_size : stop], "utf-8").split(NUL)
            if flags & HAS_CLAIM:
                resource = resources.get((strings[2], section, strings[3])) or resource_of(strings[2], section, strings[3])
                claim = Claim(resource, offset, length)
                if len(strings) & 1:
                    raise ValueError("record has an attribute key without a value")
                attributes = dict(zip(strings[4::2], strings[5::2]))
            else:
                claim = None
                if len(strings) & 1:
                    raise ValueError("record has an attribute key without a value")
                attributes = dict(zip(strings[2::2], strings[3::2]))
            return new(Record, (strings[0], attributes, claim, strings[1], size, entry, lineage, penalty))

        return decode_v2

    def _resource(self, container: str, section: int, resource_id: str) -> ResourceClaim:
        if len(self._resources) > 100_000:
            self._resources.clear()
        resource = self._resources[(container, section, resource_id)] = ResourceClaim(container, section, resource_id)
        return resource

    def _decode_v1(self, data, start: int, stop: int) -> FlowFileRecord:
        data = data[start:stop]
        size, entry, flags, section, offset, length, count = RECORD_V1.unpack_from(data, 0)
        strings = _split_u16_strings(data, RECORD_V1.size, count)
        first = 2
        claim = None
        if flags & HAS_CLAIM:
            claim = ContentClaim(self._resources.get((strings[2], section, strings[3])) or self._resource(strings[2], section, strings[3]), offset, length)
            first = 4
        if (len(strings) - first) % 2:
            raise ValueError("record has an attribute key without a value")
        attributes = dict(zip(strings[first::2], strings[first + 1 :: 2]))
        return _new_record(FlowFileRecord, (strings[0], attributes, claim, strings[1], size, entry, entry, 0))

    # -- updates ------------------------------------------------------------------

    def encode_update(self, update: Update) -> bytes:
        kind = type(update)
        if kind is Put:
            return b"\x01" + self.encode_record(update.record)
        if kind is Delete:
            return b"\x02" + update.record_id.encode("utf-8")
        if kind is SwapOut:
            out = bytearray(b"\x03")
            out += fmt.pack_swap_file(update.swap_file)
            out += U32.pack(len(update.record_ids))
            for record_id in update.record_ids:
                encoded = record_id.encode("utf-8")
                out += U16.pack(len(encoded))
                out += encoded
            return bytes(out)
        if kind is SwapIn:
            return b"\x04" + update.location.encode("utf-8")
        raise TypeError(f"not a WAL update: {update!r} (use Put, Delete, SwapOut or SwapIn)")

    def decode_update(self, data, version: int) -> Update:
        kind = data[0]
        if kind == PUT:
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


def _encode_record_v1(record: FlowFileRecord) -> bytes:
    claim = record.content_claim
    strings = [record.id, record.queue]
    if claim is not None:
        strings += (claim.resource.container, claim.resource.id)
        head = (HAS_CLAIM, claim.resource.section, claim.offset, claim.length)
    else:
        head = (0, 0, 0, 0)
    for key, value in record.attributes.items():
        strings += (key, value)
    out = bytearray(RECORD_V1.pack(record.size, record.entry_date, head[0], head[1], head[2], head[3], len(strings)))
    for string in strings:
        encoded = string.encode("utf-8")
        out += U16.pack(len(encoded))
        out += encoded
    return bytes(out)


def _split_u16_strings(data, offset: int, count: int) -> list[str]:
    strings = []
    for _ in range(count):
        (length,) = U16.unpack_from(data, offset)
        offset += 2
        if offset + length > len(data):
            raise ValueError("string runs past the record")
        strings.append(str(data[offset : offset + length], "utf-8"))
        offset += length
    if offset != len(data):
        raise ValueError(f"{len(data) - offset} stray bytes after the last string")
    return strings


def _split_length_prefixed(data, offset: int) -> list[str]:
    (count,) = U32.unpack_from(data, offset)
    offset += 4
    strings = []
    for _ in range(count):
        (length,) = U32.unpack_from(data, offset)
        offset += 4
        if offset + length > len(data):
            raise ValueError("string runs past the record")
        strings.append(str(data[offset : offset + length], "utf-8"))
        offset += length
    if offset != len(data):
        raise ValueError(f"{len(data) - offset} stray bytes after the last string")
    return strings
