import pytest

from repositories.provenance import event_file_format as eff
from repositories.provenance import journal_format as jf


def test_names_parse_back():
    assert jf.parse_journal_name(jf.journal_name(123, 4)) == (123, 4)
    assert jf.parse_journal_name("x.journal") is None
    assert eff.parse_name(eff.event_file_name(9)) == (9, ".prov", False)
    assert eff.parse_name(eff.toc_name(9) + ".partial") == (9, ".toc", True)
    assert eff.parse_name("layout.json") is None
    # Zero-padded names sort like the ids they carry.
    assert sorted([eff.event_file_name(10), eff.event_file_name(9)])[0] == eff.event_file_name(9)


def test_headers_round_trip_and_detect_damage():
    header = jf.pack_header(55, 3)
    assert jf.unpack_header(header) == (55, 3)
    with pytest.raises(ValueError, match="checksum"):
        jf.unpack_header(header[:20] + bytes([header[20] ^ 1]) + header[21:])
    frame = jf.pack_frame_header(7, 2, b"payload")
    assert jf.unpack_frame_header(frame, 0)[:3] == (7, 2, 7)
    assert eff.unpack_file_header(eff.pack_file_header(8)) == 8
    block = eff.pack_block_header(1, 100, 5, 999, b"abc", -1, 2)
    h = eff.unpack_block_header(block)
    assert (h.index, h.first_id, h.count, h.compressed_length, h.min_time_ms, h.max_time_ms) == (1, 100, 5, 3, -1, 2)
    with pytest.raises(ValueError):
        eff.unpack_block_header(block[:10])


def test_toc_round_trip_and_checksum():
    blocks = [eff.BlockInfo(32, 1, 10, 500, 0, 9), eff.BlockInfo(588, 11, 5, 100, 10, 20)]
    data = eff.pack_toc(1, 744, blocks)
    assert eff.unpack_toc(data) == (1, 744, blocks)
    flipped = bytearray(data)
    flipped[40] ^= 0x10
    with pytest.raises(ValueError, match="checksum"):
        eff.unpack_toc(bytes(flipped))
    with pytest.raises(ValueError):
        eff.unpack_toc(data[:-3])


def test_skipped_ids_round_trip_and_version_1_tocs_still_read():
    block = eff.pack_block_header(0, 100, 5, 999, b"abc", 0, 1, skipped_ids=7)
    assert eff.unpack_block_header(block).skipped_ids == 7
    blocks = [eff.BlockInfo(32, 1, 10, 500, 0, 9, skipped_ids=3), eff.BlockInfo(588, 14, 5, 100, 10, 20)]
    assert eff.unpack_toc(eff.pack_toc(1, 744, blocks))[2] == blocks
    assert blocks[0].last_id == 13
    # A version 1 TOC: 40-byte entries, ids contiguous.
    import struct
    import zlib

    body = eff.TOC_HEADER.pack(eff.TOC_MAGIC, 1, 0, 1, 1, 744) + eff.TOC_ENTRY_V1.pack(32, 1, 10, 500, 0, 9)
    old = body + struct.pack("<I", zlib.crc32(body))
    assert eff.unpack_toc(old) == (1, 744, [eff.BlockInfo(32, 1, 10, 500, 0, 9)])
