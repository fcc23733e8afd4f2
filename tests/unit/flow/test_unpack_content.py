"""UnpackContent reads NiFi's FlowFile Stream v3: a stream NiFi 2.3.0 wrote, and
ours; a damaged or empty one sends the original whole to failure, naming the byte, and
nothing of it on."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.flowfile_v3 import MIME_TYPE, encode
from flow.loading import parse_flow
from flow.processors.unpack import FLOWFILE_STREAM_V3, USE_MIME_TYPE, Refused, chosen_format, original_filename
from tests.unit.flow.test_processors import run
from tests.unit.flow.test_unreadable_content import CORRUPTED, Bench, assert_set_aside

SAMPLE = Path(__file__).parent / "samples" / "nifi-2.3.0.flowfilev3"
STREAM = encode(
    [
        ({"filename": "a.bin", "uuid": "sender-a", "custom": "日本"}, b"\x00\xff" * 10),
        ({"filename": "b.txt", "mime.type": "text/plain"}, b""),
    ]
)


def unpack(content: bytes, properties=None, **attributes):
    return run("UnpackContent", properties or {}, [({"filename": "in.pkg", **attributes}, content)])


def test_the_stream_nifi_wrote_unpacks_with_every_attribute_and_byte():
    out = unpack(SAMPLE.read_bytes(), {"packaging_format": FLOWFILE_STREAM_V3})
    (first, csv), (second, empty), (third, binary) = out["success"]
    assert (first["filename"], first["mime.type"], first["unicode"]) == ("orders.csv", "text/csv", "été 日本")
    assert len(csv) == 25 and empty == b"" and binary == bytes(range(256))
    assert second["long"] == "x" * 70_000 and second["mime.type"] == "application/octet-stream"
    assert third.get("uuid") is None, "the sender's uuid is not taken"
    ((original, data),) = out["original"]
    assert data == SAMPLE.read_bytes() and original["fragment.count"] == "3"
    assert [a["fragment.index"] for a, _ in out["success"]] == ["1", "2", "3"]
    assert {a["fragment.identifier"] for a, _ in out["success"]} == {original["fragment.identifier"]}
    assert {a["segment.original.filename"] for a, _ in out["success"]} == {"in"}


def test_use_mime_type_unpacks_flowfile_v3_and_refuses_what_it_cannot_unpack():
    out = unpack(STREAM, **{"mime.type": f"{MIME_TYPE}; charset=binary"})
    assert [(a["filename"], a["custom"] if "custom" in a else None, d) for a, d in out["success"]] == [
        ("a.bin", "日本", b"\x00\xff" * 10),
        ("b.txt", None, b""),
    ]
    assert out["success"][1][0]["mime.type"] == "text/plain"
    for attributes in ({}, {"mime.type": "application/zip"}):
        out = unpack(STREAM, **attributes)
        ((failed, data),) = out["failure"]
        assert data == STREAM and "success" not in out and "original" not in out
        assert "mime.type" in failed["unpack.error"] and "unpack.error.offset" not in failed


@pytest.mark.parametrize("cut", [1, 7, 9, 30, len(STREAM) - 1])
def test_a_damaged_stream_sends_the_original_whole_to_failure_naming_the_byte(cut):
    damaged = STREAM[:cut]
    out = unpack(damaged, {"packaging_format": FLOWFILE_STREAM_V3})
    ((failed, data),) = out["failure"]
    assert data == damaged and "success" not in out and "original" not in out, "nothing of it goes on"
    assert f"at byte {failed['unpack.error.offset']}" in failed["unpack.error"]
    assert 0 <= int(failed["unpack.error.offset"]) <= cut


def test_a_wrong_magic_after_a_good_package_and_an_empty_stream_are_refused():
    first_length = len(encode([({"filename": "a.bin", "uuid": "sender-a", "custom": "日本"}, b"\x00\xff" * 10)]))
    bad = bytearray(STREAM)
    bad[first_length] = ord("X")
    out = unpack(bytes(bad), {"packaging_format": FLOWFILE_STREAM_V3})
    ((failed, _),) = out["failure"]
    assert failed["unpack.error.offset"] == str(first_length) and "success" not in out
    out = unpack(b"", {"packaging_format": FLOWFILE_STREAM_V3})
    ((failed, _),) = out["failure"]
    assert "empty" in failed["unpack.error"] and failed["unpack.error.offset"] == "0"


def test_a_package_over_max_package_size_is_refused_before_it_is_read():
    big = encode([({"filename": "big"}, b"x" * 2000)])
    out = unpack(big, {"packaging_format": FLOWFILE_STREAM_V3, "max_package_size": "1 KB"})
    ((failed, _),) = out["failure"]
    assert "2000 bytes" in failed["unpack.error"]


def test_packages_that_carried_fragment_attributes_keep_them():
    stream = encode([({"fragment.identifier": "f", "fragment.index": "7", "fragment.count": "9"}, b"piece")])
    out = unpack(stream, {"packaging_format": FLOWFILE_STREAM_V3}, **{"fragment.identifier": "outer"})
    ((child, _),) = out["success"]
    assert (child["fragment.identifier"], child["fragment.index"], child["fragment.count"]) == ("f", "7", "9")
    out = unpack(
        encode([({"filename": "x"}, b"")]), {"packaging_format": FLOWFILE_STREAM_V3}, **{"fragment.identifier": "outer"}
    )
    ((child, _),) = out["success"]
    assert child["fragment.identifier"] != "outer" and child["fragment.index"] == "1", "inherited ones are replaced"


def test_content_that_cannot_be_read_goes_to_failure_with_no_child():
    bench = Bench("UnpackContent", {"packaging_format": FLOWFILE_STREAM_V3}, ("success", "original", "failure"))
    (flowfile,) = bench.add(STREAM)
    bench.damage(flowfile, CORRUPTED, good=12)
    bench.run_once()
    assert bench.drain("success") == [] and bench.drain("original") == []
    assert_set_aside(bench.drain("failure"), "ContentCorrupted")


def test_pure_decisions():
    assert chosen_format(USE_MIME_TYPE, "Application/FlowFile-v3 ;x=y") == FLOWFILE_STREAM_V3
    assert chosen_format(FLOWFILE_STREAM_V3, None) == FLOWFILE_STREAM_V3
    with pytest.raises(Refused, match="no mime.type"):
        chosen_format(USE_MIME_TYPE, None)
    assert [original_filename(n) for n in ("a.pkg", "b.tar", "c.zip", "d.csv")] == ["a", "b", "c", "d.csv"]
    definition = {"processors": [{"id": "u", "type": "UnpackContent", "properties": {"packaging_format": "tar"}}]}
    with pytest.raises(Exception, match="packaging_format"):
        parse_flow(definition)
