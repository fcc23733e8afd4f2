"""The checksum file's byte layout, and how a writer cuts a claim into blocks."""

from __future__ import annotations

import io
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repositories.content.checksum_format import (
    BLOCK_CRCS,
    CHECKSUM_FORMAT_VERSION,
    HEADER_SIZE,
    HOLD_GIL_BYTES,
    RECORD_SIZE,
    Block,
    ChecksumFormatError,
    block_crc32c,
    pack_header,
    pack_record,
    read_header,
    unpack_header,
    unpack_record,
)
from repositories.content.checksums import BlockChecksummer, ChecksumRecords, checksum_file_length
from repositories.content.crc32c_math import combine, compose, crc32c


def test_header_and_record_sizes_are_the_documented_ones():
    assert len(pack_header(65536)) == HEADER_SIZE == 18
    assert len(pack_record(Block(0, 1, 0))) == RECORD_SIZE == 20


def test_a_header_round_trips_and_every_damaged_byte_of_it_is_refused():
    header = pack_header(4096)
    assert unpack_header(header) == 4096
    for offset in range(len(header)):
        damaged = bytearray(header)
        damaged[offset] ^= 0x10
        with pytest.raises(ChecksumFormatError):
            unpack_header(bytes(damaged))
    for length in range(len(header)):
        with pytest.raises(ChecksumFormatError, match="cut short"):
            unpack_header(header[:length])


def test_this_release_writes_format_2_and_reads_1_and_2_each_with_its_own_block_crc():
    assert CHECKSUM_FORMAT_VERSION == 2 and read_header(pack_header(4096)).version == 2
    assert read_header(pack_header(4096, 1)) == (4096, 1)
    assert read_header(pack_header(4096, 1)).block_crc(b"123456789") == 0xCBF43926  # CRC-32 (IEEE)
    assert read_header(pack_header(4096, 2)).block_crc(b"123456789") == 0xE3069283  # CRC-32C
    with pytest.raises(ValueError):
        pack_header(4096, 3)
    for version in (0, 3):
        head = bytearray(pack_header(4096))
        head[8:10] = version.to_bytes(2, "little")
        head[14:18] = zlib.crc32(bytes(head[:14])).to_bytes(4, "little")
        with pytest.raises(ChecksumFormatError, match=f"format {version} is not known.*reads formats 1, 2"):
            unpack_header(bytes(head))


def test_the_block_crc_is_crc32c_on_either_side_of_the_size_it_keeps_the_gil_for():
    data = bytes(range(256)) * (HOLD_GIL_BYTES // 256 + 8)
    for length in (0, 1, 65536, HOLD_GIL_BYTES, HOLD_GIL_BYTES + 1, len(data)):
        assert block_crc32c(data[:length]) == crc32c(data[:length])
        assert block_crc32c(data[length:], block_crc32c(data[:length])) == crc32c(data)
    assert BLOCK_CRCS[CHECKSUM_FORMAT_VERSION] is block_crc32c


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=2000), cuts=st.lists(st.integers(0, 2000), max_size=8))
def test_the_crc32c_of_pieces_composes_into_the_crc32c_of_the_whole(data, cuts):
    bounds = sorted({0, len(data), *(cut for cut in cuts if cut <= len(data))})
    pieces = [(crc32c(data[a:b]), b - a) for a, b in zip(bounds, bounds[1:], strict=False)]
    assert compose(pieces) == crc32c(data)
    if len(bounds) > 2:
        middle = bounds[1]
        assert combine(crc32c(data[:middle]), crc32c(data[middle:]), len(data) - middle) == crc32c(data)


def test_a_record_round_trips_and_every_damaged_byte_of_it_makes_it_damaged():
    block = Block(123_456_789_012, 65536, 0xDEADBEEF)
    record = pack_record(block)
    assert unpack_record(record) == block
    for offset in range(len(record)):
        for bit in range(8):
            damaged = bytearray(record)
            damaged[offset] ^= 1 << bit
            assert unpack_record(bytes(damaged)) is None, (offset, bit)


def blocks_of(data: bytes, start: int, block_size: int, pieces: list[int]) -> list[Block]:
    """The blocks a writer records for `data` written in pieces of the given sizes."""
    checksummer = BlockChecksummer(start, block_size)
    position = 0
    for size in pieces:
        checksummer.update(data[position : position + size])
        position += size
    checksummer.update(data[position:])
    checksummer.finish()
    records = bytes(checksummer.take())
    return [unpack_record(records, offset) for offset in range(0, len(records), RECORD_SIZE)]


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=300),
    start=st.integers(0, 10**12),
    block_size=st.integers(1, 64),
    pieces=st.lists(st.integers(0, 100), max_size=10),
)
def test_blocks_depend_on_the_bytes_not_on_how_the_writer_split_them(data, start, block_size, pieces):
    blocks = blocks_of(data, start, block_size, pieces)
    # Cut from the claim's first byte in blocks of block_size, the last one shorter.
    expected = [
        Block(start + at, len(data[at : at + block_size]), crc32c(data[at : at + block_size]))
        for at in range(0, len(data), block_size)
    ]
    assert blocks == expected
    assert blocks_of(data, start, block_size, []) == expected


def checksum_file(blocks: list[Block], tail: bytes = b"") -> io.BytesIO:
    return io.BytesIO(pack_header(8) + b"".join(pack_record(block) for block in blocks) + tail)


CHAIN = [Block(0, 8, 1), Block(8, 8, 2), Block(16, 3, 3), Block(19, 8, 4), Block(27, 1, 5)]


def covering(handle, start, stop):
    return list(ChecksumRecords(handle, len(handle.getvalue())).covering(start, stop))


def test_the_blocks_covering_a_range_are_found_from_any_byte():
    assert covering(checksum_file(CHAIN), 0, 28) == CHAIN
    assert covering(checksum_file(CHAIN), 9, 10) == [CHAIN[1]]
    assert covering(checksum_file(CHAIN), 16, 20) == CHAIN[2:4]
    assert covering(checksum_file(CHAIN), 27, 28) == [CHAIN[4]]


def test_a_torn_last_record_and_a_nul_tail_are_the_end_of_the_records_not_damage():
    for tail in (b"\x00" * 7, b"\x00" * RECORD_SIZE * 3, pack_record(Block(28, 4, 6))[:11]):
        handle = checksum_file(CHAIN, tail)
        records = ChecksumRecords(handle, len(handle.getvalue()))
        assert records.count == len(CHAIN)
        assert records.last_end() == 28
        assert covering(handle, 0, 28) == CHAIN


def test_a_damaged_record_breaks_only_the_ranges_it_covers():
    data = bytearray(checksum_file(CHAIN).getvalue())
    data[HEADER_SIZE + RECORD_SIZE + 3] ^= 1  # record 1: bytes 8..16
    handle = io.BytesIO(bytes(data))
    assert covering(handle, 0, 8) == [CHAIN[0]]
    assert covering(handle, 16, 28) == CHAIN[2:]
    with pytest.raises(ChecksumFormatError, match="byte 9: record 1 is damaged"):
        covering(handle, 9, 12)
    with pytest.raises(ChecksumFormatError, match="record 1, for the bytes from 8, is damaged"):
        covering(handle, 0, 12)


def test_records_that_end_early_or_skip_bytes_break_the_chain():
    with pytest.raises(ChecksumFormatError, match="end at byte 28, before byte 30"):
        covering(checksum_file(CHAIN), 20, 30)
    with pytest.raises(ChecksumFormatError, match="jump from byte 16 to 19"):
        covering(checksum_file(CHAIN[:2] + CHAIN[3:]), 0, 28)


def test_recovery_keeps_the_records_of_the_bytes_it_keeps():
    handle = checksum_file(CHAIN, b"\x00" * 5)
    size = len(handle.getvalue())
    assert checksum_file_length(handle, size, 28) == HEADER_SIZE + 5 * RECORD_SIZE  # only the NUL tail goes
    assert checksum_file_length(handle, size, 19) == HEADER_SIZE + 3 * RECORD_SIZE
    assert checksum_file_length(handle, size, 0) == HEADER_SIZE
    damaged = io.BytesIO(pack_header(8)[:-1] + b"\x00")
    assert checksum_file_length(damaged, HEADER_SIZE, 0) is None  # left for fsck
