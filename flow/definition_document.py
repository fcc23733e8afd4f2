"""A flow document: a file or text (YAML or JSON) decoded to data, and the shape every
document has, wherever a value is in it, checked against the limits before any
processor is looked at (see `flow.definition`)."""

from __future__ import annotations

import datetime
import json
import math
import re

from .definition_limits import _MAX_INTEGER, MAX_DOCUMENT_BYTES, MAX_NESTING, _beyond_limits
from .definition_places import _kind, _Place, _short
from .definition_yaml import _parse_yaml
from .errors import FlowDefinitionError

_SURROGATE = re.compile("[\ud800-\udfff]")


def read_flow_document(path: str) -> dict:
    """The flow file at `path` (.yaml, .yml or .json) as data, before any parameter is
    substituted or any processor looked at: a mapping within the limits `flow.definition`
    documents. Raises `FlowDefinitionError` naming the file when it cannot be read,
    parsed, or is beyond a limit."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            content = handle.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as error:
        raise FlowDefinitionError(f"cannot read the flow file: {error.strerror or error}", source=source) from None
    return decode_flow_document(content, source=source, as_json=source.endswith(".json"))


def decode_flow_document(content: str | bytes, *, source: str = "<flow>", as_json: bool = False) -> dict:
    """`read_flow_document` for a document already in hand: YAML, or JSON when `as_json`."""
    text = _decode(content, source)
    data = _parse_json(text, source) if as_json else _parse_yaml(text, source)
    if not isinstance(data, dict):
        raise FlowDefinitionError(
            f"a flow is a mapping with 'processors' and 'connections', got {_kind(data)}", source=source
        )
    _check_document(data, source)
    return data


# --- Text to data ------------------------------------------------------------------------------------------------


def _decode(content: str | bytes, source: str) -> str:
    if isinstance(content, str):
        try:
            content = content.encode("utf-8")
        except UnicodeEncodeError as error:
            raise FlowDefinitionError(
                f"the flow is not valid text (character {error.start + 1}: {error.reason})", source=source
            ) from None
    if len(content) > MAX_DOCUMENT_BYTES:
        raise FlowDefinitionError(
            f"the flow is larger than {MAX_DOCUMENT_BYTES} bytes, the most a flow may be: "
            f"split it into stateless flows, or shorten long values",
            source=source,
        )
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FlowDefinitionError(
            f"the flow is not UTF-8 text (byte {error.start + 1}: {error.reason})", source=source
        ) from None


def _parse_json(text: str, source: str):
    try:
        return json.loads(text, object_pairs_hook=_json_object, parse_int=_json_integer)
    except json.JSONDecodeError as error:
        raise FlowDefinitionError(
            f"malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}", source=source
        ) from None
    except RecursionError:
        raise FlowDefinitionError(
            f"malformed JSON: nested more than {MAX_NESTING} levels deep", source=source
        ) from None
    except ValueError as error:  # a duplicate key, or an integer of thousands of digits
        raise FlowDefinitionError(f"malformed JSON: {_short(str(error), 200)}", source=source) from None


def _json_object(pairs: list) -> dict:
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {_short(key)!r} in an object: give each key once")
        result[key] = value
    return result


def _json_integer(text: str) -> int:
    if len(text) > 100:
        raise ValueError(f"an integer of {len(text)} digits: numbers in a flow fit in 64 bits")
    return int(text)


# --- The shape of any document ----------------------------------------------------------------------------------


def _check_document(data: dict, source: str) -> None:
    """Refuse, naming the path, what no flow holds wherever it is: a key that is not
    text, a value of another type than JSON's (or a date), a number that is not finite or
    beyond 64 bits, nesting beyond `MAX_NESTING` (so a structure that contains itself
    too), and a document beyond `MAX_VALUES` or `MAX_EXPANDED_CHARS`, a value held in
    several places counted in each."""
    values = chars = 0
    stack: list[tuple[object, tuple[str | int, ...]]] = [(data, ())]  # (value, its path)
    while stack:
        value, path = stack.pop()
        values += 1
        if len(path) >= MAX_NESTING:
            raise _Place(source, path).error(f"nested more than {MAX_NESTING} levels deep")
        if isinstance(value, str):
            chars += _check_text(value, "text", source, path)
        elif isinstance(value, dict):
            chars += _check_keys(value, source, path)
            values += len(value)
            stack.extend((value[key], path + (key,)) for key in reversed(value))
        elif isinstance(value, list):
            stack.extend((value[index], path + (index,)) for index in range(len(value) - 1, -1, -1))
        else:
            _check_scalar(value, source, path)
        problem = _beyond_limits(values, chars)
        if problem:
            raise _Place(source, path).error(f"here the flow {problem}")


def _check_keys(mapping: dict, source: str, path: tuple) -> int:
    size = 0
    for key in mapping:
        if not isinstance(key, str):
            raise _Place(source, path).error(f"key {_short(repr(key))} is {_kind(key)}, not text: quote it")
        size += _check_text(key, "key", source, path)
    return size


def _check_text(text: str, what: str, source: str, path: tuple) -> int:
    """The length of `text`; refuses a lone surrogate (JSON's "\\ud800"), which no file,
    log or message can hold."""
    if not text.isascii() and _SURROGATE.search(text):
        raise _Place(source, path).error(
            f"{what} {_short(text)!r} holds a lone surrogate (half of a UTF-16 pair), which is not text: remove it"
        )
    return len(text)


def _check_scalar(value, source: str, path: tuple) -> None:
    if value is None or isinstance(value, (bool, datetime.date)):
        return
    if isinstance(value, int):
        if not -_MAX_INTEGER <= value < _MAX_INTEGER:
            raise _Place(source, path).error(
                f"expected a number within 64 bits (below {_MAX_INTEGER}), got {value.bit_length()} bits"
            )
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _Place(source, path).error(f"expected a finite number, got {value!r}")
    else:
        raise _Place(source, path).error(
            f"expected text, a number, true/false, a list or a mapping, got {_kind(value)}"
        )
