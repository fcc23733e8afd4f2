"""SplitJson: each element of the selected array becomes a split with NiFi's fragment
attributes (index from 0) and the original goes to `original`; non-JSON content, a
definite path that finds nothing and a result that is not an array go to `failure`;
null elements as NiFi's Null Value Representation says; bad paths are refused at load."""

from __future__ import annotations

import json

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from tests.unit.flow.test_processors import one_processor_flow, trigger_once
from tests.unit.flow.test_unreadable_content import CORRUPTED, NOW, PENALTY_MS, Bench

RELATIONSHIPS = ("original", "split", "failure")
DOCUMENT = json.dumps(
    {"items": [{"id": 1, "tags": ["a"]}, "text", 2.5, True, None, [1, 2]], "one": {"k": "v"}, "n": 7}
).encode()


def definition(properties: dict) -> dict:
    return one_processor_flow("SplitJson", properties, RELATIONSHIPS)


def split(path: str, content: bytes = DOCUMENT, attributes=None, **properties) -> dict:
    flow = parse_flow(definition({"json_path_expression": path, **properties}))
    return trigger_once(flow, [(attributes or {"filename": "doc.json"}, content)])


def test_each_element_becomes_a_split_in_order_with_fragment_attributes():
    out = split("$.items")
    assert set(out) == {"original", "split"}
    assert [content for _, content in out["split"]] == [
        b'{"id":1,"tags":["a"]}',
        b"text",
        b"2.5",
        b"true",
        b"",
        b"[1,2]",
    ]
    ((original_attributes, original_content),) = out["original"]
    assert original_content == DOCUMENT
    identifier = original_attributes["fragment.identifier"]
    assert original_attributes["fragment.count"] == "6"
    assert [attributes["fragment.index"] for attributes, _ in out["split"]] == ["0", "1", "2", "3", "4", "5"]
    for attributes, _ in out["split"]:
        assert attributes["fragment.identifier"] == identifier and attributes["fragment.count"] == "6"
        assert attributes["segment.original.filename"] == "doc.json" and attributes["filename"] == "doc.json"


def test_each_flowfile_gets_its_own_fragment_identifier():
    flow = parse_flow(definition({"json_path_expression": "$.items"}))
    out = trigger_once(flow, [({"filename": "a"}, DOCUMENT), ({"filename": "b"}, b'{"items": [10, 20]}')])
    identifiers = {attributes["filename"]: attributes["fragment.identifier"] for attributes, _ in out["original"]}
    assert len(set(identifiers.values())) == 2
    of_b = [(a["fragment.index"], content) for a, content in out["split"] if a["segment.original.filename"] == "b"]
    assert of_b == [("0", b"10"), ("1", b"20")]
    assert {a["fragment.identifier"] for a, _ in out["split"] if a["segment.original.filename"] == "b"} == {
        identifiers["b"]
    }


def test_null_is_the_empty_string_or_the_string_null():
    assert split("$.items")["split"][4][1] == b""
    assert split("$.items", null_value_representation="the string 'null'")["split"][4][1] == b"null"


def test_an_indefinite_path_splits_what_it_matched():
    out = split("$.items[*].id")
    assert [content for _, content in out["split"]] == [b"1"]
    out = split("$..tags[0]")
    assert [content for _, content in out["split"]] == [b"a"]


def test_an_empty_result_makes_no_split_and_passes_the_original():
    out = split("$.items[?(@ == 'absent')]")
    assert "split" not in out and "failure" not in out
    ((attributes, _),) = out["original"]
    assert attributes["fragment.count"] == "0"


@pytest.mark.parametrize(
    "path, content, reason",
    [
        ("$.missing", DOCUMENT, "nothing at $.missing"),
        ("$.one", DOCUMENT, "gives an object, not an array"),
        ("$.n", DOCUMENT, "gives a scalar, not an array"),
        ("$.items", b"{not json", "not valid JSON"),
        ("$.items", b"", "empty"),
        ("$.items", b"null", "JSON null"),
    ],
)
def test_what_cannot_be_split_goes_to_failure_unchanged(path, content, reason):
    out = split(path, content)
    assert set(out) == {"failure"}
    ((attributes, failed),) = out["failure"]
    assert failed == content and reason in attributes["jsonpath.error"]
    assert "fragment.identifier" not in attributes


def test_a_string_over_max_string_length_goes_to_failure():
    out = split("$", b'["short", "' + b"x" * 50 + b'"]', max_string_length="20 B")
    assert "max_string_length" in out["failure"][0][0]["jsonpath.error"]
    assert [content for _, content in split("$", b'["short", "long enough"]', max_string_length="20 B")["split"]] == [
        b"short",
        b"long enough",
    ]


@pytest.mark.parametrize("path", ["$.items[", "", "$.a[?(@.b size 2)]"])
def test_a_path_that_cannot_be_read_is_refused_at_load(path):
    with pytest.raises(FlowDefinitionError, match="json_path_expression"):
        parse_flow(definition({"json_path_expression": path}))


def test_unreadable_content_is_set_aside():
    bench = Bench("SplitJson", {"json_path_expression": "$"}, relationships=RELATIONSHIPS)
    _, damaged = bench.add(b"[1]", b"[2]")
    bench.damage(damaged, CORRUPTED)
    bench.run_once()
    assert [content for _, content, _ in bench.drain("split")] == [b"1"]
    ((attributes, _, penalty),) = bench.drain("failure")
    assert attributes["content.error"].startswith("ContentCorrupted: ") and penalty == NOW + PENALTY_MS
