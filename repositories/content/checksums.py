"""Checksums of claims: cut while a claim is written, checked while it is read.

The byte layout is `checksum_format`'s. Two pieces, one per side:

* `BlockChecksummer` - a writer's running CRC over one claim: the packed records of
  the claim's blocks, as they fill up.
* `ChecksumRecords` - the records of one checksum file, read through an open handle in
  windows (a 10 GB claim has 160,000 records: they are never all in memory): the
  chain of blocks that covers a range of the resource (`covering`), and every record
  in order with the damaged ones as None (`records`).

Both raise `ChecksumFormatError` (offset in the checksum file, reason); the reading and
verification modules turn it into a content error naming the claim and the replica.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from .checksum_format import (
    BLOCK_CRCS,
    CHECKSUM_FORMAT_VERSION,
    HEADER_SIZE,
    NUL_RECORD,
    RECORD,
    RECORD_SIZE,
    U32,
    Block,
    ChecksumFormatError,
    crc32,
    read_header,
    record_offset,
    unpack_record,
    whole_records,
)

# A record with its CRC, unpacked without checking it: enough to skip records quickly.
_RAW_RECORD = struct.Struct(RECORD.format + U32.format.lstrip("<"))
_OFFSET_AND_LENGTH = struct.Struct(RECORD.format[:3])
assert _RAW_RECORD.size == RECORD_SIZE and _OFFSET_AND_LENGTH.size == 12
WINDOW_RECORDS = 4096  # records read at a time: 80 KB
WHOLE_FILE_BYTES = 64 * 1024
SEARCH_FROM_RECORDS = 8  # fewer records are skipped faster one by one than searched
_BLOCK_CRC = BLOCK_CRCS[CHECKSUM_FORMAT_VERSION]  # what a writer of this release checksums blocks with


class BlockChecksummer:
    """The running checksum of one claim being written from resource offset `start`,
    in the block CRC of the checksum file format this release writes.

    `update` takes the claim's bytes as they come; each block that fills up adds its
    packed record to `ready`, which the writer hands on with `take`; `finish` closes
    the claim's last, shorter block."""

    __slots__ = ("_position", "_block_size", "_crc", "_filled", "ready")

    def __init__(self, start: int, block_size: int):
        self._position = start
        self._block_size = block_size
        self._crc = 0
        self._filled = 0
        self.ready = bytearray()

    def update(self, data) -> None:
        room = self._block_size - self._filled
        if len(data) < room:  # the common case: a small write inside one block
            self._crc = _BLOCK_CRC(data, self._crc)
            self._filled += len(data)
            return
        view = memoryview(data)
        while view:
            piece = view[:room]
            self._crc = _BLOCK_CRC(piece, self._crc)
            self._filled += len(piece)
            view = view[len(piece) :]
            if self._filled == self._block_size:
                self._close_block()
            room = self._block_size - self._filled

    def finish(self) -> None:
        if self._filled:
            self._close_block()

    def take(self) -> bytearray:
        ready, self.ready = self.ready, bytearray()
        return ready

    def _close_block(self) -> None:
        # pack_record, inlined: a writer of small claims closes one block per claim.
        body = RECORD.pack(self._position, self._filled, self._crc)
        self.ready += body
        self.ready += U32.pack(crc32(body))
        self._position += self._filled
        self._crc = self._filled = 0


class ChecksumRecords:
    """The records of one checksum file, read from `handle` (`size` bytes long), which
    it closes with `close`. A small file (most are: a resource of 50 KB of claims has a
    few dozen records) is read once, whole.

    `version` and `block_crc` are the file's format version and the CRC its blocks are
    checked with. Raises `ChecksumFormatError` at construction if the header cannot be
    trusted."""

    def __init__(self, handle, size: int):
        self._handle = handle
        self._whole = None
        if size <= WHOLE_FILE_BYTES:
            self._whole = memoryview(self._read(0, size))  # sliced without copies
            size = len(self._whole)
        header = read_header(self._read(0, HEADER_SIZE))
        self.block_size, self.version, self.block_crc = header.block_size, header.version, header.block_crc
        count = whole_records(size)
        while count and self._read(record_offset(count - 1), RECORD_SIZE) == NUL_RECORD:
            count -= 1  # a crash's NUL tail: the end of the records
        self.count = count

    def close(self) -> None:
        self._handle.close()

    def _read(self, offset: int, length: int) -> bytes:
        if self._whole is not None:
            return self._whole[offset : offset + length]
        self._handle.seek(offset)
        chunks, left = [], length
        while left > 0:
            chunk = self._handle.read(left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def record(self, index: int) -> Block | None:
        """The block of record `index`, or None if the record is damaged."""
        return unpack_record(self._read(record_offset(index), RECORD_SIZE))

    def last_end(self) -> int | None:
        """End of the block of the last record, or None if there is no record or the
        last one is damaged (the chain will tell what is missing)."""
        if not self.count:
            return None
        block = self.record(self.count - 1)
        return None if block is None else block.end

    def _windows(self, index: int = 0) -> Iterator[tuple[int, bytes]]:
        while index < self.count:
            want = min(self.count - index, WINDOW_RECORDS)
            data = self._read(record_offset(index), want * RECORD_SIZE)
            got = len(data) // RECORD_SIZE
            if not got:
                return  # the file shrank under us: the caller finds the chain short
            yield index, data[: got * RECORD_SIZE]
            index += got

    def records(self) -> Iterator[tuple[int, Block | None]]:
        """(index, block) for every record in order; a damaged record's block is None."""
        for first, data in self._windows():
            for position in range(0, len(data), RECORD_SIZE):
                yield first + position // RECORD_SIZE, unpack_record(data, position)

    def covering(self, start: int, stop: int) -> Iterator[Block]:
        """The contiguous blocks that cover the resource bytes [start, stop), checked
        record by record as they are reached. Raises `ChecksumFormatError` where the
        chain breaks: no record covers `start`, a record inside the range is damaged,
        records skip bytes, or they end before `stop`.

        The first record is found by a binary search over the records' (unchecked)
        ends; a damaged record can mislead it, so a chain that does not start where the
        search landed is looked for again among every record before it is refused."""
        begin = self._first_ending_after(start) if self.count > SEARCH_FROM_RECORDS else 0
        chain = self._chain(start, stop, begin)
        try:
            first = next(chain)
        except ChecksumFormatError:
            if begin == 0:
                raise
            chain = self._chain(start, stop, 0)
            first = next(chain)
        yield first
        yield from chain

    def _first_ending_after(self, start: int) -> int:
        low, high = 0, self.count
        whole, unpack = self._whole, _OFFSET_AND_LENGTH.unpack_from
        while low < high:
            middle = (low + high) // 2
            if whole is not None:
                offset, length = unpack(whole, HEADER_SIZE + middle * RECORD_SIZE)
            else:
                offset, length = unpack(self._read(record_offset(middle), RECORD_SIZE))
            if offset + length <= start:
                low = middle + 1
            else:
                high = middle
        return low

    def _chain(self, start: int, stop: int, begin: int) -> Iterator[Block]:
        expected: int | None = None
        damaged: int | None = None  # the last damaged record met before the chain began
        for first, data in self._windows(begin):
            for number, (offset, length, _crc, _check) in enumerate(_RAW_RECORD.iter_unpack(data)):
                index, position = first + number, number * RECORD_SIZE
                if expected is None and offset + length <= start:
                    continue  # unchecked: a wrong skip only ever breaks the chain below
                block = unpack_record(data, position)
                if expected is None:
                    if block is None:
                        damaged = index
                        continue
                    if block.start > start:
                        why = f"record {damaged} is damaged" if damaged is not None else "no record covers it"
                        raise ChecksumFormatError(record_offset(index), f"no checksum for byte {start}: {why}")
                elif block is None:
                    raise ChecksumFormatError(
                        record_offset(index), f"checksum record {index}, for the bytes from {expected}, is damaged"
                    )
                elif block.start != expected:
                    raise ChecksumFormatError(
                        record_offset(index), f"checksum records jump from byte {expected} to {block.start}"
                    )
                yield block
                expected = block.end
                if expected >= stop:
                    return
        reached = start if expected is None else expected
        raise ChecksumFormatError(
            record_offset(self.count), f"the checksum records end at byte {reached}, before byte {stop}"
        )


def checksum_file_length(handle, size: int, end: int) -> int | None:
    """How long a checksum file (`handle`, `size` bytes) should be to describe the
    resource bytes [0, end) and nothing past them: its records of later blocks, and a
    torn or NUL tail, cut off. None when that cannot be told safely (a damaged header,
    or a damaged record among those past `end`): the file is then left for fsck."""
    try:
        records = ChecksumRecords(handle, size)
    except ChecksumFormatError:
        return None
    keep = records.count
    while keep:
        block = records.record(keep - 1)
        if block is None:
            return None
        if block.end <= end:
            break
        keep -= 1
    return record_offset(keep)
