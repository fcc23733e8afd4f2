"""FlattenJson: each mode, the reserved-character keys, numbers and escaping, unflatten,
pretty printing, failures. The expected texts are what NiFi 2.3.0's json-flattener
(0.17.1, with NiFi's settings) writes for the same input, checked with it."""

from __future__ import annotations

import json

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.processors.json_flatten import java_double_text
from tests.unit.flow.test_processors import one_processor_flow, trigger_once
from tests.unit.flow.test_unreadable_content import CORRUPTED, NOW, PENALTY_MS, Bench

RELATIONSHIPS = ("success", "failure")


def definition(properties: dict) -> dict:
    return one_processor_flow("FlattenJson", properties, RELATIONSHIPS)


def flatten(content: str | bytes, attributes=None, **properties) -> dict:
    data = content.encode() if isinstance(content, str) else content
    return trigger_once(parse_flow(definition(properties)), [(attributes or {}, data)])


def flattened(content: str, **properties) -> str:
    out = flatten(content, **properties)
    assert set(out) == {"success"}, out
    return out["success"][0][1].decode()


NESTED = '{"a":{"b":1,"c":[1,{"d":"x/é😀"}]},"e.f":2.50,"g":1e2,"h":[],"i":{},"j":null,"":3, "k[":true}'


@pytest.mark.parametrize(
    "mode, content, expected",
    [
        (
            "normal",
            NESTED,
            r'{"a.b":1,"a.c[0]":1,"a.c[1].d":"x\/\u00E9\uD83D\uDE00","[\"e.f\"]":2.5,"g":100.0,"h":[],"i":{},'
            r'"j":null,"[\"\"]":3,"[\"k[\"]":true}',
        ),
        (
            "keep arrays",
            '{"a":{"b":1,"c":[1,{"d":{"z":"x/é"}}, [2]]},"e.f":2.50,"h":[],"i":{},"j":null}',
            r'{"a.b":1,"a.c":[1,{"d.z":"x/é"},[2]],"[\"e.f\"]":2.5,"h":[],"i":{},"j":null}',
        ),
        (
            "dot notation",
            '{"a":{"b":1,"c":[1,{"d":"x"}]},"h":[],"i":{},"j":null,"":3}',
            '{"a.b":1,"a.c.0":1,"a.c.1.d":"x","h":[],"i":{},"j":null,"":3}',
        ),
        (
            "keep primitive arrays",
            '{"a":{"b":1,"c":[1,{"d":"x"}], "p":[1,"s",null,true]}}',
            '{"a.b":1,"a.c[0]":1,"a.c[1].d":"x","a.p":[1,"s",null,true]}',
        ),
        ("normal", '[1,{"a":2}]', '{"[0]":1,"[1].a":2}'),
        ("normal", "[[1,2],{}]", '{"[0][0]":1,"[0][1]":2,"[1]":{}}'),
        ("keep arrays", '[[1,2],{"a":{"b":1}}]', '[[1,2],{"a.b":1}]'),
        ("keep arrays", '{"a":[{"b.c":1}]}', r'{"a":[{"[\"b.c\"]":1}]}'),
        ("keep arrays", r'{"a":[{"b":"é\n/"}], "c":"é\u0001"}', r'{"a":[{"b":"é\n/"}],"c":"\u00E9\u0001"}'),
        ("normal", '{"a":{"b]":1, "c\\"d":2}}', r'{"a[\"b]\"]":1,"a.c\"d":2}'),
        ("normal", '"s/é"', r'"s\/\u00E9"'),
        ("normal", "{}", "{}"),
        ("normal", "[]", "[]"),
        ("normal", "", "null"),
        ("normal", '{"a":1,"a":2}', '{"a":2}'),
    ],
)
def test_flatten_as_nifi(mode, content, expected):
    assert flattened(content, flatten_mode=mode) == expected


def test_numbers_are_written_as_the_flattener_writes_them():
    content = '{"x":1.0,"y":-0.0,"w":123456789012345678901234567890,"v":1.5e-7,"u":1e20,"t":12345678.5,"s":1E-3}'
    assert flattened(content, flatten_mode="normal") == (
        '{"x":1.0,"y":0.0,"w":123456789012345678901234567890,"v":1.5E-7,"u":100000000000000000000,'
        '"t":1.23456785E7,"s":0.001}'
    )


@pytest.mark.parametrize(
    "value, text",
    [(1.0, "1.0"), (1e7, "1.0E7"), (1234567.5, "1234567.5"), (0.00012, "1.2E-4"), (-2.5e-300, "-2.5E-300")],
)
def test_java_double_text(value, text):
    assert java_double_text(value) == text


def test_separator_and_ignore_reserved_characters():
    content = '{"a":{"b_c":1,"c":[1,{"d":"x"}]}}'
    assert flattened(content, flatten_mode="normal", separator="_") == '{"a[\\"b_c\\"]":1,"a_c[0]":1,"a_c[1]_d":"x"}'
    assert (
        flattened(content, flatten_mode="normal", separator="_", ignore_reserved_characters=True)
        == '{"a_b_c":1,"a_c[0]":1,"a_c[1]_d":"x"}'
    )


def test_the_separator_is_an_expression_of_the_flowfile():
    out = flatten('{"a":{"b":1}}', {"sep": ":"}, separator="${sep}")
    assert out["success"][0][1] == b'{"a:b":1}'
    out = flatten('{"a":{"b":1}}', {"sep": "ab"}, separator="${sep}")
    assert "single character" in out["failure"][0][0]["flatten.error"]


def test_dot_notation_cannot_write_a_key_holding_the_separator():
    out = flatten('{"a.b":1}', flatten_mode="dot notation")
    assert set(out) == {"failure"} and "dot notation" in out["failure"][0][0]["flatten.error"]


@pytest.mark.parametrize(
    "mode, content, expected",
    [
        (
            "normal",
            r'{"a.b":1e20,"a.c[1]":-0.0,"[\"x.y\"]":"é/\u001f","k":[{"p.q":1},2,[3]]}',
            r'{"a":{"b":1.0E20,"c":[null,-0.0]},"x.y":"é/\u001F","k":[{"p":{"q":1}},2,[3]]}',
        ),
        ("dot notation", '{"a.0.b":1,"a.1":2}', '{"a":[{"b":1},2]}'),
        ("keep arrays", '{"a.b":[1,{"c.d":2}]}', '{"a":{"b":[1,{"c":{"d":2}}]}}'),
        ("normal", '{"[0].a":1,"[2]":"z"}', '[{"a":1},null,"z"]'),
        ("normal", "{}", "{}"),
    ],
)
def test_unflatten_as_nifi(mode, content, expected):
    assert flattened(content, flatten_mode=mode, return_type="unflatten") == expected


def test_flatten_then_unflatten_gives_the_document_back():
    document = {"a": {"b": [1, {"c": "d"}], "e": None}, "f": [[True, False]], "g": "h"}
    for mode in ("normal", "keep arrays", "dot notation", "keep primitive arrays"):
        flat = flattened(json.dumps(document), flatten_mode=mode)
        assert json.loads(flattened(flat, flatten_mode=mode, return_type="unflatten")) == document, mode


def test_pretty_print_is_the_same_json_indented():
    text = flattened('{"a":{"b":[1,{"c":[]}]},"o":{}}', flatten_mode="normal", pretty_print=True)
    assert "\n  " in text
    assert json.loads(text) == {"a.b[0]": 1, "a.b[1].c": [], "o": {}}


def test_the_character_set_is_read_and_written():
    out = flatten('{"a":{"b":"é"}}'.encode("utf-16"), character_set="UTF-16", flatten_mode="keep arrays")
    assert out["success"][0][1].decode("utf-16") == '{"a.b":"\\u00E9"}'


@pytest.mark.parametrize(
    "content, return_type, reason",
    [
        ("{not json", "flatten", "not valid JSON"),
        ('{"a":1} trailing', "flatten", "not valid JSON"),
        ('{"a":1e999}', "flatten", "not a JSON number"),
        ('{"a":1,"a.b":2}', "unflatten", "goes through a place that holds 1"),
        ('{"[0]":1,"b":2}', "unflatten", "member of what is an array"),
    ],
)
def test_what_cannot_be_done_goes_to_failure_unchanged(content, return_type, reason):
    out = flatten(content, return_type=return_type)
    assert set(out) == {"failure"}
    ((attributes, data),) = out["failure"]
    assert data == content.encode() and reason in attributes["flatten.error"]


@pytest.mark.parametrize(
    "properties, name",
    [
        ({"separator": "ab"}, "separator"),
        ({"separator": " "}, "separator"),
        ({"character_set": "nope"}, "character_set"),
    ],
)
def test_bad_settings_are_refused_at_load(properties, name):
    with pytest.raises(FlowDefinitionError, match=name):
        parse_flow(definition(properties))


def test_unreadable_content_is_set_aside():
    bench = Bench("FlattenJson", {})
    _, damaged = bench.add(b'{"a":{"b":1}}', b'{"a":{"b":2}}')
    bench.damage(damaged, CORRUPTED)
    bench.run_once()
    assert [content for _, content, _ in bench.drain("success")] == [b'{"a.b":1}']
    ((attributes, _, penalty),) = bench.drain("failure")
    assert attributes["content.error"].startswith("ContentCorrupted: ") and penalty == NOW + PENALTY_MS
