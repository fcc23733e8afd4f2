import struct

import pytest

from repositories.claims import ContentClaim, ResourceClaim
from repositories.flowfile import Delete, FlowFileRecord, FlowFileSerDe, Put, SwapFile, SwapIn, SwapOut
from repositories.flowfile import format as fmt

from .helpers import make_record


def test_record_round_trip_current_version():
    serde = FlowFileSerDe()
    record = make_record(3)
    assert serde.decode_record(serde.encode_record(record), serde.version) == record


def test_record_without_claim_and_with_nul_characters_round_trips():
    serde = FlowFileSerDe()
    record = FlowFileRecord("id\0x", {"k\0": "v\0v", "": ""}, None, "q", 0, 1, 2, 3)
    assert serde.decode_record(serde.encode_record(record), serde.version) == record


def test_version_1_bytes_still_decode():
    old, new = FlowFileSerDe(version=1), FlowFileSerDe()
    record = make_record(5)
    decoded = new.decode_record(old.encode_record(record), 1)
    # v1 had no lineage start date nor penalty: they come back as entry date and 0.
    assert decoded == record._replace(lineage_start_date=record.entry_date, penalty_expiration=0)


@pytest.mark.parametrize(
    "update",
    [
        Put(make_record(1)),
        Delete("ff-1"),
        SwapOut(SwapFile("swap/0001", "q1", 2, 20), ("ff-1", "ff-2")),
        SwapIn("swap/0001"),
    ],
)
def test_update_round_trip(update):
    serde = FlowFileSerDe()
    assert serde.decode_update(serde.encode_update(update), serde.version) == update


def test_payload_markers_are_checked():
    payload = fmt.pack_payload([b"a", b"bc"])
    assert payload[5] == fmt.TRANSACTION_CONTINUE and payload[-1] == fmt.TRANSACTION_COMMIT
    assert [bytes(p) for p in fmt.split_payload(memoryview(payload), 2)] == [b"a", b"bc"]
    damaged = bytearray(payload)
    damaged[-1] = fmt.TRANSACTION_CONTINUE
    with pytest.raises(ValueError, match="marker"):
        fmt.split_payload(memoryview(bytes(damaged)), 2)


def test_frame_header_crc_rejects_a_changed_length():
    frame = bytearray(fmt.pack_frame(7, 1, 1, b"xyz", fmt.crc32(b"xyz"), 6))
    assert fmt.parse_frame_header(bytes(frame), 0)[0] == 7
    struct.pack_into("<I", frame, 21, 99)
    assert fmt.parse_frame_header(bytes(frame), 0) is None


def test_invalid_claim_in_bytes_is_refused():
    serde = FlowFileSerDe()
    good = serde.encode_record(FlowFileRecord("a", {}, ContentClaim(ResourceClaim("c", 1, "r"), 0, 1), "q", 1, 1, 1))
    forged = good.replace(b"c\0r", b"c\0/")
    with pytest.raises(ValueError):
        serde.decode_record(forged, serde.version)
