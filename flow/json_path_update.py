"""Changing a JSON document at a JsonPath, as NiFi's expression functions
`jsonPathDelete`, `jsonPathSet`, `jsonPathAdd` and `jsonPathPut` do (Jayway's
`delete`, `set`, `add` and `put`): the document is read, changed where the path
points, and written back as compact JSON (`json_path.json_text`).

The path's last segment says what changes in each node its other segments select: a
name (or names) of an object, an index (or indexes, a slice) of an array, every member
or element (`*`), or the elements a filter passes. A path that points nowhere leaves
the document as it was, as in NiFi. `add` appends to each array the path points at and
fails on anything else (NiFi writes an empty value then, and logs why: here the
expression fails, saying why); `put` sets a member of each object the whole path points
at. A deep scan as the last segment is refused: it names no place to change.
"""

from __future__ import annotations

from typing import Any

from .json_path import Filter, Index, Indexes, JsonPath, Name, Names, Slice, Wildcard, json_kind, nodes_at, passing


class UpdateRefused(ValueError):
    """The path cannot change the document (what and why in the message)."""


def delete(path: JsonPath, document):
    for parent, key in _places(path, document):
        del parent[key]  # places come last index first, so the earlier ones stay valid
    return document


def set_value(path: JsonPath, document, value):
    for parent, key in _places(path, document):
        parent[key] = value
    return document


def add(path: JsonPath, document, value):
    for parent, key in _places(path, document):
        target = parent[key]
        if not isinstance(target, list):
            raise UpdateRefused(f"{path.text} points at {json_kind(target)}, and only an array can be added to")
        target.append(value)
    return document


def put(path: JsonPath, document, key: str, value):
    for target in nodes_at(path.segments, document):
        if not isinstance(target, dict):
            raise UpdateRefused(f"{path.text} points at {json_kind(target)}, and a member can be put in an object only")
        target[key] = value
    return document


def _places(path: JsonPath, document) -> list[tuple[Any, Any]]:
    """(container, key) of each value the path points at; for an array, last index first."""
    if not path.segments:
        raise UpdateRefused("the path is the whole document ($), which has no place in a parent to change")
    *leading, last = path.segments
    if last.deep:
        raise UpdateRefused(f"{path.text} ends with a deep scan, which names no place to change")
    places: list[tuple[Any, Any]] = []
    for parent in nodes_at(tuple(leading), document):
        keys = _keys(last.selector, parent, document)
        if isinstance(parent, list):
            keys = sorted(set(keys), reverse=True)
        places += [(parent, key) for key in keys]
    return places


def _keys(selector, parent, root) -> list:  # noqa: PLR0911 - one branch a selector
    if isinstance(parent, dict):
        if isinstance(selector, Name):
            return [selector.name] if selector.name in parent else []
        if isinstance(selector, Names):
            return [name for name in selector.names if name in parent]
        if isinstance(selector, Wildcard):
            return list(parent)
        return []
    if isinstance(parent, list):
        size = len(parent)
        if isinstance(selector, Index):
            return [selector.index % size] if -size <= selector.index < size else []
        if isinstance(selector, Indexes):
            return [index % size for index in selector.indexes if -size <= index < size]
        if isinstance(selector, Slice):
            return list(range(size))[selector.start : selector.end : selector.step]
        if isinstance(selector, Wildcard):
            return list(range(size))
        if isinstance(selector, Filter):
            return passing(selector.condition, parent, root)
    return []
