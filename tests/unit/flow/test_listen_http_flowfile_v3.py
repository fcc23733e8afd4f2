"""ListenHTTP takes NiFi's FlowFile Stream v3 (`application/flowfile-v3`, as NiFi's
InvokeHTTP and MergeContent send it): a FlowFile per package with the attributes it
carried, all of the request kept or none, a damaged stream refused whole with 400."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from flow.flowfile_v3 import MIME_TYPE, encode
from tests.unit.flow.listen_http_support import Listener, exchange, post_bytes, status_of, wait_until

SAMPLE = Path(__file__).parent / "samples" / "nifi-2.3.0.flowfilev3"


def post_stream(listener: Listener, body: bytes, **headers) -> int:
    return status_of(exchange(listener.port, post_bytes(body, {"Content-Type": MIME_TYPE, **headers})))


def test_each_package_becomes_a_flowfile_with_its_attributes_and_bytes():
    rng = random.Random(3)
    packages = []
    for i in range(50):
        packages.append(({"filename": f"f{i}.bin", "custom": "é" * i, "uuid": "sender's"}, rng.randbytes(i * 10)))
    with Listener() as listener:
        assert post_stream(listener, encode(packages)) == 200
        wait_until(lambda: len(listener.outputs) == 50, what="the 50 FlowFiles")
    for (attributes, data), (sent, content) in zip(listener.outputs, packages, strict=True):
        assert data == content and attributes["filename"] == sent["filename"] and attributes["custom"] == sent["custom"]
        assert attributes.get("uuid") != "sender's" and attributes["http.remote.host"] == "127.0.0.1"
        assert attributes.get("mime.type") != MIME_TYPE


def test_a_stream_nifi_wrote_is_taken_with_every_attribute():
    with Listener() as listener:
        assert post_stream(listener, SAMPLE.read_bytes(), **{"Content-Type": f"{MIME_TYPE}; charset=binary"}) == 200
        wait_until(lambda: len(listener.outputs) == 3, what="NiFi's three FlowFiles")
    first = listener.outputs[0][0]
    assert (first["filename"], first["mime.type"], first["unicode"]) == ("orders.csv", "text/csv", "été 日本")
    assert listener.outputs[1][0]["long"] == "x" * 70_000 and listener.outputs[2][1] == bytes(range(256))


@pytest.mark.parametrize("cut", [1, 7, 20, -1])
def test_a_damaged_or_empty_stream_is_refused_400_and_nothing_of_it_is_kept(cut):
    body = encode([({"filename": "a"}, b"first"), ({"filename": "b"}, b"second")])
    with Listener() as listener:
        assert post_stream(listener, body[:cut]) == 400
        assert post_stream(listener, b"") == 400
        assert post_stream(listener, body) == 200  # the listener goes on
        wait_until(lambda: len(listener.outputs) == 2, what="the whole stream")
    assert [data for _, data in listener.outputs] == [b"first", b"second"]


def test_a_plain_body_is_one_flowfile_as_before():
    body = encode([({"filename": "a"}, b"x")])
    with Listener() as listener:
        assert status_of(exchange(listener.port, post_bytes(body, {"Content-Type": "application/octet-stream"}))) == 200
        wait_until(lambda: len(listener.outputs) == 1, what="the FlowFile")
    assert listener.outputs[0][1] == body
