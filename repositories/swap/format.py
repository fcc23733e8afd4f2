"""Byte layout of a swap file: the FlowFiles a queue moved out of memory.

A swap file holds one batch (by default 10,000) of FlowFiles of one queue. It is
written once, synced, and only then recorded in the FlowFile WAL (`SwapOut`); it is
never appended to. Its summary comes first and has its own CRC, so that a restart can
register a swap file - count, size, oldest and newest entry, and the content claims
it holds - without reading its records.

    file    := summary records
    summary := SUMMARY_HEADER, queue id (UTF-8), resource entries, u32 CRC32
               (the CRC covers everything of the summary before it)
    SUMMARY_HEADER (struct "<8sHIQqqHI", 44 bytes):
        magic b"CUSTSWAP", u16 version (1), u32 record count, u64 total content size,
        i64 oldest entry date (ms), i64 newest entry date (ms),
        u16 queue id length, u32 resource entry count
    resource entry := RESOURCE_ENTRY (struct "<HIQHH", 18 bytes): u16 section,
        u32 claimant count (FlowFiles of this file whose claim is in the resource),
        u64 end (largest offset + length of those claims), u16 container length,
        u16 resource id length; then the container and the resource id (UTF-8)
    records := RECORDS_HEADER (struct "<Q", 8 bytes): u64 length of the body,
               then the body, then u32 CRC32 of the body
    body    := one record after another:
        RECORD (struct "<QqqqBHQQI", 55 bytes): u64 size, i64 entry date,
        i64 lineage start date, i64 penalty expiration, u8 flags (bit 0: has a
        content claim), u16 claim section, u64 claim offset, u64 claim length,
        u32 string count; then for each string u32 length + UTF-8 bytes. The
        strings are: id, [claim container, claim resource id], then key, value for
        each attribute.
        This is the WAL's record version 2 (`flowfile.serde`) but for two things: no
        queue string (a file holds one queue), and every string length-prefixed
        (version 2 joins them with NULs when it can). The head and the strings are
        built by the same function, `serde.head_and_strings`.

All integers are little-endian. A file that is short, has a bad magic, an unknown
version or a bad CRC is corrupt: readers raise `CorruptSwapFileError` naming the
file and the offset, and never return part of a batch.

A quarantined swap file (moved into the quarantine directory because it could not be
read) may have a saved summary beside it, `<file name>.summary`:

    saved summary := summary (exactly the bytes above: header, queue id, resource
                     entries, u32 CRC32), and nothing after it

It is the summary the node had read of the file before its damage was found, written
and synced before the file is moved; a restart reads it when the file's own summary is
unreadable, so that the content its FlowFiles hold is still known (and kept).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from ..claims import ContentClaim, ResourceClaim
from ..flowfile.record import FlowFileRecord
from ..flowfile.serde import HAS_CLAIM, RECORD_V2, head_and_strings
from .errors import CorruptSwapFileError

MAGIC = b"CUSTSWAP"
VERSION = 1

SUMMARY_HEADER = struct.Struct("<8sHIQqqHI")
RESOURCE_ENTRY = struct.Struct("<HIQHH")
RECORDS_HEADER = struct.Struct("<Q")
RECORD = struct.Struct("<QqqqBHQQI")
U32 = struct.Struct("<I")
assert (SUMMARY_HEADER.size, RESOURCE_ENTRY.size, RECORDS_HEADER.size, RECORD.size) == (44, 18, 8, 55)
assert RECORD.format == RECORD_V2.format  # the WAL's version-2 head, field for field


def crc32(data) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


@dataclass(frozen=True)
class SwapSummary:
    """What a queue keeps of a swapped batch while it is out of memory."""

    location: str
    queue: str
    count: int
    size: int
    oldest_entry: int  # ms; 0 when empty
    newest_entry: int
    # resource -> (claimant count, end of the furthest claim): enough to set claimant
    # counts and keep the resource's bytes at recovery without loading the records.
    resources: dict = field(default_factory=dict, compare=False)


def summarize(location: str, queue: str, records) -> SwapSummary:
    resources: dict[ResourceClaim, tuple[int, int]] = {}
    size = 0
    oldest = newest = None
    for record in records:
        size += record.size
        entry = record.entry_date
        if oldest is None or entry < oldest:
            oldest = entry
        if newest is None or entry > newest:
            newest = entry
        claim = record.content_claim
        if claim is not None:
            count, end = resources.get(claim.resource, (0, 0))
            resources[claim.resource] = (count + 1, max(end, claim.offset + claim.length))
    return SwapSummary(location, queue, len(records), size, oldest or 0, newest or 0, resources)


def pack_summary(summary: SwapSummary) -> bytes:
    queue = summary.queue.encode("utf-8")
    parts = [
        SUMMARY_HEADER.pack(
            MAGIC,
            VERSION,
            summary.count,
            summary.size,
            summary.oldest_entry,
            summary.newest_entry,
            len(queue),
            len(summary.resources),
        ),
        queue,
    ]
    for resource, (count, end) in summary.resources.items():
        container, rid = resource.container.encode("utf-8"), resource.id.encode("utf-8")
        parts.append(RESOURCE_ENTRY.pack(resource.section, count, end, len(container), len(rid)))
        parts += (container, rid)
    blob = b"".join(parts)
    return blob + U32.pack(crc32(blob))


def unpack_summary(data, location: str) -> tuple[SwapSummary, int]:
    """(summary, offset of the records part)."""
    if len(data) < SUMMARY_HEADER.size:
        raise CorruptSwapFileError(location, 0, f"{len(data)} bytes, shorter than the summary header")
    magic, version, count, size, oldest, newest, queue_length, entries = SUMMARY_HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise CorruptSwapFileError(location, 0, f"bad magic {magic!r}: not a custody swap file")
    if version != VERSION:
        raise CorruptSwapFileError(location, 8, f"unknown swap file version {version} (this release reads {VERSION})")
    offset = SUMMARY_HEADER.size
    try:
        queue = bytes(data[offset : offset + queue_length]).decode("utf-8")
        offset += queue_length
        resources = {}
        for _ in range(entries):
            section, claimants, end, container_length, id_length = RESOURCE_ENTRY.unpack_from(data, offset)
            offset += RESOURCE_ENTRY.size
            container = bytes(data[offset : offset + container_length]).decode("utf-8")
            offset += container_length
            rid = bytes(data[offset : offset + id_length]).decode("utf-8")
            offset += id_length
            resources[ResourceClaim(container, section, rid)] = (claimants, end)
        (expected,) = U32.unpack_from(data, offset)
    except (struct.error, UnicodeDecodeError, ValueError) as error:
        raise CorruptSwapFileError(location, offset, f"summary unreadable: {error}") from None
    if crc32(memoryview(data)[:offset]) != expected:
        raise CorruptSwapFileError(location, offset, "summary CRC mismatch")
    summary = SwapSummary(location, queue, count, size, oldest, newest, resources)
    return summary, offset + U32.size


def pack_saved_summary(summary: SwapSummary) -> bytes:
    """The saved summary of a quarantined swap file (see the module docstring)."""
    return pack_summary(summary)


def unpack_saved_summary(data, location: str) -> SwapSummary:
    """The saved summary of the quarantined swap file at `location` (the summary's
    location is that file's, not the saved summary's). Raises CorruptSwapFileError."""
    summary, end = unpack_summary(data, location + " (saved summary)")
    if end != len(data):
        raise CorruptSwapFileError(location + " (saved summary)", end, f"{len(data) - end} bytes after the summary")
    return SwapSummary(
        location,
        summary.queue,
        summary.count,
        summary.size,
        summary.oldest_entry,
        summary.newest_entry,
        summary.resources,
    )


def pack_records(records) -> bytes:
    parts = []
    pack, pack_u32 = RECORD.pack, U32.pack
    for record in records:
        head, strings = head_and_strings(record, queue=False)
        parts.append(
            pack(
                record.size,
                record.entry_date,
                record.lineage_start_date,
                record.penalty_expiration,
                head[0],
                head[1],
                head[2],
                head[3],
                len(strings),
            )
        )
        for string in strings:
            encoded = string.encode("utf-8")
            parts.append(pack_u32(len(encoded)))
            parts.append(encoded)
    body = b"".join(parts)
    return RECORDS_HEADER.pack(len(body)) + body + U32.pack(crc32(body))


def unpack_records(data, offset: int, location: str, queue: str, count: int) -> list[FlowFileRecord]:
    try:
        (length,) = RECORDS_HEADER.unpack_from(data, offset)
    except struct.error:
        raise CorruptSwapFileError(location, offset, "records header missing") from None
    start = offset + RECORDS_HEADER.size
    end = start + length
    if len(data) < end + U32.size:
        raise CorruptSwapFileError(location, start, f"records part is short: {len(data) - start} of {length + 4} bytes")
    view = memoryview(data)
    (expected,) = U32.unpack_from(data, end)
    if crc32(view[start:end]) != expected:
        raise CorruptSwapFileError(location, start, "records CRC mismatch")
    records = []
    unpack, unpack_u32 = RECORD.unpack_from, U32.unpack_from
    claims: dict[tuple, ResourceClaim] = {}
    position = start
    try:
        while position < end:
            size, entry, lineage, penalty, flags, section, claim_offset, claim_length, strings = unpack(data, position)
            position += RECORD.size
            values = []
            for _ in range(strings):
                (string_length,) = unpack_u32(data, position)
                position += 4
                values.append(str(view[position : position + string_length], "utf-8"))
                position += string_length
            if flags & HAS_CLAIM:
                key = (values[1], section, values[2])
                resource = claims.get(key)
                if resource is None:
                    resource = claims[key] = ResourceClaim(values[1], section, values[2])
                claim = ContentClaim(resource, claim_offset, claim_length)
                pairs = values[3:]
            else:
                claim = None
                pairs = values[1:]
            attributes = dict(zip(pairs[0::2], pairs[1::2], strict=False))
            records.append(FlowFileRecord(values[0], attributes, claim, queue, size, entry, lineage, penalty))
    except (struct.error, UnicodeDecodeError, ValueError, IndexError) as error:
        raise CorruptSwapFileError(location, position, f"record unreadable: {error}") from None
    if len(records) != count:
        raise CorruptSwapFileError(location, start, f"holds {len(records)} records, its summary says {count}")
    return records
