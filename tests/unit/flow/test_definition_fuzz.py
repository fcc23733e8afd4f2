"""Fuzzing the flow loader: whatever it is given, a flow loads or a FlowDefinitionError
says why, within 2 s. Inputs: arbitrary JSON-like documents, mutations of
examples/hello.yaml (a value replaced by one of another type, a key dropped or added,
an item repeated, a value shared in two places or inside itself), and raw text and
bytes on the YAML and JSON paths.

About 270 examples in all; CUSTODY_LONG=1 runs twenty times as many."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
from pathlib import Path
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from flow import definition_yaml
from flow.definition import decode_flow_document, parse_flow
from flow.errors import FlowDefinitionError
from flow.loading import standard_registry

SCALE = 20 if os.environ.get("CUSTODY_LONG") == "1" else 1
REGISTRY = standard_registry()
HELLO_PATH = Path(__file__).resolve().parents[3] / "examples" / "hello.yaml"
HELLO = yaml.safe_load(HELLO_PATH.read_text())
PARAMETERS = {"data_dir": "/nonexistent/custody-fuzz"}
SECONDS_PER_INPUT = 2.0


def fuzz_settings(examples: int):
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def loads_or_refuses(load) -> None:
    """Runs `load`: it returns, or raises FlowDefinitionError with a message, within
    SECONDS_PER_INPUT. Any other exception fails the example."""
    started = time.thread_time()  # the work done: a loaded machine's waits do not count
    outcome = "loaded"
    try:
        load()
    except FlowDefinitionError as error:
        outcome = "refused"
        assert str(error).strip()
    elapsed = time.thread_time() - started
    assert elapsed < SECONDS_PER_INPUT, f"took {elapsed:.2f} s"
    event(outcome)  # --hypothesis-show-statistics tells how many of each


def parse_text(content, *, as_json: bool):
    source = "fuzz.json" if as_json else "fuzz.yaml"
    document = decode_flow_document(content, source=source, as_json=as_json)
    return parse_flow(document, registry=REGISTRY, source=source, parameters=PARAMETERS)


def parse_every_way(document) -> None:
    """`document` as data, as YAML text and as JSON text (when it can be written so)."""
    loads_or_refuses(lambda: parse_flow(document, registry=REGISTRY, parameters=PARAMETERS))
    try:
        as_yaml = yaml.safe_dump(document, sort_keys=False)
    except yaml.YAMLError:
        as_yaml = None
    if as_yaml is not None:
        loads_or_refuses(lambda: parse_text(as_yaml, as_json=False))
    try:
        as_json = json.dumps(document)
    except (TypeError, ValueError):  # a key json cannot write, a structure inside itself
        as_json = None
    if as_json is not None:
        loads_or_refuses(lambda: parse_text(as_json, as_json=True))


# --- Values ---------------------------------------------------------------------------------------------------

FLOW_WORDS = [
    "name",
    "parameters",
    "processors",
    "connections",
    "ports",
    "description",
    "id",
    "type",
    "properties",
    "scheduling",
    "auto_terminate",
    "comment",
    "source",
    "destination",
    "relationships",
    "prioritizers",
    "back_pressure",
    "object_count",
    "data_size",
    "swap_threshold",
    "swap_batch",
    "expiration",
    "run_schedule",
    "concurrent_tasks",
    "yield_duration",
    "penalty_duration",
    "success",
    "failure",
    "unmatched",
    "input",
    "output",
    "fifo",
    "oldest_first",
    "batch_size",
    "file_size",
    "directory",
    "1 sec",
    "500 ms",
    "1 KB",
    "#{data_dir}",
    "#{nope}",
    "${filename}",
    "${a:nope()}",
    "generate",
    "tag",
    "route",
    "log",
    "write",
    *sorted(REGISTRY),
]

texts = st.one_of(st.sampled_from(FLOW_WORDS), st.text(max_size=12), st.sampled_from(["\ud800", "a\udfff"]))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    texts,
    st.integers(min_value=-3, max_value=20_000),
    st.integers(),  # beyond 64 bits too
    st.sampled_from([2**63, -(2**63) - 1, 10**40]),
    st.floats(allow_nan=True, allow_infinity=True),
)
keys = st.one_of(texts, st.integers(-2, 2), st.booleans(), st.none())
json_like = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=25,
)
text_keyed = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=25,
)


# --- Arbitrary documents --------------------------------------------------------------------------------------

flow_shaped = st.fixed_dictionaries(
    {},
    optional={
        "name": text_keyed,
        "parameters": text_keyed,
        "description": text_keyed,
        "ports": text_keyed,
        "processors": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.one_of(st.sampled_from(["a", "b", "c"]), text_keyed),
                    "type": st.one_of(st.sampled_from(sorted(REGISTRY)), text_keyed),
                },
                optional={
                    "properties": text_keyed,
                    "scheduling": text_keyed,
                    "auto_terminate": text_keyed,
                    "name": text_keyed,
                },
            ),
            max_size=3,
        ),
        "connections": st.lists(
            st.fixed_dictionaries(
                {
                    "source": st.one_of(st.sampled_from(["a", "b", "c"]), text_keyed),
                    "destination": st.one_of(st.sampled_from(["a", "b", "c"]), text_keyed),
                },
                optional={
                    key: text_keyed
                    for key in (
                        "relationships",
                        "prioritizers",
                        "back_pressure",
                        "swap_threshold",
                        "swap_batch",
                        "expiration",
                        "id",
                    )
                },
            ),
            max_size=3,
        ),
    },
)


@fuzz_settings(60)
@given(document=st.one_of(json_like, flow_shaped))
def test_any_json_like_document_loads_or_is_refused(document):
    parse_every_way(document)


# --- Mutations of a valid flow --------------------------------------------------------------------------------


def test_the_flow_the_mutations_start_from_loads():
    definition = parse_flow(copy.deepcopy(HELLO), registry=REGISTRY, parameters=PARAMETERS)
    assert set(definition.processors) == {"generate", "tag", "route", "log", "write"}


def paths(value, path=(), inside=()):
    """Every path into `value`, the empty one (the document) first; not into a value
    again from inside itself (a "share" mutation can make a loop)."""
    yield path
    if id(value) in inside:
        return
    inside += (id(value),)
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, path + (key,), inside)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, path + (index,), inside)


def at(document, path):
    for part in path:
        document = document[part]
    return document


def replace(document, path, value):
    if not path:
        return value
    at(document, path[:-1])[path[-1]] = value
    return document


def mutate(document, data):
    """One mutation of `document` (changed in place where it can be); the result."""
    path = data.draw(st.sampled_from(list(paths(document))), label="path")
    target = at(document, path)
    kind = data.draw(st.sampled_from(["retype", "drop", "add key", "repeat", "wrap", "share"]), label="mutation")
    if kind == "retype":
        return replace(document, path, data.draw(json_like.filter(lambda v: type(v) is not type(target))))
    if kind == "drop" and path:
        del at(document, path[:-1])[path[-1]]
    elif kind == "add key" and isinstance(target, dict):
        target[data.draw(keys, label="key")] = data.draw(json_like, label="value")
    elif kind == "repeat" and isinstance(target, list) and target:
        target.append(copy.deepcopy(target[data.draw(st.integers(0, len(target) - 1))]))
    elif kind == "wrap":
        return replace(document, path, data.draw(st.sampled_from([[target], {"x": target}])))
    elif kind == "share":  # one value in two places, like a YAML alias; in its own subtree, a loop
        other = data.draw(st.sampled_from(list(paths(document))), label="shared")
        return replace(document, path, at(document, other))
    return document


@fuzz_settings(100)
@given(data=st.data())
def test_a_mutated_valid_flow_loads_or_is_refused(data):
    document = copy.deepcopy(HELLO)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        document = mutate(document, data)
    parse_every_way(document)


# --- Raw text and bytes ---------------------------------------------------------------------------------------

YAML_PIECES = [
    "- ",
    ": ",
    "\n",
    "  ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "&a ",
    "&b ",
    "*a",
    "*b",
    "<<: ",
    "? ",
    "'",
    '"',
    "# c",
    "---\n",
    "...\n",
    "|\n",
    ">\n",
    ".nan",
    ".inf",
    "-.inf",
    "1e999",
    "0x1F",
    "2001-02-30",
    "9" * 30,
    "~",
    "null",
    "yes",
    "on",
    "\t",
    "\\u0000",
    "\\ud800",
    "\x00",
    "\ufeff",
    "!!int ",
    "!!str ",
    "!!binary ",
    "!!set ",
    "!!bool ",
    "!!float ",
    "!!timestamp ",
    "!!null ",
    "!!omap ",
    "!!pairs ",
    "!!map ",
    "!!seq ",
    "!!merge ",
    "!local ",
    "!<tag:x> ",
    "!!python/object:os.system ",
    *FLOW_WORDS,
]
yamlish = st.lists(st.sampled_from(YAML_PIECES), max_size=40).map("".join)
HELLO_TEXT = HELLO_PATH.read_text()
YAML_LOADERS = {
    "libyaml": contextlib.nullcontext(),
    "pure Python": mock.patch.object(definition_yaml, "_FlowYamlLoader", definition_yaml._PythonFlowYamlLoader),
}


@st.composite
def spliced_hello(draw):
    """examples/hello.yaml with YAML pieces spliced in at random places."""
    text = HELLO_TEXT
    for _ in range(draw(st.integers(1, 4))):
        at_ = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 12))
        text = text[:at_] + draw(yamlish) + text[at_ + cut :]
    return text


@pytest.mark.parametrize("loader", ["libyaml", "pure Python"])
@fuzz_settings(40)
@given(text=st.one_of(st.text(max_size=200), yamlish, spliced_hello()))
def test_any_text_on_the_yaml_path_loads_or_is_refused(loader, text):
    with YAML_LOADERS[loader]:
        loads_or_refuses(lambda: parse_text(text, as_json=False))


JSON_PIECES = [
    "{",
    "}",
    "[",
    "]",
    ", ",
    ": ",
    '"',
    '"id"',
    '"processors"',
    '"type"',
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "9" * 30,
    "null",
    "true",
    "\\u0000",
    "\\ud800",
    *[json.dumps(word) for word in FLOW_WORDS],
]
jsonish = st.lists(st.sampled_from(JSON_PIECES), max_size=40).map("".join)


@fuzz_settings(30)
@given(
    content=st.one_of(st.binary(max_size=200), jsonish.map(str.encode), yamlish.map(str.encode)), as_json=st.booleans()
)
def test_any_bytes_load_or_are_refused(content, as_json):
    loads_or_refuses(lambda: parse_text(content, as_json=as_json))


@pytest.mark.parametrize("as_json", [False, True])
def test_the_valid_flow_loads_from_its_text(as_json):
    text = json.dumps(HELLO) if as_json else HELLO_TEXT
    assert set(parse_text(text, as_json=as_json).processors) == {"generate", "tag", "route", "log", "write"}
