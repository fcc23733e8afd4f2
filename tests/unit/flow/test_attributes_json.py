"""AttributesToJSON: which attributes, how they are written, where, and when it fails."""

from __future__ import annotations

import json
import re

import pytest

from flow.expression import MAX_STRING_LENGTH
from flow.loading import parse_flow
from flow.processors.attributes_json import (
    CORE_ATTRIBUTES,
    AttributesToJSON,
    NotConvertible,
    Selection,
    json_text,
    listed_names,
    nested,
    select_attributes,
)
from tests.unit.flow.test_processors import one_processor_flow, trigger_once


def run(properties, inputs):
    """One run of an AttributesToJSON on `inputs` [(attributes, bytes)]: {relationship:
    [(attributes, bytes)]}."""
    return trigger_once(
        parse_flow(one_processor_flow("AttributesToJSON", properties, AttributesToJSON.relationships)), inputs
    )


def only_success(out):
    assert "failure" not in out, out.get("failure")
    [(attributes, data)] = out["success"]
    return attributes, data


# -- which attributes ---------------------------------------------------------------


def test_all_attributes_with_uuid_filename_and_path_into_the_attribute():
    attributes, data = only_success(run({}, [({"a": "1", "b": "two"}, b"body")]))
    written = json.loads(attributes["JSONAttributes"])
    # an input FlowFile is named after its uuid, which the attributes do not carry
    assert written == {"a": "1", "b": "two", "filename": attributes["filename"], "path": "./", "uuid": written["uuid"]}
    assert written["uuid"] == attributes["filename"] and re.fullmatch(r"[0-9a-f-]{36}", written["uuid"])
    assert data == b"body" and "mime.type" not in attributes


def test_without_core_attributes_leaves_out_nifis_core_set():
    inputs = [({"a": "1", "mime.type": "text/plain", "absolute.path": "/x/", "priority": "1"}, b"")]
    attributes, _ = only_success(run({"include_core_attributes": False}, inputs))
    assert json.loads(attributes["JSONAttributes"]) == {"a": "1"}


def test_listed_attributes_in_nifis_order_missing_ones_empty_or_null():
    inputs = [({"b": "2", "a": "1", "c": "3"}, b"")]
    attributes, _ = only_success(run({"attributes_list": " b , missing,a"}, inputs))
    # NiFi's order: that of a Java HashSet of the names (flow.java_hash_order)
    assert attributes["JSONAttributes"] == '{"missing":"","a":"1","b":"2"}'
    attributes, _ = only_success(run({"attributes_list": "b,missing", "null_value": True}, inputs))
    assert attributes["JSONAttributes"] == '{"missing":null,"b":"2"}'


def test_a_listed_or_matched_core_attribute_is_written_even_without_core_attributes():
    # NiFi drops its core attributes only when neither the list nor the regex is set
    inputs = [({"a": "1", "filename": "f.txt"}, b"")]
    properties = {"attributes_list": "filename", "attributes_regex": "pa.*", "include_core_attributes": False}
    attributes, _ = only_success(run(properties, inputs))
    assert attributes["JSONAttributes"] == '{"filename":"f.txt","path":"./"}'


def test_regex_matches_whole_names_after_the_listed_ones():
    inputs = [({"x.2": "b", "x.1": "a", "ax.1": "no", "k": "v"}, b"")]
    attributes, _ = only_success(run({"attributes_list": "k", "attributes_regex": r"x\.\d"}, inputs))
    assert attributes["JSONAttributes"] == '{"k":"v","x.1":"a","x.2":"b"}'


def test_listed_names_are_trimmed_once_each_and_a_blank_list_means_all():
    assert listed_names(" a, ,b,a ,") == ("a", "b")
    assert listed_names("  ") is None and listed_names(None) is None


def test_select_attributes_without_a_list_is_sorted_and_keeps_values():
    selection = Selection(listed=None, pattern=None, include_core=False, null_for_missing=True)
    assert list(select_attributes({"z": "1", "uuid": "u", "a": "", "path": "p"}, selection).items()) == [
        ("a", ""),
        ("z", "1"),
    ]
    assert "uuid" in CORE_ATTRIBUTES and "mime.type" in CORE_ATTRIBUTES


# -- how they are written -----------------------------------------------------------


def test_escaped_writes_json_looking_values_as_strings_unescaped_unicode():
    inputs = [({"doc": '{"x": 1}', "name": 'ß "q" \n'}, b"")]
    attributes, _ = only_success(run({"attributes_list": "doc,name"}, inputs))
    assert attributes["JSONAttributes"] == '{"name":"ß \\"q\\" \\n","doc":"{\\"x\\": 1}"}'


def test_nested_writes_objects_and_arrays_as_json_and_keeps_numbers_as_written():
    inputs = [({"doc": ' {"x": [1, 2.50, 1e7, {"y": null, "t": true}]} ', "list": "[]", "half": "[1", "n": "5"}, b"")]
    properties = {"attributes_list": "doc,list,half,n,gone", "json_handling_strategy": "nested", "null_value": True}
    attributes, _ = only_success(run(properties, inputs))
    assert attributes["JSONAttributes"] == (
        '{"doc":{"x":[1,2.50,1e7,{"y":null,"t":true}]},"half":"[1","list":[],"n":"5","gone":null}'
    )


def test_nested_value_that_is_not_json_sends_the_flowfile_to_failure_unchanged():
    out = run({"json_handling_strategy": "nested"}, [({"bad": "{not json}", "ok": "1"}, b"kept")])
    assert "success" not in out
    [(attributes, data)] = out["failure"]
    assert data == b"kept" and "JSONAttributes" not in attributes
    assert "attribute 'bad' looks like JSON but is not" in attributes["attributestojson.error"]


@pytest.mark.parametrize(
    "value, reason",
    [
        ("[NaN]", "NaN is not a JSON number"),
        ('{"a": 1} {"b": 2}', "Extra data"),
        ("[" * 300 + "]" * 300, "nested more than 256 deep"),
        ("[" * 100_000 + "]" * 100_000, "nests too deeply"),
    ],
)
def test_nested_refuses_what_is_not_one_json_value_or_nests_too_deep(value, reason):
    with pytest.raises(NotConvertible, match=reason):
        nested({"v": value})


def test_nested_accepts_json_at_the_depth_limit():
    assert json_text(nested({"v": "[" * 256 + "]" * 256})) == '{"v":' + "[" * 256 + "]" * 256 + "}"


def test_pretty_print_lays_out_as_jacksons_default_printer():
    value = {"a": [{"b": nested({"n": "[1.0]"})["n"]}, "s"], "e": {}, "f": [], "g": None}
    assert json_text(value, pretty=True) == (
        '{\n  "a" : [ {\n    "b" : [ 1.0 ]\n  }, "s" ],\n  "e" : { },\n  "f" : [ ],\n  "g" : null\n}'
    )
    assert json_text({}, pretty=True) == "{ }" and json_text({}) == "{}"


# -- where --------------------------------------------------------------------------


def test_content_destination_replaces_the_content_and_sets_the_mime_type():
    inputs = [({"a": "1", "mime.type": "text/plain"}, b"old content")]
    properties = {"destination": "flowfile-content", "attributes_list": "a,mime.type", "pretty_print": True}
    attributes, data = only_success(run(properties, inputs))
    assert data == b'{\n  "a" : "1",\n  "mime.type" : "text/plain"\n}'
    assert attributes["mime.type"] == "application/json" and "JSONAttributes" not in attributes


def test_pretty_print_is_ignored_for_the_attribute():
    attributes, _ = only_success(run({"attributes_list": "a", "pretty_print": True}, [({"a": "1"}, b"")]))
    assert attributes["JSONAttributes"] == '{"a":"1"}'


def test_json_too_long_for_an_attribute_goes_to_failure_but_fits_the_content():
    half = "x" * (MAX_STRING_LENGTH // 2)
    inputs = [({"a": half, "b": half}, b"c")]
    out = run({"attributes_list": "a,b"}, inputs)
    [(attributes, data)] = out["failure"]
    assert "JSONAttributes" not in attributes and data == b"c"
    assert "over the 1,048,576 an attribute may hold" in attributes["attributestojson.error"]
    _, data = only_success(run({"attributes_list": "a,b", "destination": "flowfile-content"}, inputs))
    assert json.loads(data) == {"a": half, "b": half}


def test_json_just_within_the_attribute_limit_is_written():
    value = "x" * (MAX_STRING_LENGTH - len('{"a":""}'))
    attributes, _ = only_success(run({"attributes_list": "a"}, [({"a": value}, b"")]))
    assert len(attributes["JSONAttributes"]) == MAX_STRING_LENGTH


def test_a_lone_surrogate_cannot_become_content_but_can_stay_in_the_attribute():
    inputs = [({"s": "x\ud800"}, b"old")]
    out = run({"attributes_list": "s", "destination": "flowfile-content"}, inputs)
    [(attributes, data)] = out["failure"]
    assert data == b"old" and "lone surrogate (U+D800)" in attributes["attributestojson.error"]
    attributes, _ = only_success(run({"attributes_list": "s"}, inputs))
    assert attributes["JSONAttributes"] == '{"s":"x\ud800"}'


def test_one_failure_leaves_the_rest_of_the_batch_to_success():
    inputs = [({"v": "[1]"}, b"1"), ({"v": "[oops]"}, b"2"), ({"v": "{}"}, b"3")]
    out = run({"attributes_list": "v", "json_handling_strategy": "nested"}, inputs)
    assert sorted(a["JSONAttributes"] for a, _ in out["success"]) == ['{"v":[1]}', '{"v":{}}']
    assert [data for _, data in out["failure"]] == [b"2"]
