"""NiFi's FlowFile Stream v3 (`flow.flowfile_v3`): the bytes as NiFi's packager writes
them, round trips of attributes and content, and every damage refused where it is."""

from __future__ import annotations

import io
import random
import struct
from pathlib import Path

import pytest

from flow.flowfile_v3 import MAGIC, FlowFileStreamError, encode, header, read_stream


def read_all(data: bytes, **limits) -> list:
    return list(read_stream(io.BytesIO(data), **limits))


def test_one_flowfile_byte_by_byte():
    data = encode([({"filename": "a.txt", "é": "ü"}, b"hello")])
    assert data == (
        b"NiFiFF3"
        + b"\x00\x02"  # two attributes
        + b"\x00\x08filename"
        + b"\x00\x05a.txt"
        + b"\x00\x02\xc3\xa9"
        + b"\x00\x02\xc3\xbc"
        + b"\x00\x00\x00\x00\x00\x00\x00\x05"  # the content's length, 8 bytes
        + b"hello"
    )


def test_a_value_of_65535_bytes_or_more_takes_the_long_length():
    short, long = "x" * 65_534, "y" * 65_535
    assert header({"a": short}, 0)[7 + 2 + 3 : 7 + 2 + 3 + 2] == b"\xff\xfe"
    encoded = header({"a": long}, 0)
    assert encoded[7 + 2 + 3 : 7 + 2 + 3 + 6] == b"\xff\xff" + struct.pack(">i", 65_535)
    assert read_all(encode([({"a": long}, b"")]))[0].attributes == {"a": long}


def test_many_flowfiles_round_trip_with_unicode_empty_and_binary():
    rng = random.Random(7)
    flowfiles = [({"k": ""}, b""), ({"k": ""}, b"\x00\xff" * 3)]
    flowfiles.append(({"日本": "語 🙂", "path": "/a/b"}, rng.randbytes(100_000)))
    for _ in range(200):
        attributes = {f"a{i}": str(i) for i in range(rng.randrange(1, 5))}
        flowfiles.append((attributes, rng.randbytes(rng.randrange(50))))
    back = read_all(encode(flowfiles))
    assert [(f.attributes, f.content) for f in back] == flowfiles


def test_an_empty_stream_holds_no_flowfile():
    assert read_all(b"") == []


def test_a_stream_cut_anywhere_but_between_flowfiles_is_refused_at_that_byte():
    data = encode([({"filename": "a"}, b"abc"), ({"x": "y"}, b"defg")])
    first = len(encode([({"filename": "a"}, b"abc")]))
    for cut in range(1, len(data)):
        if cut == first:
            assert len(read_all(data[:cut])) == 1  # a whole FlowFile, then the end
            continue
        with pytest.raises(FlowFileStreamError, match="cut short") as caught:
            read_all(data[:cut])
        assert caught.value.offset <= cut


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"NiFiFF2" + b"\x00\x00" + b"\x00" * 8, "does not start with"),
        (b"hello world, not a flowfile", "does not start with"),
        (MAGIC + b"\x00\x01" + b"\x00\x02\xff\xfe" + b"\x00\x00" + b"\x00" * 8, "not UTF-8"),
        (MAGIC + b"\x00\x00" + struct.pack(">q", -1), "allowed 0 to"),
        (MAGIC + b"\xff\xff" + struct.pack(">i", -5), "is negative"),
    ],
)
def test_damage_is_refused_with_where_and_why(data, message):
    with pytest.raises(FlowFileStreamError, match=message):
        read_all(data)


def test_limits_refuse_a_content_or_an_attribute_too_large_before_reading_it():
    data = encode([({"a": "x" * 100}, b"y" * 100)])
    with pytest.raises(FlowFileStreamError, match="more than the 10 allowed"):
        read_all(data, max_attribute_bytes=10)
    with pytest.raises(FlowFileStreamError, match="allowed 0 to 50"):
        read_all(data, max_content=50)


SAMPLE = Path(__file__).parent / "samples" / "nifi-2.3.0.flowfilev3"


def test_a_stream_written_by_nifis_own_packager_reads_back_and_writes_again_byte_for_byte():
    data = SAMPLE.read_bytes()
    flowfiles = read_all(data)
    assert [f.attributes for f in flowfiles] == [
        {"filename": "orders.csv", "path": "./", "mime.type": "text/csv", "unicode": "été 日本"},
        {"long": "x" * 70_000},
        {"uuid": "00000000-0000-4000-8000-000000000003"},
    ]
    assert [f.content for f in flowfiles] == [b"order_id,amount\n1,250.00\n", b"", bytes(range(256))]
    assert encode([(f.attributes, f.content) for f in flowfiles]) == data


def test_a_flowfile_without_attributes_is_never_written():
    """NiFi's reader refuses it ("flow files cannot have zero attributes")."""
    with pytest.raises(ValueError, match="at least one attribute"):
        encode([({}, b"x")])
    assert read_all(MAGIC + b"\x00\x00" + struct.pack(">q", 1) + b"x")[0].attributes == {}  # read, though
