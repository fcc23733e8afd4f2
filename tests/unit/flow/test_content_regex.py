"""ExtractText and RouteOnContent, each run inside a one-processor stateless flow."""

from __future__ import annotations

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.processors.content_regex import ERROR_ATTRIBUTE, ROUTE_ATTRIBUTE, RouteOnContent
from tests.unit.flow.test_processors import one_processor_flow, trigger_once


def _definition(processor_type, properties, relationships):
    return parse_flow(one_processor_flow(processor_type, properties, relationships))


def extract(properties, content: bytes, attributes=None):
    """The one FlowFile ExtractText made of `content`: (relationship, attributes)."""
    out = trigger_once(_definition("ExtractText", properties, ("matched", "unmatched")), [(attributes or {}, content)])
    [(relationship, [(got, data)])] = out.items()
    assert data == content
    return relationship, got


def route(properties, inputs, relationships):
    return trigger_once(_definition("RouteOnContent", properties, relationships), inputs)


# -- ExtractText ------------------------------------------------------------------


def test_extract_text_sets_groups_and_the_first_group():
    relationship, attributes = extract({"user": r"(\w+)@(\w+)"}, b"mail ann@example now")
    assert relationship == "matched"
    assert attributes["user"] == "ann"
    assert (attributes["user.0"], attributes["user.1"], attributes["user.2"]) == ("ann@example", "ann", "example")
    assert "user.3" not in attributes


def test_extract_text_without_a_match_goes_to_unmatched_unchanged():
    relationship, attributes = extract({"user": r"(\w+)@(\w+)"}, b"no address here", {"k": "v"})
    assert relationship == "unmatched"
    assert not any(name.startswith("user") for name in attributes) and attributes["k"] == "v"


def test_extract_text_leaves_out_an_optional_group_that_did_not_match():
    _, attributes = extract({"regex": "abc(def)?(g)"}, b"abcg")
    assert "regex.1" not in attributes and attributes["regex.2"] == "g"
    assert "regex" not in attributes  # the first group matched nothing


def test_extract_text_without_groups_sets_only_group_zero():
    _, attributes = extract({"word": "b+"}, b"abbbc")
    assert attributes["word.0"] == "bbb" and "word" not in attributes and "word.1" not in attributes


def test_extract_text_without_group_zero():
    _, attributes = extract({"n": r"id=(\d+)", "include_capture_group_0": False}, b"x id=42 y")
    assert attributes["n"] == "42" and attributes["n.1"] == "42" and "n.0" not in attributes


def test_extract_text_repeating_capture_group_numbers_later_matches_on():
    properties = {"kv": r"(\w)=(\d)", "repeating_capture_group": True}
    _, attributes = extract(properties, b"a=1 b=2 c=3")
    assert attributes["kv"] == "a" and attributes["kv.0"] == "a=1"
    assert [attributes[f"kv.{i}"] for i in range(1, 7)] == ["a", "1", "b", "2", "c", "3"]
    _, first_only = extract({"kv": r"(\w)=(\d)"}, b"a=1 b=2 c=3")
    assert "kv.3" not in first_only


def test_extract_text_named_groups():
    properties = {"m": r"(?P<key>\w+):(?P<value>\d+)", "named_groups": True, "repeating_capture_group": True}
    _, attributes = extract(properties, b"x:1 y:22")
    assert attributes["m"] == "x:1"
    assert (attributes["m.key"], attributes["m.value"]) == ("x", "1")
    assert (attributes["m.key.1"], attributes["m.value.1"]) == ("y", "22")
    assert "m.1" not in attributes


def test_extract_text_cuts_values_to_the_maximum_capture_group_length():
    _, attributes = extract({"a": "(x+)", "maximum_capture_group_length": 3}, b"xxxxxxx")
    assert attributes["a"] == "xxx" and attributes["a.0"] == "xxx"


@pytest.mark.parametrize(
    "flags, content, expected",
    [
        ({}, b"HELLO", "unmatched"),
        ({"case_insensitive": True}, b"HELLO", "matched"),
        ({}, b"one\ntwo", "unmatched"),
        ({"multiline": True}, b"one\ntwo", "matched"),
        ({"comments": True}, b"hello", "matched"),
    ],
)
def test_extract_text_flags(flags, content, expected):
    pattern = "^(hello)$" if "comments" not in flags else "^ (hel lo) $  # spaces ignored"
    if content.startswith(b"one"):
        pattern = "^(two)$"
    relationship, _ = extract({"h": pattern, **flags}, content)
    assert relationship == expected


def test_extract_text_dotall_and_literal():
    assert extract({"a": "(a.b)"}, b"a\nb")[0] == "unmatched"
    assert extract({"a": "(a.b)", "dotall": True}, b"a\nb")[1]["a"] == "a\nb"
    assert extract({"a": "(a.b)", "literal": True}, b"axb")[0] == "unmatched"
    assert extract({"a": "a.b", "literal": True}, b"x a.b y")[1]["a.0"] == "a.b"


def test_extract_text_matches_as_java_does_by_default_ascii_classes_and_folding():
    text = "é ٣".encode()
    assert extract({"d": r"(\d)"}, text)[0] == "unmatched"  # an Arabic-Indic digit is no \d in Java
    assert extract({"e": "(É)", "case_insensitive": True}, text)[0] == "unmatched"
    assert extract({"e": "(É)", "case_insensitive": True, "unicode_case": True}, text)[1]["e"] == "é"


def test_extract_text_reads_only_the_buffer():
    content = b"x" * 2000 + b"id=7"
    assert extract({"n": r"id=(\d)", "maximum_buffer_size": "1 KB"}, content)[0] == "unmatched"
    assert extract({"n": r"id=(\d)", "maximum_buffer_size": "3 KB"}, content)[1]["n"] == "7"


def test_extract_text_sends_a_flowfile_whose_pattern_is_refused_to_unmatched_with_the_reason(caplog):
    content = b"a" * 5000 + b"!"
    relationship, attributes = extract({"ok": "(!)", "slow": "(a+)+b"}, content)
    assert relationship == "unmatched"
    assert "ok" not in attributes and "'slow'" in attributes[ERROR_ATTRIBUTE]
    assert "refused" in caplog.text
    # The same pattern runs on a short content, where its worst case is small.
    assert extract({"slow": "((a+)+b)"}, b"aab")[1]["slow"] == "aab"


@pytest.mark.parametrize(
    "properties, words",
    [
        ({"canonical_equivalence": True}, "canonical"),
        ({"unicode_character_class": True}, "only false"),
        ({"character_set": "no-such-charset"}, "unknown character set"),
        ({"a": "(unclosed"}, "not a valid regular expression"),
        ({"a": "abc", "include_capture_group_0": False}, "no capturing group"),
        ({"a": "(?P<x>a)(b)", "named_groups": True}, "named"),
        ({"a": r"(\w+)", "unicode_case": True}, "ASCII"),
    ],
)
def test_extract_text_refuses_at_load_what_it_cannot_honour(properties, words):
    with pytest.raises(FlowDefinitionError, match=words):
        _definition("ExtractText", properties, ("matched", "unmatched"))


# -- RouteOnContent ---------------------------------------------------------------


def test_route_on_content_must_match_exactly_by_default():
    out = route({"digits": r"\d+"}, [({}, b"123"), ({}, b"123abc")], ("digits", "unmatched"))
    assert [data for _, data in out["digits"]] == [b"123"]
    assert [data for _, data in out["unmatched"]] == [b"123abc"]
    assert out["digits"][0][0][ROUTE_ATTRIBUTE] == "digits"
    assert out["unmatched"][0][0][ROUTE_ATTRIBUTE] == "unmatched"


def test_route_on_content_contain_match():
    properties = {"match_requirement": "content_must_contain_match", "digits": r"\d+"}
    out = route(properties, [({}, b"abc123"), ({}, b"abc")], ("digits", "unmatched"))
    assert [data for _, data in out["digits"]] == [b"abc123"]
    assert [data for _, data in out["unmatched"]] == [b"abc"]


def test_route_on_content_sends_a_copy_to_every_matching_route():
    properties = {"match_requirement": "content_must_contain_match", "error": "ERROR", "disk": "disk"}
    out = route(properties, [({"n": "1"}, b"ERROR: disk full")], ("error", "disk", "unmatched"))
    [(error_attributes, error_data)] = out["error"]
    [(disk_attributes, disk_data)] = out["disk"]
    assert error_data == disk_data == b"ERROR: disk full"
    assert (error_attributes[ROUTE_ATTRIBUTE], disk_attributes[ROUTE_ATTRIBUTE]) == ("error", "disk")
    assert error_attributes["n"] == disk_attributes["n"] == "1"
    assert "unmatched" not in out


def test_route_on_content_reads_only_the_buffer():
    content = b"a" * 2048 + b"tail"
    properties = {"match_requirement": "content_must_contain_match", "tail": "tail", "content_buffer_size": "1 KB"}
    assert "tail" not in route(properties, [({}, content)], ("tail", "unmatched"))
    properties["content_buffer_size"] = "1 MB"
    assert "unmatched" not in route(properties, [({}, content)], ("tail", "unmatched"))


def test_route_on_content_matches_attribute_values_literally():
    properties = {"match_requirement": "content_must_contain_match", "mine": "id=${wanted}!"}
    inputs = [({"wanted": "a.c"}, b"id=a.c!"), ({"wanted": "a.c"}, b"id=abc!")]
    out = route(properties, inputs, ("mine", "unmatched"))
    assert [data for _, data in out["mine"]] == [b"id=a.c!"]
    assert [data for _, data in out["unmatched"]] == [b"id=abc!"]


def test_route_on_content_sends_a_flowfile_whose_pattern_is_refused_to_unmatched_with_the_reason():
    properties = {"match_requirement": "content_must_contain_match", "slow": "(a+)+b", "bang": "!"}
    out = route(properties, [({}, b"a" * 5000 + b"!")], ("slow", "bang", "unmatched"))
    [(attributes, _)] = out["unmatched"]
    assert "'slow'" in attributes[ERROR_ATTRIBUTE] and "budget" in attributes[ERROR_ATTRIBUTE]
    assert "bang" not in out


def test_route_on_content_refuses_a_route_called_unmatched_and_a_bad_pattern():
    with pytest.raises(FlowDefinitionError, match="unmatched"):
        _definition("RouteOnContent", {"unmatched": "x"}, ("unmatched",))
    with pytest.raises(FlowDefinitionError, match="not a valid regular expression"):
        _definition("RouteOnContent", {"r": "(x"}, ("r", "unmatched"))


def test_route_on_content_relationships_follow_the_routes():
    assert RouteOnContent.relationships_for({}, {"a": None, "b": None}) == ("a", "b", "unmatched")
