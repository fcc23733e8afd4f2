"""MergeContent's merge_format flowfile_stream_v3 (NiFi's "FlowFile Stream, v3"): each
member's attributes and content packaged, read back by the format's reader; framing
refused with it; a member whose content cannot be read left out, as in
binary_concatenation. (Into ListenHTTP: test_invoke_http.py.)"""

from __future__ import annotations

import io

import pytest

from flow.errors import FlowDefinitionError
from flow.flowfile_v3 import MIME_TYPE, read_stream
from flow.loading import parse_flow
from tests.unit.flow.test_processors import run
from tests.unit.flow.test_unreadable_content import CORRUPTED, Bench, assert_set_aside

V3 = {"merge_format": "flowfile_stream_v3"}


def test_each_member_is_packaged_with_its_attributes_and_uuid():
    inputs = [({"filename": f"m{i}", "g": "same", "ü": "日本" * i}, bytes(range(i * 50 % 256))) for i in range(5)]
    out = run("MergeContent", {"min_entries": 5, **V3}, inputs)
    ((attributes, stream),) = out["merged"]
    assert attributes["mime.type"] == MIME_TYPE and attributes["merge.count"] == "5" and attributes["g"] == "same"
    packages = list(read_stream(io.BytesIO(stream)))
    assert [p.content for p in packages] == [content for _, content in inputs]
    for (sent, _), package in zip(inputs, packages, strict=True):
        assert {k: package.attributes[k] for k in sent} == sent
    assert len({p.attributes["uuid"] for p in packages}) == 5, "each member's own uuid, as NiFi packages it"
    assert list(packages[0].attributes) == sorted(packages[0].attributes), "the same FlowFile, the same bytes"


def test_one_member_names_the_package_after_itself():
    out = run("MergeContent", V3, [({"filename": "orders.csv"}, b"a,b")])
    assert out["merged"][0][0]["filename"] == "orders.csv.pkg"


@pytest.mark.parametrize("framing", ["header", "delimiter", "footer"])
def test_header_delimiter_and_footer_are_refused_with_it(framing):
    document = {
        "processors": [
            {
                "id": "m",
                "type": "MergeContent",
                "properties": {framing: ",", **V3},
                "auto_terminate": ["merged", "original", "failure"],
            }
        ]
    }
    with pytest.raises(FlowDefinitionError, match=framing):
        parse_flow(document)
    document["processors"][0]["properties"] = {framing: ","}
    parse_flow(document)  # binary_concatenation, the default, takes them


@pytest.mark.parametrize("size", [10, 5 << 20], ids=["read together", "streamed"])
def test_a_member_it_cannot_read_goes_to_failure_and_the_rest_is_packaged(size):
    bench = Bench("MergeContent", {"min_entries": 4, **V3}, ("merged", "original", "failure"))
    flowfiles = bench.add(*(bytes([ord("a") + index]) * size for index in range(4)))
    bench.damage(flowfiles[2], CORRUPTED, good=None if size == 10 else size // 2)
    bench.run_once()
    ((attributes, merged, _),) = bench.drain("merged")
    packages = list(read_stream(io.BytesIO(merged)))
    assert [p.attributes["i"] for p in packages] == ["0", "1", "3"] and attributes["merge.count"] == "3"
    assert [p.content for p in packages] == [bytes([ord(c)]) * size for c in "abd"]
    assert_set_aside(bench.drain("failure"), "ContentCorrupted")
