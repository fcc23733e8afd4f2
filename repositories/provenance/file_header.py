"""The 32-byte header that starts every provenance journal and event file.

Layout (little-endian)::

    0   8s  magic            names the file type
    8   H   format version
    10  H   a field of the file type: a journal's slot, an event file's codec
    12  I   reserved (0)
    16  Q   first event id (of the journal's generation, of the event file)
    24  I   reserved (0)
    28  I   crc32 of bytes 0..28

`journal_format` and `event_file_format` each choose the magic, version and field,
and check the version they read.
"""

from __future__ import annotations

import struct
import zlib

HEADER = struct.Struct("<8sHHIQII")
CHECKED = 28  # bytes covered by the crc32
CRC = struct.Struct("<I")

assert HEADER.size == 32, HEADER.size


def pack_header(magic: bytes, version: int, field: int, first_id: int) -> bytes:
    body = HEADER.pack(magic, version, field, 0, first_id, 0, 0)[:CHECKED]
    return body + CRC.pack(zlib.crc32(body))


def unpack_header(data: bytes, magic: bytes, what: str) -> tuple[int, int, int]:
    """(format version, field, first id) of a header with the right magic and checksum;
    raises ValueError with the reason, naming the file type `what` ("journal", ...)."""
    if len(data) < HEADER.size:
        raise ValueError(f"{what} header is {len(data)} bytes, needs {HEADER.size}")
    found, version, field, _, first_id, _, crc = HEADER.unpack_from(data)
    if found != magic:
        raise ValueError(f"bad magic {found!r}: not a provenance {what}")
    if zlib.crc32(data[:CHECKED]) != crc:
        raise ValueError(f"{what} header checksum mismatch")
    return version, field, first_id
