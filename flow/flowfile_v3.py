"""NiFi's FlowFile Stream, version 3 (`application/flowfile-v3`): FlowFiles with their
attributes and content, one after another in one byte stream, as NiFi's ListenHTTP,
InvokeHTTP, MergeContent and UnpackContent exchange them. The format is NiFi's
(`FlowFilePackagerV3`); this module writes and reads it.

Each FlowFile, byte by byte (every number big-endian):

    offset  size  what
    0       7     the magic "NiFiFF3" (ASCII)
    7       L     the number of attributes, a field length (below)
    ...           per attribute: its key, then its value, each a string (below)
    ...     8     the content's length in bytes, a signed 64-bit integer
    ...     n     the content

A *field length* is 2 bytes when it is below 65,535 (0xFFFF); otherwise the 2 bytes
0xFF 0xFF and then the length in 4 bytes (a signed 32-bit integer). A *string* is its
UTF-8 bytes' field length, then those bytes. The stream ends where a FlowFile would
begin: zero bytes there is a clean end; anything else must be a whole FlowFile.

Checked against NiFi 2.3.0's own packager: tests/unit/flow/samples/nifi-2.3.0.flowfilev3
was written by it (the Java beside it), reads back here, and writes again byte for
byte; NiFi's unpackager reads what this module writes.

`read_stream` reads a stream FlowFile by FlowFile and refuses a damaged one with
`FlowFileStreamError` (a wrong magic, a cut, a negative or oversized length, an
attribute that is not UTF-8), saying at which byte; a caller that must keep all or
nothing (ListenHTTP) reads the whole stream before it keeps any of it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from typing import BinaryIO, NamedTuple

MAGIC = b"NiFiFF3"
MIME_TYPE = "application/flowfile-v3"
_SHORT_LIMIT = 0xFFFF
# A content longer than this is refused before it is read (NiFi's own limit is a long;
# a caller bounds the whole stream anyway).
MAX_CONTENT_DEFAULT = 1 << 40


class FlowFileStreamError(ValueError):
    """A FlowFile stream that cannot be read; `offset` is the byte where it goes wrong."""

    def __init__(self, message: str, offset: int):
        super().__init__(f"FlowFile stream v3, at byte {offset}: {message}")
        self.offset = offset


class PackagedFlowFile(NamedTuple):
    attributes: dict[str, str]
    content: bytes


def _field_length(length: int) -> bytes:
    if length < _SHORT_LIMIT:
        return struct.pack(">H", length)
    return b"\xff\xff" + struct.pack(">i", length)


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _field_length(len(data)) + data


def header(attributes: Mapping[str, str], content_length: int) -> bytes:
    """The bytes of one FlowFile that come before its content. NiFi's reader refuses a
    FlowFile with no attributes ("flow files cannot have zero attributes"), so none is
    written (every FlowFile has at least its filename)."""
    if not attributes:
        raise ValueError("a FlowFile in a v3 stream needs at least one attribute: NiFi refuses one with none")
    parts = [MAGIC, _field_length(len(attributes))]
    for key, value in attributes.items():
        parts += [_string(key), _string(value)]
    parts.append(struct.pack(">q", content_length))
    return b"".join(parts)


def encode(flowfiles: list[tuple[Mapping[str, str], bytes]]) -> bytes:
    """A stream of `flowfiles` (attributes, content)."""
    return b"".join(header(attributes, len(content)) + content for attributes, content in flowfiles)


class _Reader:
    def __init__(self, stream: BinaryIO):
        self.stream, self.offset = stream, 0

    def take(self, size: int, what: str) -> bytes:
        data = self.stream.read(size) if size else b""
        while len(data) < size:
            more = self.stream.read(size - len(data))
            if not more:
                raise FlowFileStreamError(f"cut short in {what} ({len(data)} of {size} bytes)", self.offset + len(data))
            data += more
        self.offset += size
        return data

    def field_length(self, what: str) -> int:
        (length,) = struct.unpack(">H", self.take(2, what))
        if length < _SHORT_LIMIT:
            return length
        at = self.offset
        (length,) = struct.unpack(">i", self.take(4, what))
        if length < 0:
            raise FlowFileStreamError(f"{what} is negative ({length})", at)
        return length

    def string(self, what: str, limit: int) -> str:
        at = self.offset
        length = self.field_length(f"the length of {what}")
        if length > limit:
            raise FlowFileStreamError(f"{what} is {length} bytes, more than the {limit} allowed", at)
        data = self.take(length, what)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise FlowFileStreamError(f"{what} is not UTF-8 ({error.reason})", at + 2) from None


def read_stream(
    stream: BinaryIO, *, max_content: int = MAX_CONTENT_DEFAULT, max_attribute_bytes: int = 1 << 20
) -> Iterator[PackagedFlowFile]:
    """The FlowFiles of `stream`, in order. Raises `FlowFileStreamError` where the stream
    is damaged (the FlowFiles before it have been yielded: a caller that keeps all or
    nothing collects them first)."""
    reader = _Reader(stream)
    index = 0
    while True:
        at = reader.offset
        first = stream.read(1)
        if not first:
            return
        reader.offset += 1
        magic = first + reader.take(len(MAGIC) - 1, "the magic header")
        if magic != MAGIC:
            raise FlowFileStreamError(f"FlowFile {index} does not start with {MAGIC!r} but {magic!r}", at)
        count = reader.field_length("the number of attributes")
        attributes: dict[str, str] = {}
        for number in range(count):
            key = reader.string(f"the key of attribute {number} of FlowFile {index}", max_attribute_bytes)
            attributes[key] = reader.string(f"the value of attribute {key!r} of FlowFile {index}", max_attribute_bytes)
        at = reader.offset
        (length,) = struct.unpack(">q", reader.take(8, "the content's length"))
        if length < 0 or length > max_content:
            raise FlowFileStreamError(
                f"the content of FlowFile {index} is {length} bytes, allowed 0 to {max_content}", at
            )
        yield PackagedFlowFile(attributes, reader.take(length, f"the content of FlowFile {index}"))
        index += 1
