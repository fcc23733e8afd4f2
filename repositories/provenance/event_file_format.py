"""Byte layout of a provenance event file and of its table of contents.

An event file holds the events of one rollover in id order, compressed in blocks of
about 1 MB of uncompressed data (NiFi's provenance repository design). Every block is framed and checksummed on
its own, so reading one event decompresses at most one block, and damage to a block
costs only that block's events.

Names: ``<first-id:020d>.prov`` and ``<first-id:020d>.toc`` in a container's
``events/`` directory, first-id being the id of the file's first event. While a merge
runs they are ``.prov.partial`` and ``.toc.partial``; the rename of the ``.prov`` file
is the commit point.

Event file (little-endian)::

    header (32 bytes, the layout of `file_header`)
      0   8s  magic            b"CPEVTF01"
      8   H   format version   1
      10  H   codec            1 = zstd
      12  I   reserved (0)
      16  Q   first event id
      24  I   reserved (0)
      28  I   crc32 of bytes 0..28
    block (56-byte header + payload), repeated
      0   4s  magic            b"BLK1"
      4   I   block index (0, 1, ...)
      8   Q   first event id of the block
      16  I   event count
      20  I   uncompressed payload length
      24  I   compressed payload length
      28  I   crc32 of the compressed payload
      32  q   smallest event time in the block (ms since the epoch)
      40  q   largest event time in the block
      48  I   crc32 of bytes 0..48 of this block header
      52  I   skipped ids: last id - first id - (count - 1). Ids are contiguous
               except after a crash, which can leave ids handed out to batches that
               never reached a journal; 0 (the old reserved value) means contiguous.
      56  ...  payload: a zstd frame of one Arrow IPC record-batch message of
               `event_batch.SCHEMA`, rows in id order

Table of contents (``.toc``)::

    header (32 bytes)
      0   8s  magic            b"CPTOC001"
      8   H   format version   2 (1: entries of 40 bytes, without skipped ids)
      10  H   reserved (0)
      12  I   block count
      16  Q   first event id
      24  Q   length of the event file
    entry (48 bytes), one per block, in block order
      0   Q   offset of the block header in the event file
      8   Q   first event id of the block
      16  I   event count
      20  I   compressed payload length
      24  q   smallest event time
      32  q   largest event time
      40  I   skipped ids (as in the block header)
      44  I   reserved (0)
    trailer
      0   I   crc32 of everything before it

The TOC is redundant with the block headers: a missing or damaged TOC is rebuilt by
scanning the event file (`event_file.scan_blocks`).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from . import file_header

FILE_MAGIC = b"CPEVTF01"
TOC_MAGIC = b"CPTOC001"
BLOCK_MAGIC = b"BLK1"
VERSION = 1
TOC_VERSION = 2
CODEC_ZSTD = 1
EVENT_SUFFIX = ".prov"
TOC_SUFFIX = ".toc"
PARTIAL = ".partial"

FILE_HEADER = file_header.HEADER
BLOCK_HEADER = struct.Struct("<4sIQIIIIqqII")
TOC_HEADER = struct.Struct("<8sHHIQQ")
TOC_ENTRY_V1 = struct.Struct("<QQIIqq")
TOC_ENTRY = struct.Struct("<QQIIqqII")
TOC_TRAILER = struct.Struct("<I")

assert FILE_HEADER.size == 32, FILE_HEADER.size
assert BLOCK_HEADER.size == 56, BLOCK_HEADER.size
assert TOC_HEADER.size == 32, TOC_HEADER.size
assert TOC_ENTRY_V1.size == 40, TOC_ENTRY_V1.size
assert TOC_ENTRY.size == 48, TOC_ENTRY.size


@dataclass(frozen=True, slots=True)
class BlockInfo:
    """One TOC entry: where a block is and what it holds."""

    offset: int
    first_id: int
    count: int
    compressed_length: int
    min_time_ms: int
    max_time_ms: int
    skipped_ids: int = 0

    @property
    def last_id(self) -> int:
        return self.first_id + self.count - 1 + self.skipped_ids

    @property
    def end(self) -> int:
        return self.offset + BLOCK_HEADER.size + self.compressed_length


def event_file_name(first_id: int) -> str:
    return f"{first_id:020d}{EVENT_SUFFIX}"


def toc_name(first_id: int) -> str:
    return f"{first_id:020d}{TOC_SUFFIX}"


def parse_name(name: str) -> tuple[int, str, bool] | None:
    """(first id, ".prov" or ".toc", is_partial) of a file name, or None."""
    partial = name.endswith(PARTIAL)
    if partial:
        name = name[: -len(PARTIAL)]
    for suffix in (EVENT_SUFFIX, TOC_SUFFIX):
        if name.endswith(suffix) and name[: -len(suffix)].isdigit():
            return int(name[: -len(suffix)]), suffix, partial
    return None


def pack_file_header(first_id: int) -> bytes:
    return file_header.pack_header(FILE_MAGIC, VERSION, CODEC_ZSTD, first_id)


def unpack_file_header(data: bytes) -> int:
    """The first event id; raises ValueError with the reason."""
    version, codec, first_id = file_header.unpack_header(data, FILE_MAGIC, "event file")
    if version != VERSION or codec != CODEC_ZSTD:
        raise ValueError(f"format version {version} codec {codec} not supported")
    return first_id


def pack_block_header(
    index: int,
    first_id: int,
    count: int,
    uncompressed: int,
    payload: bytes,
    min_time: int,
    max_time: int,
    skipped_ids: int = 0,
) -> bytes:
    head = struct.pack(
        "<4sIQIIIIqq",
        BLOCK_MAGIC,
        index,
        first_id,
        count,
        uncompressed,
        len(payload),
        zlib.crc32(payload),
        min_time,
        max_time,
    )
    return head + struct.pack("<II", zlib.crc32(head), skipped_ids)


@dataclass(frozen=True, slots=True)
class BlockHeader:
    index: int
    first_id: int
    count: int
    uncompressed_length: int
    compressed_length: int
    payload_crc: int
    min_time_ms: int
    max_time_ms: int
    skipped_ids: int = 0


def unpack_block_header(data, offset: int = 0) -> BlockHeader:
    if len(data) - offset < BLOCK_HEADER.size:
        raise ValueError("truncated block header")
    (magic, index, first_id, count, ulen, clen, pcrc, tmin, tmax, crc, skipped) = BLOCK_HEADER.unpack_from(data, offset)
    if magic != BLOCK_MAGIC:
        raise ValueError(f"bad block magic {bytes(magic)!r}")
    if zlib.crc32(bytes(data[offset : offset + 48])) != crc:
        raise ValueError("block header checksum mismatch")
    # The skipped-id count is outside the header checksum (it was a reserved field):
    # the TOC carries it too, and `EventFile.read_block` checks the two agree.
    return BlockHeader(index, first_id, count, ulen, clen, pcrc, tmin, tmax, skipped)


def pack_toc(first_id: int, file_length: int, blocks: list[BlockInfo]) -> bytes:
    parts = [TOC_HEADER.pack(TOC_MAGIC, TOC_VERSION, 0, len(blocks), first_id, file_length)]
    for b in blocks:
        parts.append(
            TOC_ENTRY.pack(
                b.offset, b.first_id, b.count, b.compressed_length, b.min_time_ms, b.max_time_ms, b.skipped_ids, 0
            )
        )
    body = b"".join(parts)
    return body + TOC_TRAILER.pack(zlib.crc32(body))


def unpack_toc(data: bytes) -> tuple[int, int, list[BlockInfo]]:
    """(first id, event file length, blocks); raises ValueError with the reason."""
    if len(data) < TOC_HEADER.size + TOC_TRAILER.size:
        raise ValueError("table of contents is truncated")
    magic, version, _, count, first_id, file_length = TOC_HEADER.unpack_from(data)
    if magic != TOC_MAGIC:
        raise ValueError(f"bad magic {magic!r}: not a provenance table of contents")
    if version not in (1, TOC_VERSION):
        raise ValueError(f"table of contents version {version} is not supported")
    entry = TOC_ENTRY if version == TOC_VERSION else TOC_ENTRY_V1
    expected = TOC_HEADER.size + count * entry.size + TOC_TRAILER.size
    if len(data) != expected:
        raise ValueError(f"table of contents is {len(data)} bytes, expected {expected}")
    (crc,) = TOC_TRAILER.unpack_from(data, expected - TOC_TRAILER.size)
    if zlib.crc32(data[: expected - TOC_TRAILER.size]) != crc:
        raise ValueError("table of contents checksum mismatch")
    blocks = [BlockInfo(*entry.unpack_from(data, TOC_HEADER.size + i * entry.size)[:7]) for i in range(count)]
    return first_id, file_length, blocks
