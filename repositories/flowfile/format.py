"""Byte layouts of the FlowFile WAL: journal files and the snapshot.

All integers are little-endian. CRCs are zlib.crc32. Readers and writers build and
parse bytes only through this module.

Journal (one per partition, `journal-<partition>`), format version 3. A checkpoint
writes each partition's next journal as `journal-<partition>.partial` (its header
alone) beside `snapshot.partial`, and renames it over `journal-<partition>` once the
new snapshot is in place; recovery deletes one it finds, never reading it:

    header, at the head of every journal (names the SerDe its updates need)
      0   8   magic  b"CUSTWALJ"
      8   2   journal format version (3; 1 and 2 are still read)
     10   8   shard epoch of the owner that created the journal
     18   2   n = length of the SerDe name
     20   n   SerDe name, UTF-8
    20+n  4   SerDe version the journal's updates are written with
    24+n  8   generation: the max transaction id of the snapshot the journal was created
              after (every transaction it holds has a higher id)
    32+n  4   partitions: how many journals the set it was created in holds
    36+n  4   crc32 of bytes 0 .. 36+n
    (format versions 1 and 2 have neither generation nor partitions: the CRC is at 24+n)

    transaction frame, repeated
      0   1   marker 0xA5 (a 0x00 here is a NUL tail: preallocated or zeroed by a crash)
      1   8   transaction id
      9   8   shard epoch of the writer
     17   4   number of updates
     21   4   payload length p
     25   4   crc32 of the payload
     29   8   durable watermark: when the frame was built, every transaction id up to
              this one (and above the journal's generation) was durable in some journal
     37   4   crc32 of bytes 0 .. 37 (so a damaged length is never trusted)
     41   4   payload length p again: the length guard
     45   4   crc32 of bytes 41 .. 45
     49   p   payload: for each update, u32 length, the SerDe's bytes, then one marker
              byte: TRANSACTION_CONTINUE (0xC0) if more updates follow, else
              TRANSACTION_COMMIT (0xCC), as in NiFi's journals

    Where the next frame starts is only ever taken from a length whose CRC matched:
    the header's, or, when the header is damaged, the length guard's. A reader never
    searches for a marker: a payload holds user data (attribute values are raw
    UTF-8), which can hold a complete, CRC-valid frame. When both lengths of a frame
    are damaged, nothing after it in that journal can be located, and it is cut.
    A frame is accepted only with its header, its length guard and its payload intact,
    and with a transaction id above the previous frame's of the same journal.

    What a crash can take is only what was not yet synced. The header's journal set
    and the frames' watermarks let recovery tell that from damage (`damage`): a journal
    of the set that is missing, or a transaction id at or below the highest watermark
    read that no journal holds, was durable once and is gone.

    Format version 2 (written until the journal set and the watermark came; still
    read) has no watermark: the header CRC is at 29, the length guard at 33, the
    payload at 41. Format version 1 has no length guard either: the payload follows the
    header at offset 33, and a damaged version 1 header cuts the rest of its journal.
    Recovery rewrites an older journal at once (its forced checkpoint), so frames are
    only ever appended in the current format.

Snapshot (`snapshot`, written as `snapshot.partial` first), format version 2:

    header
      0   8   magic  b"CUSTSNAP"
      8   2   snapshot format version (2; 1 is still read)
     10   8   shard epoch of the owner that wrote it
     18   2   n, then n bytes of SerDe name, then u32 SerDe version (as in a journal)
    24+n  8   max transaction id covered by the snapshot
    32+n  8   number of records
    40+n  4   number of swap files
    44+n  4   crc32 of bytes 0 .. 44+n
    record blocks (format 2), each of 1 .. SNAPSHOT_BLOCK_RECORDS records, as many
    as it takes to hold the header's record count:
      0   4   n = number of records in the block
      4   4   b = body length
      8   4   crc32 of the body
     12   4   crc32 of bytes 0 .. 12 (so a damaged length is never trusted)
     16   b   body:
              n x (u32 length, u32 crc32 of the record's bytes): the entry table
              the n records' SerDe bytes, back to back, in table order
              the n record ids in the same order: one byte 0 then the ids joined
              with NUL (UTF-8) when no id contains NUL, else one byte 1 then
              u32 length + UTF-8 bytes per id
              (the table and the id column let a block be split and its ids read
              with a few C-level calls instead of a Python loop per record)
    then swap files, each framed as
              u32 length, u32 crc32 of the bytes, the bytes (SWAP_FILE below)
    (format 1 had no blocks: the records followed the header directly, each framed
    like a swap file, with the SerDe bytes of the record.)
    trailer
      0   8   magic  b"CUSTSEND"
      8   8   number of records again
     16   4   number of swap files again
     20   4   crc32 of bytes 0 .. 20 of the trailer

Integrity of snapshot records (format 2): every record is covered by two CRCs, its
block's and its own. Recovery checks every block's CRC before it decodes any record of
the block (one zlib call over the whole body, at C speed, instead of one per record),
so no record whose bytes changed is ever accepted. When a block's CRC fails, recovery
checks the records' own CRCs (from the entry table) to name the first damaged record
and its offset in the error. A record's bytes are then decoded lazily (see `record`); the CRC was checked
at recovery, not at access, so damage is found while the journals that could explain
it still exist, and `custody wal inspect`/`fsck` report it.

Swap file entry (snapshot, and inside the SerDe's SwapOut update):
      u64 count, u64 size, u16 location length, u16 queue length, location, queue
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from itertools import accumulate, islice
from typing import NamedTuple

from .record import SwapFile

crc32 = zlib.crc32

# What the parsers read: a file's bytes, or a view into them.
BytesLike = bytes | bytearray | memoryview

JOURNAL_MAGIC = b"CUSTWALJ"
SNAPSHOT_MAGIC = b"CUSTSNAP"
SNAPSHOT_TRAILER_MAGIC = b"CUSTSEND"
JOURNAL_FORMAT_VERSION = 3
JOURNAL_FORMAT_VERSIONS = (1, 2, 3)  # what `journal.scan_journal` reads
SNAPSHOT_FORMAT_VERSION = 2
SNAPSHOT_FORMAT_VERSIONS = (1, 2)  # what `snapshot.read_snapshot` reads
SNAPSHOT_BLOCK_RECORDS = 4096
SNAPSHOT_BLOCK_BYTES = 1 << 20  # a block closes after the record that reaches this

TRANSACTION_MARKER = 0xA5
TRANSACTION_CONTINUE = 0xC0
TRANSACTION_COMMIT = 0xCC

# magic, format version, epoch, serde name length
HEADER_START = struct.Struct("<8sHQH")
U32 = struct.Struct("<I")
SERDE_VERSION = U32
SNAPSHOT_COUNTS = struct.Struct("<QQI")  # max txid, record count, swap-file count
JOURNAL_SET = struct.Struct("<QI")  # generation, partitions (journal header, format 3)
FRAME_HEADER_V2 = struct.Struct("<BQQIII")  # marker, txid, epoch, count, payload length, payload crc
FRAME_HEADER = struct.Struct("<BQQIIIQ")  # the same, then the durable watermark (format 3)
FRAME_HEADER_CRC = U32
LENGTH_GUARD = struct.Struct("<II")  # payload length, crc32 of its 4 bytes
FRAME_HEADER_SIZE_V1 = FRAME_HEADER_V2.size + FRAME_HEADER_CRC.size
FRAME_HEADER_SIZE_V2 = FRAME_HEADER_SIZE_V1 + LENGTH_GUARD.size
FRAME_HEADER_SIZE = FRAME_HEADER.size + FRAME_HEADER_CRC.size + LENGTH_GUARD.size
UPDATE_LENGTH = U32
SNAPSHOT_ENTRY = struct.Struct("<II")  # length, crc
SNAPSHOT_BLOCK = struct.Struct("<III")  # record count, body length, body crc
SNAPSHOT_BLOCK_HEADER_SIZE = SNAPSHOT_BLOCK.size + U32.size
SNAPSHOT_TRAILER = struct.Struct("<8sQII")
SWAP_FILE = struct.Struct("<QQHH")

# Checked at import: a silent change of any of these would make old files unreadable.
assert HEADER_START.size == 20, HEADER_START.size
assert FRAME_HEADER_V2.size == 29 and FRAME_HEADER_SIZE_V1 == 33 and FRAME_HEADER_SIZE_V2 == 41, FRAME_HEADER_V2.size
assert FRAME_HEADER.size == 37 and FRAME_HEADER_SIZE == 49 and JOURNAL_SET.size == 12, FRAME_HEADER.size
assert SNAPSHOT_COUNTS.size == 20, SNAPSHOT_COUNTS.size
assert SNAPSHOT_BLOCK.size == 12 and SNAPSHOT_BLOCK_HEADER_SIZE == 16, SNAPSHOT_BLOCK.size
assert SNAPSHOT_ENTRY.size == 8 and SNAPSHOT_TRAILER.size == 24 and SWAP_FILE.size == 20

MAX_PAYLOAD = (1 << 32) - 1


class FileHeader(NamedTuple):
    magic: bytes
    format_version: int
    epoch: int
    serde_name: str
    serde_version: int
    length: int  # bytes the header occupies, CRC included


class JournalHeader(NamedTuple):
    magic: bytes
    format_version: int
    epoch: int
    serde_name: str
    serde_version: int
    length: int  # bytes the header occupies, CRC included
    generation: int | None  # None before format 3
    partitions: int | None  # None before format 3


class HeaderError(Exception):
    """Raised by the parsers; the journal/snapshot readers turn it into a WAL error with the path."""

    def __init__(self, offset: int, reason: str, torn: bool = False):
        super().__init__(reason)
        self.offset, self.reason, self.torn = offset, reason, torn


def _pack_header_body(magic: bytes, version: int, epoch: int, serde_name: str, serde_version: int) -> bytes:
    name = serde_name.encode("utf-8")
    return HEADER_START.pack(magic, version, epoch, len(name)) + name + SERDE_VERSION.pack(serde_version)


def pack_journal_header(epoch: int, serde_name: str, serde_version: int, generation: int, partitions: int) -> bytes:
    body = _pack_header_body(JOURNAL_MAGIC, JOURNAL_FORMAT_VERSION, epoch, serde_name, serde_version)
    body += JOURNAL_SET.pack(generation, partitions)
    return body + U32.pack(crc32(body))


def unpack_journal_header(data: BytesLike) -> JournalHeader:
    """Parse a journal header of any format version (HeaderError as `unpack_file_header`).
    The version decides where the CRC is; a damaged version fails the CRC check."""
    version = HEADER_START.unpack_from(data, 0)[1] if len(data) >= HEADER_START.size else 0
    extra = JOURNAL_SET.size if version >= 3 else 0
    header, raw = unpack_file_header(data, JOURNAL_MAGIC, extra)
    generation, partitions = JOURNAL_SET.unpack(raw) if extra else (None, None)
    return JournalHeader(*header, generation, partitions)


def unpack_file_header(data: BytesLike, magic: bytes, extra: int = 0) -> tuple[FileHeader, bytes]:
    """Parse a journal or snapshot header. `extra` bytes of fields follow the SerDe
    version before the CRC (the snapshot's counts); they are returned raw."""
    if len(data) < HEADER_START.size:
        if bytes(data[: len(magic)]) != magic[: len(data)]:
            raise HeaderError(0, f"starts with {bytes(data[:8])!r}, not the magic {magic!r}")
        raise HeaderError(len(data), f"file ends inside its header ({len(data)} bytes)", torn=True)
    found_magic, version, epoch, name_length = HEADER_START.unpack_from(data, 0)
    if found_magic != magic:
        raise HeaderError(0, f"starts with {found_magic!r}, not the magic {magic!r}")
    end = HEADER_START.size + name_length + SERDE_VERSION.size + extra
    if len(data) < end + U32.size:
        raise HeaderError(len(data), f"file ends inside its header ({len(data)} bytes)", torn=True)
    (stored_crc,) = U32.unpack_from(data, end)
    if crc32(data[:end]) != stored_crc:
        raise HeaderError(0, "header CRC mismatch")
    try:
        serde_name = bytes(data[HEADER_START.size : HEADER_START.size + name_length]).decode("utf-8")
    except UnicodeDecodeError as error:
        raise HeaderError(HEADER_START.size, f"SerDe name is not UTF-8: {error}") from None
    (serde_version,) = SERDE_VERSION.unpack_from(data, HEADER_START.size + name_length)
    header = FileHeader(found_magic, version, epoch, serde_name, serde_version, end + U32.size)
    return header, bytes(data[end - extra : end])


def frame_header_size(journal_format_version: int) -> int:
    """Bytes from a frame's marker to its payload, in a journal of that format version."""
    if journal_format_version >= 3:
        return FRAME_HEADER_SIZE
    return FRAME_HEADER_SIZE_V2 if journal_format_version == 2 else FRAME_HEADER_SIZE_V1


def pack_frame(txid: int, epoch: int, count: int, payload: bytes, payload_crc: int, watermark: int) -> bytes:
    """A frame of the current journal format (version 3)."""
    head = FRAME_HEADER.pack(TRANSACTION_MARKER, txid, epoch, count, len(payload), payload_crc, watermark)
    length = U32.pack(len(payload))
    return head + FRAME_HEADER_CRC.pack(crc32(head)) + length + U32.pack(crc32(length)) + payload


class Frame(NamedTuple):
    offset: int
    txid: int
    epoch: int
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, as it always has (a public name)
    payload: memoryview
    end: int  # offset just past the payload
    watermark: int = 0  # 0 before format 3


def parse_frame_header(
    data: BytesLike, offset: int, version: int = JOURNAL_FORMAT_VERSION
) -> tuple[int, int, int, int, int, int] | None:
    """Return (txid, epoch, count, payload_length, payload_crc, watermark) or None if the
    header at `offset` (of a journal of format `version`) is not intact. The caller
    checks there are `frame_header_size(version)` bytes."""
    layout = FRAME_HEADER if version >= 3 else FRAME_HEADER_V2
    fields = layout.unpack_from(data, offset)
    if fields[0] != TRANSACTION_MARKER:
        return None
    (stored,) = FRAME_HEADER_CRC.unpack_from(data, offset + layout.size)
    if crc32(data[offset : offset + layout.size]) != stored:
        return None
    return fields[1:] if version >= 3 else (*fields[1:], 0)


def parse_length_guard(data: BytesLike, offset: int, version: int = JOURNAL_FORMAT_VERSION) -> int | None:
    """The payload length in the length guard of the (version 2 or 3) frame at
    `offset`, or None if the guard is damaged. The caller checks there are
    `frame_header_size(version)` bytes."""
    start = offset + frame_header_size(version) - LENGTH_GUARD.size
    length: int
    length, stored = LENGTH_GUARD.unpack_from(data, start)
    if crc32(data[start : start + U32.size]) != stored:
        return None
    return length


def pack_payload(encoded_updates: Sequence[bytes]) -> bytes:
    """Frame each SerDe-encoded update with its length and a Continue/Commit marker."""
    out = bytearray()
    last = len(encoded_updates) - 1
    pack_length = UPDATE_LENGTH.pack
    for index, encoded in enumerate(encoded_updates):
        out += pack_length(len(encoded))
        out += encoded
        out.append(TRANSACTION_COMMIT if index == last else TRANSACTION_CONTINUE)
    if len(out) > MAX_PAYLOAD:
        raise ValueError(f"a transaction of {len(out)} bytes exceeds the 4 GiB frame limit")
    return bytes(out)


def split_payload(payload: memoryview, count: int) -> list[memoryview]:
    """Inverse of pack_payload. Raises ValueError if markers or lengths disagree."""
    pieces = []
    offset = 0
    end = len(payload)
    unpack_length = UPDATE_LENGTH.unpack_from
    for index in range(count):
        if offset + 4 > end:
            raise ValueError(f"update {index} of {count} runs past the payload")
        (length,) = unpack_length(payload, offset)
        offset += 4
        stop = offset + length
        if stop + 1 > end:
            raise ValueError(f"update {index} of {count} runs past the payload")
        pieces.append(payload[offset:stop])
        marker = payload[stop]
        expected = TRANSACTION_COMMIT if index == count - 1 else TRANSACTION_CONTINUE
        if marker != expected:
            raise ValueError(f"update {index} of {count} ends with marker {marker:#x}, expected {expected:#x}")
        offset = stop + 1
    if offset != end:
        raise ValueError(f"{end - offset} bytes follow the Commit marker")
    return pieces


def pack_snapshot_header(
    epoch: int,
    serde_name: str,
    serde_version: int,
    max_txid: int,
    record_count: int,
    swap_count: int,
    format_version: int = SNAPSHOT_FORMAT_VERSION,
) -> bytes:
    body = _pack_header_body(SNAPSHOT_MAGIC, format_version, epoch, serde_name, serde_version)
    body += SNAPSHOT_COUNTS.pack(max_txid, record_count, swap_count)
    return body + U32.pack(crc32(body))


def unpack_snapshot_header(data: BytesLike) -> tuple[FileHeader, int, int, int]:
    header, extra = unpack_file_header(data, SNAPSHOT_MAGIC, SNAPSHOT_COUNTS.size)
    max_txid, record_count, swap_count = SNAPSHOT_COUNTS.unpack(extra)
    return header, max_txid, record_count, swap_count


def pack_snapshot_block(count: int, body: bytes) -> bytes:
    """Block header for `count` record entries making up `body`; the body follows it."""
    head = SNAPSHOT_BLOCK.pack(count, len(body), crc32(body))
    return head + U32.pack(crc32(head))


def unpack_snapshot_block(data: BytesLike, offset: int) -> tuple[int, int, int]:
    """(record count, body length, body crc) of the block at `offset`; HeaderError if
    the block header is cut short or its CRC does not match."""
    if offset + SNAPSHOT_BLOCK_HEADER_SIZE > len(data):
        raise HeaderError(offset, "file ends inside a record block header")
    count, length, body_crc = SNAPSHOT_BLOCK.unpack_from(data, offset)
    (stored,) = U32.unpack_from(data, offset + SNAPSHOT_BLOCK.size)
    if crc32(data[offset : offset + SNAPSHOT_BLOCK.size]) != stored:
        raise HeaderError(offset, "record block header CRC mismatch")
    return count, length, body_crc


IDS_NUL_JOINED = 0
IDS_LENGTH_PREFIXED = 1


def pack_snapshot_block_body(ids: Sequence[str], encoded: Sequence[bytes]) -> bytes:
    """Entry table, record bytes, id column (see the layout above)."""
    table = b"".join([SNAPSHOT_ENTRY.pack(len(e), crc32(e)) for e in encoded])
    text = "\0".join(ids)
    if text.count("\0") == len(ids) - 1:
        column = bytes((IDS_NUL_JOINED,)) + text.encode("utf-8")
    else:
        column = bytes((IDS_LENGTH_PREFIXED,)) + b"".join(
            U32.pack(len(e)) + e for e in (i.encode("utf-8") for i in ids)
        )
    return b"".join((table, *encoded, column))


def unpack_snapshot_block_body(data: bytes, start: int, stop: int, count: int) -> tuple[list[str], list[bytes]]:
    """(ids, record bytes) of a block body data[start:stop] whose CRC was checked.
    Raises ValueError when its parts do not add up."""
    table_stop = start + count * SNAPSHOT_ENTRY.size
    if table_stop > stop:
        raise ValueError(f"entry table of {count} records runs past the block")
    lengths = struct.unpack_from(f"<{2 * count}I", data, start)[0::2]
    offsets = list(accumulate(lengths, initial=table_stop))
    column = offsets[-1]
    if column >= stop:
        raise ValueError("records run into or past the end of the block (no id column)")
    pieces = list(map(data.__getitem__, map(slice, offsets, islice(offsets, 1, None))))
    kind = data[column]
    if kind == IDS_NUL_JOINED:
        ids = str(data[column + 1 : stop], "utf-8").split("\0")
    elif kind == IDS_LENGTH_PREFIXED:
        ids, position = [], column + 1
        while position < stop:
            (length,) = U32.unpack_from(data, position)
            position += U32.size
            ids.append(str(data[position : position + length], "utf-8"))
            position += length
        if position != stop:
            raise ValueError("the id column runs past the block")
    else:
        raise ValueError(f"unknown id column kind {kind}")
    if len(ids) != count:
        raise ValueError(f"{len(ids)} ids for {count} records")
    return ids, pieces


def snapshot_block_entries(data: BytesLike, start: int, stop: int, count: int) -> Iterator[tuple[int, int, int, int]]:
    """(index, offset, length, crc) of each entry-table row of a block body that may be
    damaged, stopping early where the table or the records run past the block."""
    table_stop = start + count * SNAPSHOT_ENTRY.size
    position = table_stop
    for index in range(count):
        row = start + index * SNAPSHOT_ENTRY.size
        if row + SNAPSHOT_ENTRY.size > stop:
            return
        length, crc = SNAPSHOT_ENTRY.unpack_from(data, row)
        if position + length > stop:
            return
        yield index, position, length, crc
        position += length


def pack_snapshot_entry(encoded: bytes) -> bytes:
    return SNAPSHOT_ENTRY.pack(len(encoded), crc32(encoded)) + encoded


def pack_snapshot_trailer(record_count: int, swap_count: int) -> bytes:
    body = SNAPSHOT_TRAILER.pack(SNAPSHOT_TRAILER_MAGIC, record_count, swap_count, 0)[:-4]
    return body + U32.pack(crc32(body))


def unpack_snapshot_trailer(data: BytesLike, offset: int) -> tuple[int, int]:
    magic, record_count, swap_count, stored = SNAPSHOT_TRAILER.unpack_from(data, offset)
    if magic != SNAPSHOT_TRAILER_MAGIC:
        raise HeaderError(offset, f"trailer magic is {magic!r}, not {SNAPSHOT_TRAILER_MAGIC!r}")
    if crc32(data[offset : offset + SNAPSHOT_TRAILER.size - 4]) != stored:
        raise HeaderError(offset, "trailer CRC mismatch")
    return record_count, swap_count


def pack_swap_file(swap_file: SwapFile) -> bytes:
    location = swap_file.location.encode("utf-8")
    queue = swap_file.queue.encode("utf-8")
    return SWAP_FILE.pack(swap_file.count, swap_file.size, len(location), len(queue)) + location + queue


def unpack_swap_file(data: BytesLike, offset: int = 0) -> tuple[SwapFile, int]:
    """Return the swap file and the offset just past it."""
    count, size, location_length, queue_length = SWAP_FILE.unpack_from(data, offset)
    start = offset + SWAP_FILE.size
    middle = start + location_length
    end = middle + queue_length
    if end > len(data):
        raise ValueError("swap-file entry runs past its bytes")
    location = bytes(data[start:middle]).decode("utf-8")
    queue = bytes(data[middle:end]).decode("utf-8")
    return SwapFile(location, queue, count, size), end
