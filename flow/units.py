"""Parsing of durations ("500 ms", "1 sec", "2 min") and data sizes ("10 KB", "1 GB")."""

from __future__ import annotations

import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
# Custody's own forms (a bare number is seconds; "msec") and every unit of NiFi's
# FormatUtils, so that a duration written for NiFi means the same here.
_DURATION_UNITS = {
    "": 1.0,
    "ns": 1e-9,
    "nano": 1e-9,
    "nanos": 1e-9,
    "nanosecond": 1e-9,
    "nanoseconds": 1e-9,
    "micro": 1e-6,
    "micros": 1e-6,
    "microsecond": 1e-6,
    "microseconds": 1e-6,
    "ms": 0.001,
    "milli": 0.001,
    "millis": 0.001,
    "msec": 0.001,
    "millisecond": 0.001,
    "milliseconds": 0.001,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "m": 60.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
    "w": 604800.0,
    "wk": 604800.0,
    "wks": 604800.0,
    "week": 604800.0,
    "weeks": 604800.0,
}
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "kb": 1024,
    "k": 1024,
    "mb": 1024**2,
    "m": 1024**2,
    "gb": 1024**3,
    "g": 1024**3,
    "tb": 1024**4,
    "t": 1024**4,
}


def parse_duration(value) -> float:
    """Seconds. Raises ValueError with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as '500 ms' or '2 sec', got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"a duration cannot be negative: {value!r}")
        return float(value)
    match = _DURATION.match(str(value))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _DURATION_UNITS:
        raise ValueError(f"expected a duration such as '500 ms', '2 sec' or '1 min', got {value!r}")
    return float(match.group(1)) * _DURATION_UNITS[unit]


def parse_size(value) -> int:
    """Bytes. Raises ValueError with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError(f"expected a data size such as '10 KB' or '1 GB', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a data size cannot be negative: {value!r}")
        return value
    match = _DURATION.match(str(value))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _SIZE_UNITS:
        raise ValueError(f"expected a data size such as '10 KB', '1 MB' or '1 GB', got {value!r}")
    return int(float(match.group(1)) * _SIZE_UNITS[unit])
