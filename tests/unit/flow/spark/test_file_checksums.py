"""The node's side of "HDFS vouches for this file": the whole file's CRC-32C composed
from a checksum file's records, or None whenever they cannot vouch for exactly the
claim's bytes."""

from __future__ import annotations

import os
import zlib

from flow.spark.file_checksums import crc_of_records
from repositories.content.checksum_format import Block, pack_header, pack_record
from repositories.content.checksums import BlockChecksummer
from repositories.content.crc32c_math import crc32c


def checksum_file_of(data: bytes, block_size: int = 1000) -> bytes:
    checksummer = BlockChecksummer(0, block_size)
    checksummer.update(data)
    checksummer.finish()
    return pack_header(block_size) + bytes(checksummer.take())


def test_the_records_of_a_whole_file_compose_its_crc32c():
    data = os.urandom(4321)
    assert crc_of_records(checksum_file_of(data), len(data)) == crc32c(data)
    assert crc_of_records(checksum_file_of(b""), 0) == 0 == crc32c(b"")


def test_records_that_do_not_cover_exactly_the_claim_vouch_for_nothing():
    data = os.urandom(4321)
    records = checksum_file_of(data)
    assert crc_of_records(records, len(data) + 1) is None  # the file is longer than its records
    assert crc_of_records(records, len(data) - 1) is None  # or shorter: the last block ends past it
    gap = (
        pack_header(1000)
        + pack_record(Block(0, 1000, crc32c(data[:1000])))
        + pack_record(Block(2000, 1000, crc32c(data[2000:3000])))
    )
    assert crc_of_records(gap, 3000) is None
    damaged = bytearray(records)
    damaged[-3] ^= 1
    assert crc_of_records(bytes(damaged), len(data)) is None
    assert crc_of_records(b"not a checksum file", len(data)) is None


def test_a_checksum_file_of_format_1_vouches_for_nothing():
    """Its blocks carry zlib's CRC-32, which HDFS's CRC-32C cannot be set against."""
    data = os.urandom(2500)
    records = pack_header(1000, 1) + b"".join(
        pack_record(Block(at, len(data[at : at + 1000]), zlib.crc32(data[at : at + 1000])))
        for at in range(0, 2500, 1000)
    )
    assert crc_of_records(records, len(data)) is None
