"""EvaluateJsonPath: each choice of each property as NiFi's behaves, the failures (content
that is not JSON, too large, strings too long, a non-scalar result where a scalar is
asked), and what is refused when the flow is loaded."""

from __future__ import annotations

import json
import logging

import pytest

from flow.errors import FlowDefinitionError
from flow.json_path import compile_path
from flow.processors.json_path import Settings, evaluate
from tests.unit.flow.test_json_path import BOOKS, STORE
from tests.unit.flow.test_processors import run
from tests.unit.flow.test_unreadable_content import CORRUPTED, NOW, PENALTY_MS, Bench

DOCUMENT = json.dumps({**STORE, "nothing": None, "open": True}).encode()


def evaluate_json_path(properties: dict, content: bytes = DOCUMENT, attributes=None) -> dict:
    """{relationship: [(attributes, content)]} of one FlowFile through EvaluateJsonPath
    (to attributes unless `properties` say otherwise)."""
    return run("EvaluateJsonPath", {"destination": "flowfile-attribute", **properties}, [(attributes or {}, content)])


def test_the_destination_is_the_content_by_default_as_in_nifi():
    out = run("EvaluateJsonPath", {"x": "$.store.bicycle.color"}, [({}, DOCUMENT)])
    [(_, content)] = out["matched"]
    assert content == b"red"


def only(out: dict, relationship: str) -> tuple[dict, bytes]:
    assert set(out) == {relationship}, out
    ((attributes, content),) = out[relationship]
    return attributes, content


# -- destination flowfile-attribute ------------------------------------------------------


def test_scalars_become_attributes():
    attributes, content = only(
        evaluate_json_path(
            {
                "author": "$.store.book[0].author",
                "price": "$.store.book[0].price",
                "expensive": "$.expensive",
                "open": "$.open",
                "nothing": "$.nothing",
            }
        ),
        "matched",
    )
    assert content == DOCUMENT
    assert attributes["author"] == "Nigel Rees" and attributes["price"] == "8.95"
    assert attributes["expensive"] == "10" and attributes["open"] == "true"
    assert attributes["nothing"] == ""  # null as the empty string, by default


def test_null_can_be_the_string_null():
    attributes, _ = only(
        evaluate_json_path({"nothing": "$.nothing", "null_value_representation": "the string 'null'"}), "matched"
    )
    assert attributes["nothing"] == "null"


@pytest.mark.parametrize("return_type", ["auto-detect", "scalar"])
@pytest.mark.parametrize("path", ["$.store.book[0]", "$..author", "$.store.book[?(@.price > 100)]"])
def test_a_non_scalar_result_is_a_failure_where_a_scalar_is_asked(return_type, path):
    out = evaluate_json_path({"a": "$.expensive", "b": path, "return_type": return_type}, attributes={"keep": "me"})
    attributes, content = only(out, "failure")
    assert content == DOCUMENT and attributes["keep"] == "me"
    assert "a" not in attributes  # nothing is set from a FlowFile that fails
    assert "not a scalar" in attributes["jsonpath.error"] and path in attributes["jsonpath.error"]


def test_return_type_json_writes_objects_and_arrays_as_json_text():
    attributes, _ = only(
        evaluate_json_path(
            {
                "book": "$.store.book[0]",
                "authors": "$..author",
                "none": "$.store.book[?(@.price > 100)]",
                "title": "$.store.book[0].title",
                "return_type": "json",
            }
        ),
        "matched",
    )
    assert json.loads(attributes["book"]) == BOOKS[0]
    assert attributes["book"].startswith('{"category":"reference","author":"Nigel Rees"')  # compact, in order
    assert json.loads(attributes["authors"]) == [book["author"] for book in BOOKS]
    assert attributes["none"] == "[]"
    assert attributes["title"] == "Sayings of the Century"  # a scalar stays text


@pytest.mark.parametrize("behavior", ["ignore", "warn"])
def test_a_path_not_found_sets_the_empty_string_and_still_matches(behavior, caplog):
    with caplog.at_level(logging.WARNING):
        attributes, _ = only(
            evaluate_json_path(
                {"gone": "$.store.missing", "there": "$.expensive", "path_not_found_behavior": behavior}
            ),
            "matched",
        )
    assert attributes["gone"] == "" and attributes["there"] == "10"
    assert ("nothing at the path of gone" in caplog.text) == (behavior == "warn")


def test_a_path_not_found_is_left_out_with_skip():
    attributes, _ = only(
        evaluate_json_path({"gone": "$.store.missing", "there": "$.expensive", "path_not_found_behavior": "skip"}),
        "matched",
    )
    assert "gone" not in attributes and attributes["there"] == "10"


# -- destination flowfile-content ---------------------------------------------------------


def test_the_result_replaces_the_content():
    attributes, content = only(
        evaluate_json_path({"x": "$.store.book[?(@.price < 10)].title", "destination": "flowfile-content"}),
        "matched",
    )
    assert content == b'["Sayings of the Century","Moby Dick"]' and "x" not in attributes
    _, content = only(evaluate_json_path({"x": "$.store.bicycle", "destination": "flowfile-content"}), "matched")
    assert content == b'{"color":"red","price":19.95}'
    _, content = only(evaluate_json_path({"x": "$.store.bicycle.color", "destination": "flowfile-content"}), "matched")
    assert content == b"red"
    _, content = only(
        evaluate_json_path(
            {"x": "$.nothing", "destination": "flowfile-content", "null_value_representation": "the string 'null'"}
        ),
        "matched",
    )
    assert content == b"null"


def test_a_path_not_found_sends_the_content_unchanged_to_unmatched():
    attributes, content = only(
        evaluate_json_path({"x": "$.store.missing", "destination": "flowfile-content"}), "unmatched"
    )
    assert content == DOCUMENT and "jsonpath.error" not in attributes


def test_scalar_return_type_with_the_content():
    out = evaluate_json_path({"x": "$.store.bicycle", "destination": "flowfile-content", "return_type": "scalar"})
    attributes, content = only(out, "failure")
    assert content == DOCUMENT and "not a scalar" in attributes["jsonpath.error"]


# -- content that cannot be evaluated -------------------------------------------------------


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b'{"a": 1', "not valid JSON"),
        (b'{"a": 1} trailing', "not valid JSON"),
        (b'{"a": NaN}', "not valid JSON"),
        (b"null", "JSON null"),
        (b'{"a": "\xff\xfe\xfa"}', "not"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_content_that_is_not_a_json_document_goes_to_failure(content, reason):
    attributes, kept = only(evaluate_json_path({"a": "$.a"}, content), "failure")
    assert kept == content and reason in attributes["jsonpath.error"]


def test_a_string_longer_than_max_string_length_is_refused():
    content = json.dumps({"long": "x" * 2000, "short": "y"}).encode()
    attributes, _ = only(evaluate_json_path({"s": "$.short", "max_string_length": "1 KB"}, content), "failure")
    assert "a string of 2,000 characters" in attributes["jsonpath.error"]
    attributes, _ = only(evaluate_json_path({"s": "$.short", "max_string_length": "2 KB"}, content), "matched")
    assert attributes["s"] == "y"


def test_an_attribute_longer_than_max_string_length_is_refused():
    content = json.dumps({"items": ["y" * 500] * 10}).encode()
    out = evaluate_json_path({"all": "$.items", "return_type": "json", "max_string_length": "1 KB"}, content)
    attributes, _ = only(out, "failure")
    assert "too long for max_string_length" in attributes["jsonpath.error"]


def test_content_over_max_content_size_goes_to_failure_unread():
    attributes, kept = only(
        evaluate_json_path({"a": "$.a", "max_content_size": "100 B"}, b"[" + b"1," * 100 + b"1]"), "failure"
    )
    assert "over max_content_size" in attributes["jsonpath.error"]
    only(evaluate_json_path({"a": "$[0]", "max_content_size": "1 KB"}, b"[" + b"1," * 100 + b"1]"), "matched")


def test_a_path_too_costly_for_the_content_goes_to_failure():
    content = b'{"a":' * 300 + b'{"b":1}' + b"}" * 300  # 2 kB, whose deep scans nest 300 deep
    attributes, _ = only(evaluate_json_path({"x": "$..[?(@..[?(@..b)])]", "return_type": "json"}, content), "failure")
    assert "steps" in attributes["jsonpath.error"] and "x ($..[?(@..[?(@..b)])])" in attributes["jsonpath.error"]


def test_failures_are_penalized_and_unreadable_content_says_so():
    properties = {"a": "$.a", "destination": "flowfile-attribute"}
    bench = Bench("EvaluateJsonPath", properties, relationships=("matched", "unmatched", "failure"))
    good, invalid, damaged = bench.add(b'{"a": 1}', b"{", b'{"a": 2}')
    bench.damage(damaged, CORRUPTED)
    bench.run_once()
    ((attributes, _, penalty),) = bench.drain("matched")
    assert attributes["a"] == "1" and penalty == 0
    (invalid_attributes, _, invalid_penalty), (damaged_attributes, _, damaged_penalty) = bench.drain("failure")
    assert "not valid JSON" in invalid_attributes["jsonpath.error"]
    assert damaged_attributes["content.error"].startswith("ContentCorrupted: ")
    assert invalid_penalty == damaged_penalty == NOW + PENALTY_MS


# -- refused when the flow is loaded -----------------------------------------------------


@pytest.mark.parametrize(
    "properties, message",
    [
        ({"bad": "$.store.book[?(@.price <)]"}, "bad"),
        ({"bad": "$.a b"}, "position 3"),
        ({"x": "$.a", "y": "$.b", "destination": "flowfile-content"}, "exactly one JsonPath"),
        ({"destination": "flowfile-content"}, "needs a JsonPath"),
        ({}, "needs a JsonPath"),
        ({"x": "$.a", "return_type": "text"}, "return_type"),
        ({"x": "$.a", "path_not_found_behavior": "fail"}, "path_not_found_behavior"),
    ],
)
def test_what_is_refused_at_load(properties, message):
    with pytest.raises(FlowDefinitionError, match=message.replace("[", r"\[")):
        evaluate_json_path(properties)


def test_a_path_is_read_as_written_not_as_an_expression():
    content = json.dumps({"${x}": 1, "$": 2}).encode()
    attributes, _ = only(evaluate_json_path({"a": "$['${x}']", "b": "$['$']"}, content, {"x": "nope"}), "matched")
    assert attributes["a"] == "1" and attributes["b"] == "2"


# -- the decision alone ---------------------------------------------------------------------


def test_evaluate_decides_without_a_session():
    settings = Settings(
        to_content=False,
        scalar_only=True,
        not_found="skip",
        null_text="",
        max_string_length=1000,
        max_content_size=1000,
    )
    paths = {"author": compile_path("$.store.book[0].author"), "gone": compile_path("$.gone")}
    outcome = evaluate(STORE, paths, settings, budget=1000)
    assert outcome.relationship == "matched"
    assert outcome.attributes == {"author": "Nigel Rees"} and outcome.not_found == ("gone",)
    assert outcome.content is None and outcome.error is None
