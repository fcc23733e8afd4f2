"""Byte layout of a checksum file: the CRC of every block of every claim in one resource.

A resource file `<resource-id>` of content format 1 has a checksum file
`<resource-id>.crc` beside it (see `format` for where). The resource file itself is
unchanged: raw claim bytes, no framing. Each claim is cut into blocks of `block size`
bytes counted from the claim's first byte; the last block of a claim is shorter, an
empty claim has none. So a block never spans two claims, and two replicas that hold
the same claims hold the same checksum file, byte for byte. Records are appended in
the order the blocks were written, so their offsets only grow.

All integers are little-endian. The CRC of a block's bytes is the format version's
block CRC (below); every other CRC, of the header and of each record, is zlib.crc32.
Readers and writers build and parse checksum files only through this module.

    header, once at the start of the file (18 bytes)
      0   8   magic  b"CUSTCRCS"
      8   2   checksum file format version (1 or 2)
     10   4   block size the writer used, in bytes (readers take each record's length)
     14   4   crc32 of bytes 0 .. 14

    record, one per block, repeated (20 bytes)
      0   8   offset in the resource file of the block's first byte
      8   4   block length, 1 .. block size
     12   4   block CRC of the block's bytes
     16   4   crc32 of bytes 0 .. 16 of this record (a damaged offset or length is
              never trusted)

Versions. The two differ only in the block CRC:
  1  zlib's CRC-32 (the IEEE polynomial). Written by earlier releases; still read.
  2  CRC-32C (the Castagnoli polynomial), which this release writes. HDFS checksums
     the bytes it stores with CRC-32C too, and can compose a file's whole CRC-32C from
     its block metadata without reading the file; so can `crc32c_math.compose` from
     these records, and where the two agree HDFS is known to hold the very bytes the
     writer checksummed (a pass-by-reference reader uses that instead of reading a
     file twice). CRC-32C is also six times faster here than zlib's CRC-32.
  A file keeps the version it was created with: records are only ever appended by
  the writer that wrote its header.

Reading rules:
  * A header that is short, has another magic or version, or fails its CRC makes the
    whole file untrusted: no block of the resource can be verified from it.
  * The file ends at the last whole record. A torn last record (fewer than 20 bytes)
    and whole records of NUL bytes after the last good one are what a crash leaves
    (an unfinished append, a preallocated or zeroed tail): the end of the records,
    not damage.
  * A record that fails its CRC is damaged: the bytes it covers cannot be verified,
    and the records after it are still good.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import NamedTuple

from crc32c import crc32c

CHECKSUM_MAGIC = b"CUSTCRCS"
CHECKSUM_FORMAT_VERSION = 2  # what this release writes
CRC32C_VERSION = 2
# 64 KiB: a reader checks (and so reads) at most this much before the first byte it
# wants; 20 bytes of checksum per block is 0.03 % of the content.
DEFAULT_CHECKSUM_BLOCK_SIZE = 64 * 1024
MAX_BLOCK_SIZE = (1 << 32) - 1

HEADER = struct.Struct("<8sHI")  # magic, format version, block size
HEADER_SIZE = HEADER.size + 4  # with its crc32
RECORD = struct.Struct("<QII")  # block offset, block length, crc32 of the block
RECORD_SIZE = RECORD.size + 4  # with its crc32
U32 = struct.Struct("<I")
NUL_RECORD = bytes(RECORD_SIZE)

# Checked at import: a silent change of any of these would make every checksum file unreadable.
assert HEADER.size == 14 and HEADER_SIZE == 18, HEADER.size
assert RECORD.size == 16 and RECORD_SIZE == 20, RECORD.size


crc32 = zlib.crc32  # unsigned, 0 .. 2**32 - 1

# Blocks up to this size are checksummed holding the GIL (a 64 KiB block takes about
# 10 us); larger ones let it go. The crc32c package lets it go from 32 KiB by default,
# and taking it back waits for whichever thread holds it then, up to the interpreter's
# 5 ms switch interval: with the engine's other threads busy, the 16 blocks of a 1 MB
# claim took 1.5 ms to checksum instead of 0.16.
HOLD_GIL_BYTES = 1 << 20


def block_crc32c(data, value: int = 0) -> int:
    """CRC-32C of `data` continued from `value`, as `crc32c.crc32c`."""
    return crc32c(data, value, gil_release_mode=0 if len(data) <= HOLD_GIL_BYTES else 1)


# The block CRC of each version: (data, running crc) -> crc, as zlib.crc32 is called.
BLOCK_CRCS: dict[int, Callable[..., int]] = {1: zlib.crc32, CRC32C_VERSION: block_crc32c}


class Header(NamedTuple):
    block_size: int
    version: int

    @property
    def block_crc(self) -> Callable[..., int]:
        return BLOCK_CRCS[self.version]


class Block(NamedTuple):
    """One checksummed block: the bytes [start, start + length) of the resource file."""

    start: int
    length: int
    crc: int

    @property
    def end(self) -> int:
        return self.start + self.length


class ChecksumFormatError(Exception):
    """Raised by the parsers with the offset in the checksum file; the callers turn it
    into a content error that names the file."""

    def __init__(self, offset: int, reason: str):
        super().__init__(reason)
        self.offset, self.reason = offset, reason


def pack_header(block_size: int, version: int = CHECKSUM_FORMAT_VERSION) -> bytes:
    if not 0 < block_size <= MAX_BLOCK_SIZE:
        raise ValueError(f"checksum block size {block_size} outside 1 .. {MAX_BLOCK_SIZE}")
    if version not in BLOCK_CRCS:
        raise ValueError(f"checksum file format {version} is not one of {sorted(BLOCK_CRCS)}")
    head = HEADER.pack(CHECKSUM_MAGIC, version, block_size)
    return head + U32.pack(crc32(head))


def unpack_header(data: bytes) -> int:
    """The block size of a checksum file whose first bytes are `data`; raises
    `ChecksumFormatError` if the header cannot be trusted."""
    return read_header(data).block_size


def read_header(data: bytes) -> Header:
    """The block size and version of a checksum file whose first bytes are `data`;
    raises `ChecksumFormatError` if the header cannot be trusted."""
    if len(data) < HEADER_SIZE:
        raise ChecksumFormatError(0, f"the header is cut short at {len(data)} of {HEADER_SIZE} bytes")
    magic, version, block_size = HEADER.unpack_from(data)
    (expected,) = U32.unpack_from(data, HEADER.size)
    if crc32(memoryview(data)[: HEADER.size]) != expected:
        raise ChecksumFormatError(0, "the header fails its CRC")
    if magic != CHECKSUM_MAGIC:
        raise ChecksumFormatError(0, f"not a checksum file (magic {magic!r})")
    if version not in BLOCK_CRCS:
        raise ChecksumFormatError(
            8,
            f"checksum file format {version} is not known to this release "
            f"(it reads formats {', '.join(map(str, sorted(BLOCK_CRCS)))}); "
            "upgrade custody",
        )
    return Header(block_size, version)


def pack_record(block: Block) -> bytes:
    body = RECORD.pack(*block)
    return body + U32.pack(crc32(body))


def unpack_record(data, offset: int = 0) -> Block | None:
    """The block of the record at `offset` in `data`, or None if the record fails its CRC."""
    start, length, crc = RECORD.unpack_from(data, offset)
    (expected,) = U32.unpack_from(data, offset + RECORD.size)
    if crc32(memoryview(data)[offset : offset + RECORD.size]) != expected or length == 0:
        return None
    return Block(start, length, crc)


def record_offset(index: int) -> int:
    """Where record `index` (from 0) starts in the checksum file."""
    return HEADER_SIZE + index * RECORD_SIZE


def whole_records(file_size: int) -> int:
    """How many whole records a checksum file of `file_size` bytes holds (a torn last
    record is not one)."""
    return max(0, (file_size - HEADER_SIZE) // RECORD_SIZE)
