"""HTTP range requests (RFC 9110, section 14) over content of a known size, pure.

    byte_range = parse_range(request.headers.get("range"), size)
    None                      -> 200, the whole content
    ByteRange(start, end)     -> 206, Content-Range: bytes start-end/size
    raises RangeNotSatisfiable -> 416, Content-Range: bytes */size

One range is served. As RFC 9110 allows, a header the server does not act on is
ignored (the whole content is sent): another unit than bytes, a malformed or
inverted range, and a request for several ranges (multipart/byteranges is not
offered). A position of any number of digits is read: one past 64 bits is past any
content's end (a first byte there is 416, a last byte there is the content's end),
never converted whole (Python refuses to convert more than 4300 digits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RANGE = re.compile(r"^\s*([0-9]*)\s*-\s*([0-9]*)\s*$")
# A position of more digits than this is past any content's size (2**63 has 19).
_MAX_DIGITS = 19
_PAST_ANY_SIZE = 1 << 64


class RangeNotSatisfiable(Exception):
    def __init__(self, header: str, size: int):
        super().__init__(f"range {header!r} is not satisfiable: the content is {size} bytes")
        self.size = size


@dataclass(frozen=True, slots=True)
class ByteRange:
    start: int
    end: int  # inclusive, as in Content-Range

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.end}/{size}"


def parse_range(header: str | None, size: int) -> ByteRange | None:
    if not header:
        return None
    unit, _, ranges = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in ranges:
        return None
    match = _RANGE.match(ranges)
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.groups()
    if first == "":  # a suffix: the last `last` bytes
        wanted = _position(last)
        if wanted == 0 or size == 0:
            raise RangeNotSatisfiable(header, size)
        return ByteRange(max(0, size - wanted), size - 1)
    start = _position(first)
    if last and _position(last) < start:
        return None  # invalid: ignored
    if start >= size:
        raise RangeNotSatisfiable(header, size)
    return ByteRange(start, min(_position(last), size - 1) if last else size - 1)


def _position(digits: str) -> int:
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= _MAX_DIGITS else _PAST_ANY_SIZE
