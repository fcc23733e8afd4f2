"""Places and values: `_Place`, where in a flow document a value was read (every error
names it), how a value is described in an error, and the readers of a value of one
type at one place, each raising `FlowDefinitionError` naming the place."""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass
from typing import Literal, overload

from .definition_limits import _MAX_INTEGER
from .errors import FlowDefinitionError
from .units import parse_duration, parse_size

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")


@dataclass(frozen=True)
class _Place:
    """Where a value was read: every error names it. Within a processor whose id is
    known, errors name the processor and the path inside it (as the property); elsewhere
    the path from the top of the document."""

    source: str
    path: tuple = ()
    processor: str | None = None

    def at(self, *parts) -> _Place:
        return _Place(self.source, self.path + parts, self.processor)

    def error(self, message: str) -> FlowDefinitionError:
        where = _format_path(self.path)
        if self.processor is not None:
            return FlowDefinitionError(message, source=self.source, processor=self.processor, property=where or None)
        return FlowDefinitionError(f"{where}: {message}" if where else message, source=self.source)


def _format_path(path: tuple) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not text:
            text = _short(part, 60)
        elif _PLAIN_KEY.match(part):
            text += f".{part}"
        else:
            text += f"[{_short(part, 60)!r}]"
    return text


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters)"


def _listing(names) -> str:
    return _short(", ".join(map(repr, names)), 200) or "none"


def _kind(value) -> str:
    """What a value is, for an error message: its type, and the value itself if short."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}" if abs(value) < 1 << 64 else "a huge integer"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {_short(value)!r}" if value else "empty text"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return f"a mapping of {len(value)}"
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()}"
    return f"a {type(value).__name__}"


def _quote_hint(value) -> str:
    return " (quote it to make it text)" if isinstance(value, (int, float, datetime.date)) else ""


@overload
def _text(value: object, place: _Place, what: str = "text", *, required: Literal[True] = True) -> str: ...
@overload
def _text(value: object, place: _Place, what: str = "text", *, required: bool) -> str | None: ...
def _text(value: object, place: _Place, what: str = "text", *, required: bool = True) -> str | None:
    """`value`, text that is not empty; or None for no value when it is not `required`."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise place.error(f"expected {what}, got {_kind(value)}{_quote_hint(value)}")
    return value


def _mapping(value, place: _Place, what: str = "a mapping") -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise place.error(f"expected {what}, got {_kind(value)}")
    return value


def _list(value, place: _Place, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise place.error(f"expected {what}, got {_kind(value)}")
    return value


def _names(value, place: _Place, what: str) -> list[str]:
    """A list of names, or one name alone; `what` names one."""
    if isinstance(value, str):
        return [value]
    items = _list(value, place, f"a list of {what}s")
    return [_text(item, place.at(index), f"text ({_article(what)})") for index, item in enumerate(items)]


def _refuse_unknown_keys(raw: dict, known, place: _Place) -> None:
    unknown = [key for key in raw if key not in known]
    if unknown:
        raise place.error(f"unknown key(s) {_short(str(sorted(unknown)), 200)} (known: {', '.join(known)})")


def _count(value, place: _Place, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum == 1 else "a non-negative integer"
        raise place.error(f"expected {what}, got {_kind(value)}")
    return value


def _duration(value, place: _Place) -> float:
    try:
        seconds = parse_duration(_scalar(value, place, "a duration such as '500 ms' or '2 sec'"))
    except (ValueError, OverflowError) as error:
        raise place.error(_short(str(error), 200)) from None
    if not math.isfinite(seconds) or seconds > _MAX_INTEGER / 1000:
        raise place.error(f"the duration {_short(str(value))!r} is too long")
    return seconds


def _size(value, place: _Place) -> int:
    try:
        size = parse_size(_scalar(value, place, "a data size such as '10 KB' or '1 GB'"))
    except (ValueError, OverflowError) as error:
        raise place.error(_short(str(error), 200)) from None
    if size >= _MAX_INTEGER:
        raise place.error(f"the data size {_short(str(value))!r} is too large")
    return size


def _scalar(value, place: _Place, what: str):
    """A single value (not a list or mapping), of a length its parser reads quickly."""
    if isinstance(value, (list, dict)) or value is None:
        raise place.error(f"expected {what}, got {_kind(value)}")
    if isinstance(value, str) and len(value) > 100:
        raise place.error(f"expected {what}, got {_kind(value)}")
    return value


def _article(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"
