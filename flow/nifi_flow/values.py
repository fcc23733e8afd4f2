"""NiFi's notation for durations ("5 sec", "30 mins", "100 millis") and data sizes
("1 KB", "10 MB"), booleans and numbers, read and written: what a property's text
means in NiFi, and the text NiFi reads back for a Custody value. Pure functions;
each raises ValueError saying what NiFi accepts."""

from __future__ import annotations

import re

from ..units import parse_duration, parse_size

# NiFi's FormatUtils: a number, optional space, a unit (case-insensitive), which
# `flow.units` reads (it knows each of NiFi's units); NiFi's DataUnit: B, KB, MB, GB, TB,
# binary multiples.
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB)\s*$", re.IGNORECASE)
# A #{parameter} reference, as NiFi and Custody both write it.
PARAMETER_REFERENCE = re.compile(r"#\{([^}]*)\}")


def nifi_duration_s(text: str) -> float:
    """Seconds of a NiFi time period ("5 sec", "1 min", "250 millis")."""
    try:
        if not _DURATION.match(str(text)):
            raise ValueError("no unit")
        return parse_duration(text)
    except ValueError:
        raise ValueError(
            f"expected a NiFi time period such as '5 sec', '1 min' or '100 millis', got {text!r}"
        ) from None


def nifi_size_bytes(text: str) -> int:
    """Bytes of a NiFi data size ("0 B", "1 KB", "10 MB")."""
    if not _SIZE.match(str(text)):
        raise ValueError(f"expected a NiFi data size such as '0 B', '1 KB' or '10 MB', got {text!r}")
    return parse_size(text)


def nifi_boolean(text) -> bool:
    if isinstance(text, bool):
        return text
    lowered = str(text).strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"expected true or false, got {text!r}")
    return lowered == "true"


def nifi_integer(text) -> int:
    if isinstance(text, bool):
        raise ValueError(f"expected a whole number, got {text!r}")
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValueError(f"expected a whole number, got {text!r}") from None


def duration_text(seconds: float) -> str:
    """Custody's and NiFi's common notation for a duration: whole minutes, seconds or
    milliseconds ("5 min", "30 sec", "250 ms")."""
    milliseconds = round(seconds * 1000)
    if milliseconds % 1000:
        return f"{milliseconds} ms"
    whole = milliseconds // 1000
    if whole and whole % 3600 == 0:
        return f"{whole // 3600} hour"
    if whole and whole % 60 == 0:
        return f"{whole // 60} min"
    return f"{whole} sec"


def size_text(size: int) -> str:
    """Custody's and NiFi's common notation for a data size: the largest unit that
    divides it ("1 KB", "10 MB", "100 B")."""
    for unit, factor in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if size and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def has_parameter(value) -> bool:
    return isinstance(value, str) and PARAMETER_REFERENCE.search(value) is not None
