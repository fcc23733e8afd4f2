"""CryptographicHashContent and EncodeContent: known digests for every algorithm hashlib
has (NiFi's attribute names), fail_when_empty, an algorithm hashlib lacks refused at
load; base64/base32/hex both ways with NiFi's line layout and lenient decoding (the
expected texts are what NiFi 2.3.0's commons-codec streams write and read), decode
failures, contents larger than a chunk, unreadable content set aside."""

from __future__ import annotations

import base64
import hashlib
import random

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.processors.content_codecs import CHUNK, hash_available
from tests.unit.flow.test_processors import one_processor_flow, trigger_once
from tests.unit.flow.test_unreadable_content import CORRUPTED, NOW, PENALTY_MS, Bench

RELATIONSHIPS = ("success", "failure")
BYTES_0_TO_29 = bytes(range(30))


def definition(processor_type: str, properties: dict) -> dict:
    return one_processor_flow(processor_type, properties, RELATIONSHIPS)


def run(processor_type: str, content: bytes, attributes=None, **properties) -> dict:
    flow = parse_flow(definition(processor_type, properties))
    return trigger_once(flow, [(attributes or {}, content)])


def only(out: dict, relationship: str) -> tuple[dict, bytes]:
    assert set(out) == {relationship}, out
    ((attributes, content),) = out[relationship]
    return attributes, content


# -- CryptographicHashContent ---------------------------------------------------------

KNOWN_DIGESTS_OF_ABC = {
    "MD5": "900150983cd24fb0d6963f7d28e17f72",
    "SHA-1": "a9993e364706816aba3e25717850c26c9cd0d89d",
    "SHA-224": "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
    "SHA-256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    "SHA-384": "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
    "SHA-512": "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd"
    "454d4423643ce80e2a9ac94fa54ca49f",
    "SHA-512/224": "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa",
    "SHA-512/256": "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23",
    "SHA3-224": "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf",
    "SHA3-256": "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
    "SHA3-384": "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b298d88cea927ac7f539f1edf228376d25",
    "SHA3-512": "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec57647e39340"
    "57340b4cf408d5a56592f8274eec53f0",
    "BLAKE2-160": "384264f676f39536840523f284921cdc68b6846b",
    "BLAKE2-256": "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319",
    "BLAKE2-384": "6f56a82c8e7ef526dfe182eb5212f7db9df1317e57815dbda46083fc30f54ee6c66ba83be64b302d7cba6ce15bb556f4",
    "BLAKE2-512": "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc95"
    "18d38aa8dbf1925ab92386edd4009923",
}


@pytest.mark.parametrize("algorithm", sorted(KNOWN_DIGESTS_OF_ABC))
def test_known_digests_in_nifis_attribute(algorithm):
    # Every algorithm here is in the hashlib of the Python the project runs on (3.11,
    # with its OpenSSL): one that is missing fails, naming it, never skips.
    assert hash_available(algorithm), f"this Python's hashlib has no {algorithm}"
    attributes, content = only(run("CryptographicHashContent", b"abc", hash_algorithm=algorithm), "success")
    assert attributes[f"content_{algorithm}"] == KNOWN_DIGESTS_OF_ABC[algorithm] and content == b"abc"


def test_the_default_is_sha256_and_empty_content_is_hashed():
    attributes, _ = only(run("CryptographicHashContent", b""), "success")
    assert attributes["content_SHA-256"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_fail_when_empty():
    attributes, _ = only(run("CryptographicHashContent", b"", fail_when_empty=True), "failure")
    assert "content_SHA-256" not in attributes and attributes["hash.error"] == "the content is empty"
    attributes, _ = only(run("CryptographicHashContent", b"x", fail_when_empty=True), "success")
    assert attributes["content_SHA-256"] == hashlib.sha256(b"x").hexdigest()


def test_content_larger_than_a_chunk_is_hashed_whole():
    data = random.Random(3).randbytes(CHUNK * 2 + 17)
    attributes, _ = only(run("CryptographicHashContent", data, hash_algorithm="MD5"), "success")
    assert attributes["content_MD5"] == hashlib.md5(data).hexdigest()


def test_an_algorithm_hashlib_lacks_is_refused_at_load():
    with pytest.raises(FlowDefinitionError, match="hashlib has no MD2"):
        parse_flow(definition("CryptographicHashContent", {"hash_algorithm": "MD2"}))
    with pytest.raises(FlowDefinitionError, match="hash_algorithm"):
        parse_flow(definition("CryptographicHashContent", {"hash_algorithm": "SHA256"}))


# -- EncodeContent --------------------------------------------------------------------


@pytest.mark.parametrize(
    "encoding, data, expected",
    [
        ("base64", b"Hello", b"SGVsbG8="),
        ("base32", b"Hello", b"JBSWY3DP"),
        ("hex", b"\x00\xab\xff", b"00ABFF"),
        ("base64", BYTES_0_TO_29, b"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd"),
        ("base64", b"", b""),
    ],
)
def test_encode_on_one_line(encoding, data, expected):
    _, content = only(run("EncodeContent", data, encoding=encoding), "success")
    assert content == expected


@pytest.mark.parametrize(
    "encoding, size, length, expected",
    [
        ("base64", 30, "8", b"AAECAwQF\nBgcICQoL\nDA0ODxAR\nEhMUFRYX\nGBkaGxwd\n"),
        ("base64", 12, "8", b"AAECAwQF\nBgcICQoL\n"),
        ("base64", 7, "10", b"AAECAwQF\nBg==\n"),
        ("base64", 7, "3", b"AAECAwQFBg=="),
        ("base64", 0, "8", b""),
        ("base32", 10, "8", b"AAAQEAYE\nAUDAOCAJ\n"),
        ("base32", 7, "12", b"AAAQEAYE\nAUDA====\n"),
        ("base32", 7, "3", b"AAAQEAYEAUDA===="),
    ],
)
def test_encode_on_multiple_lines_as_commons_codec(encoding, size, length, expected):
    properties = {"encoding": encoding, "line_output_mode": "MULTIPLE_LINES", "encoded_line_length": length}
    _, content = only(run("EncodeContent", bytes(range(size)), **properties), "success")
    assert content == expected


def test_the_line_length_is_an_expression_of_the_flowfile():
    properties = {"line_output_mode": "MULTIPLE_LINES", "encoded_line_length": "${width}"}
    _, content = only(run("EncodeContent", bytes(range(12)), {"width": "8"}, **properties), "success")
    assert content == b"AAECAwQF\nBgcICQoL\n"
    attributes, _ = only(run("EncodeContent", b"x", {"width": "wide"}, **properties), "failure")
    assert "not a positive integer" in attributes["encode.error"]


@pytest.mark.parametrize(
    "encoding, text, expected",
    [
        ("base64", b"SGVsbG8=", b"Hello"),
        ("base64", b"SGVsbG8", b"Hello"),
        ("base64", b"SGVs bG8=\n", b"Hello"),
        ("base64", b"SGVsbG8=Zm9v", b"Hello"),
        ("base64", b"SGVsbA-_", b"Hell\x0f\xbf"),
        ("base64", b"S", b""),
        ("base32", b"JBSWY3DP", b"Hello"),
        ("base32", b"jbswy3dp", b"Hello"),
        ("base32", b"JBSWY3D", b"Hell"),
        ("base32", b"JBSW Y3DP======\n", b"Hello"),
        ("hex", b"00abFF", b"\x00\xab\xff"),
    ],
)
def test_decode_as_leniently_as_nifi(encoding, text, expected):
    _, content = only(run("EncodeContent", text, mode="Decode", encoding=encoding), "success")
    assert content == expected


@pytest.mark.parametrize(
    "encoding, text, reason",
    [
        ("base64", b"SGVs*bG8=", "byte 0x2a at offset 4"),
        ("base32", b"JBSWY3D1", "outside its alphabet"),
        ("hex", b"abc", "odd number"),
        ("hex", b"ab cd", "outside its alphabet"),
        ("hex", b"zz", "outside its alphabet"),
    ],
)
def test_what_cannot_be_decoded_goes_to_failure_unchanged(encoding, text, reason):
    attributes, content = only(run("EncodeContent", text, mode="Decode", encoding=encoding), "failure")
    assert content == text and reason in attributes["encode.error"]


@pytest.mark.parametrize("encoding", ["base64", "base32", "hex"])
def test_round_trip_of_content_larger_than_a_chunk(encoding):
    data = random.Random(5).randbytes(CHUNK * 2 + 7)
    properties = {"encoding": encoding, "line_output_mode": "MULTIPLE_LINES", "encoded_line_length": "76"}
    _, encoded = only(run("EncodeContent", data, **properties), "success")
    if encoding == "base64":
        assert encoded == b"".join(line + b"\n" for line in _lines(base64.b64encode(data), 76))
    _, decoded = only(run("EncodeContent", encoded, mode="Decode", encoding=encoding), "success")
    assert decoded == data


def _lines(text: bytes, width: int) -> list[bytes]:
    return [text[start : start + width] for start in range(0, len(text), width)]


def test_a_constant_bad_line_length_is_refused_at_load():
    with pytest.raises(FlowDefinitionError, match="encoded_line_length"):
        parse_flow(definition("EncodeContent", {"encoded_line_length": "0"}))


@pytest.mark.parametrize("processor_type", ["CryptographicHashContent", "EncodeContent"])
def test_unreadable_content_is_set_aside(processor_type):
    bench = Bench(processor_type, {})
    _, damaged = bench.add(
        b"fine",
        b"damaged",
    )
    bench.damage(damaged, CORRUPTED, good=3)
    bench.run_once()
    ((attributes, content, _),) = bench.drain("success")
    assert content == b"ZmluZQ==" or attributes["content_SHA-256"] == hashlib.sha256(b"fine").hexdigest()
    ((attributes, _, penalty),) = bench.drain("failure")
    assert attributes["content.error"].startswith("ContentCorrupted: ") and penalty == NOW + PENALTY_MS
