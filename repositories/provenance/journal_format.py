"""Byte layout of a provenance journal file. Readers and writers use only this module.

A journal holds events exactly as they were registered, uncompressed and unindexed
(as in NiFi's provenance repository: no compression and no indexing on the write path). Several journals are
written at once, one per (container, slot); a rollover merges all journals of one
generation into an event file.

File name: ``journals/<first-id:020d>.<slot:03d>.journal`` in each container, where
first-id is the id the generation's first event gets, which is also the name of the
event file the merge produces. That shared number is how recovery pairs journals with
a (possibly partial) event file.

Layout (little-endian)::

    header  (32 bytes, the layout of `file_header`)
      0   8s  magic            b"CPJRNL01"
      8   H   format version   1
      10  H   slot
      12  I   reserved (0)
      16  Q   generation first event id
      24  I   reserved (0)
      28  I   crc32 of bytes 0..28
    frame   (28-byte header + payload), repeated
      0   4s  magic            b"FRM1"
      4   Q   first event id of the frame (ids are consecutive inside a frame)
      12  I   event count
      16  I   payload length
      20  I   crc32 of the payload
      24  I   crc32 of bytes 0..24 of this frame header
      28  ...  payload: one Arrow IPC record-batch message of `event_batch.SCHEMA`
              (no schema message: the schema is fixed by this format version)

A frame is written with one `writev`; a crash can leave a torn last frame, which
recovery detects (short read or CRC mismatch) and cuts off. Events of a torn frame were
never acknowledged to the caller.
"""

from __future__ import annotations

import struct
import zlib

from . import file_header

MAGIC = b"CPJRNL01"
VERSION = 1
HEADER = file_header.HEADER
FRAME_MAGIC = b"FRM1"
FRAME = struct.Struct("<4sQIIII")
SUFFIX = ".journal"

assert HEADER.size == 32, HEADER.size
assert FRAME.size == 28, FRAME.size


def journal_name(first_id: int, slot: int) -> str:
    return f"{first_id:020d}.{slot:03d}{SUFFIX}"


def parse_journal_name(name: str) -> tuple[int, int] | None:
    """(generation first id, slot) of a journal file name, or None if it is not one."""
    if not name.endswith(SUFFIX):
        return None
    stem = name[: -len(SUFFIX)]
    parts = stem.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def pack_header(first_id: int, slot: int) -> bytes:
    return file_header.pack_header(MAGIC, VERSION, slot, first_id)


def unpack_header(data: bytes) -> tuple[int, int]:
    """(generation first id, slot); raises ValueError with the reason."""
    version, slot, first_id = file_header.unpack_header(data, MAGIC, "journal")
    if version != VERSION:
        raise ValueError(f"journal format version {version} is not supported (this build reads {VERSION})")
    return first_id, slot


def pack_frame_header(first_id: int, count: int, payload) -> bytes:
    head = struct.pack("<4sQIII", FRAME_MAGIC, first_id, count, len(payload), zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head))


def unpack_frame_header(data, offset: int) -> tuple[int, int, int, int]:
    """(first id, count, payload length, payload crc); raises ValueError if damaged."""
    if len(data) - offset < FRAME.size:
        raise ValueError("torn frame header")
    magic, first_id, count, length, payload_crc, crc = FRAME.unpack_from(data, offset)
    if magic != FRAME_MAGIC or zlib.crc32(data[offset : offset + 24]) != crc:
        raise ValueError("frame header damaged")
    return first_id, count, length, payload_crc
