"""Reading one HTTP request of ListenHTTP (`flow.processors.http`): its header block,
checked whole; its body, in pieces and never past the size limit (Content-Length or
chunked); and what its headers give: attributes, and whether they carry the Bearer
token. A request that cannot be taken raises `Refusal` with the status to answer, or
`ClientGone`."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable

READ_PIECE = 64 * 1024
MAX_CHUNK_LINE = 4096  # a chunk-size line, extensions included
MAX_TRAILER_LINES = 100
MAX_CONTENT_LENGTH_DIGITS = 18  # more is over any limit; int() of a very long text is refused
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")
# RFC 9110 5.1 and 5.5: a field name is a token; a field value holds visible characters,
# spaces, tabs and obs-text (bytes 0x80-0xFF), never CR, LF, NUL nor another control.
_FIELD_NAME = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")

# Attributes that steer what FetchFile reads and PutFile writes (NiFi's core attributes
# filename, path and absolute.path): a header sets one only when the flow lists it in
# `reserved_header_attributes`. `uuid` is the FlowFile's identity: never from a header.
RESERVED_ATTRIBUTES = ("filename", "path", "absolute.path")
NEVER_FROM_HEADERS = "uuid"


class Refusal(Exception):
    """A request answered with `status` and not taken."""

    def __init__(self, status: int, message: str, headers: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


class ClientGone(Exception):
    """The client closed its side before its request was complete: nobody to answer."""


# -- the header block -------------------------------------------------------------------


def check_header_lines(lines: list[bytes]) -> None:
    """Refuse (400) a header block unless each of its `lines` (as read, line ending
    included, the blank line that ends the block left out) is one field line of RFC
    9112 section 5: `name:value`, the name a token with no space before the colon.

    http.server hands the block to Python's email parser, which takes the first line
    that is not a header for the start of a message body and hides every header after
    it (a MissingHeaderBodySeparatorDefect): a request whose Content-Length came after a
    malformed line was read as an empty body and answered 200. The parser also splits
    lines at a lone CR, so that one line here could be two headers there. A block is
    therefore taken only when every line parses, and refused whole otherwise."""
    for number, line in enumerate(lines, start=1):
        text = line[:-2] if line.endswith(b"\r\n") else line[:-1] if line.endswith(b"\n") else line
        if text[:1] in (b" ", b"\t"):
            raise _bad_header(
                number,
                "starts with white space (a folded continuation line, which RFC 9112 "
                "5.2 lets a server refuse): send each header on one line",
            )
        name, colon, value = text.partition(b":")
        if not colon:
            raise _bad_header(number, "has no colon: send headers as Name: value")
        if not _FIELD_NAME.fullmatch(name):
            raise _bad_header(
                number,
                "has a name that is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~; no space before the colon)",
            )
        if not _FIELD_VALUE.fullmatch(value):
            raise _bad_header(
                number,
                "has a control character in its value (a CR, NUL or other; only tabs and visible characters are taken)",
            )


def _bad_header(number: int, problem: str) -> Refusal:
    return Refusal(400, f"header line {number} {problem}; the request was not taken")


class HeaderBlock:
    """Stands in for a request's `rfile` while http.server reads its header lines: keeps
    them, and at the blank line that ends the block checks them all
    (`check_header_lines`), then calls `complete` (before any body byte is read). A
    block cut short (the client closed its side first) raises `ClientGone`: http.server
    would take what came for the whole block."""

    def __init__(self, rfile, complete: Callable[[], None]):
        self._rfile, self._complete = rfile, complete
        self.lines: list[bytes] = []

    def readline(self, limit: int = -1) -> bytes:
        line = self._rfile.readline(limit)
        if line in (b"\r\n", b"\n"):
            check_header_lines(self.lines)
            self._complete()
        elif not line.endswith(b"\n") and (limit < 0 or len(line) < limit):
            raise ClientGone()  # the end of the stream before the end of the line
        else:
            self.lines.append(line)
        return line


# -- reading a request's body ---------------------------------------------------------


def read_body(rfile, headers, limit: int) -> bytes:
    """The body of a request whose `headers` were read from `rfile`, at most `limit`
    bytes of it in memory. Raises `Refusal` (400, 413, 501) or `ClientGone`."""
    encodings = headers.get_all("Transfer-Encoding") or []
    lengths = headers.get_all("Content-Length") or []
    if encodings:
        if lengths:
            raise Refusal(400, "both Transfer-Encoding and Content-Length: send one of them")
        if ",".join(encodings).strip().lower() != "chunked":
            raise Refusal(501, "the only Transfer-Encoding taken is chunked (without other codings)")
        return read_chunked(rfile, limit)
    if not lengths:
        return b""
    body = bytearray()
    _read_into(rfile, body, content_length(lengths, limit))
    return bytes(body)


def content_length(values: list[str], limit: int) -> int:
    """The length the Content-Length headers `values` give: `Refusal` 400 unless they are
    one decimal number of bytes (the same, if repeated), 413 when over `limit`."""
    texts = {value.strip() for value in values}
    if len(texts) != 1:
        raise Refusal(400, "Content-Length headers that disagree: send one")
    text = texts.pop()
    if not _DIGITS.fullmatch(text):
        raise Refusal(400, "Content-Length must be the body's size in bytes, a decimal number")
    digits = text.lstrip("0") or "0"
    if len(digits) > MAX_CONTENT_LENGTH_DIGITS or int(digits) > limit:
        raise _too_large(limit)
    return int(digits)


def _too_large(limit: int) -> Refusal:
    return Refusal(413, f"a body is at most {limit} bytes (max_request_size)")


def read_chunked(rfile, limit: int) -> bytes:
    """A chunked body (RFC 9112 7.1), trailers read and dropped; `Refusal` (400, 413)."""
    body = bytearray()
    while True:
        size = _chunk_size(_line(rfile, MAX_CHUNK_LINE, "a chunk-size line"))
        if size == 0:
            break
        if len(body) + size > limit:
            raise _too_large(limit)
        _read_into(rfile, body, size)
        if _line(rfile, 2, "the end of a chunk") not in (b"\r\n", b"\n"):
            raise Refusal(400, "a chunk longer than its size line says")
    for _ in range(MAX_TRAILER_LINES):
        if _line(rfile, MAX_CHUNK_LINE, "a trailer line") in (b"\r\n", b"\n"):
            return bytes(body)
    raise Refusal(400, f"more than {MAX_TRAILER_LINES} trailer lines")


def _chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    if not _HEX.fullmatch(text) or len(text) > 16:
        raise Refusal(400, "a chunk-size line must start with the chunk's size in hexadecimal")
    return int(text, 16)


def _line(rfile, limit: int, what: str) -> bytes:
    line = rfile.readline(limit + 1)
    if not line.endswith(b"\n"):
        if len(line) > limit:
            raise Refusal(400, f"{what} over {limit} bytes")
        raise ClientGone()
    return line


def _read_into(rfile, body: bytearray, count: int) -> None:
    while count > 0:
        piece = rfile.read(min(count, READ_PIECE))
        if not piece:
            raise ClientGone()
        body += piece
        count -= len(piece)


# -- what a request's headers give ----------------------------------------------------


def header_attributes(
    headers, pattern: re.Pattern, reserved_allowed: frozenset[str] = frozenset()
) -> tuple[dict[str, str], list[str]]:
    """The attributes the headers whose names fully match `pattern` give (see
    `flow.processors.http`), and the attributes refused: one in the processor's own
    `http.` namespace, `uuid`, or one of `RESERVED_ATTRIBUTES` not in `reserved_allowed`."""
    attributes, refused = {}, []
    for name, value in headers.items():
        if not pattern.fullmatch(name):
            continue
        attribute = _attribute_name(name.lower())
        if not attribute:
            continue
        if (
            attribute == NEVER_FROM_HEADERS
            or attribute.startswith("http.")
            or (attribute in RESERVED_ATTRIBUTES and attribute not in reserved_allowed)
        ):
            refused.append(attribute)
        else:
            attributes[attribute] = value
    return attributes, refused


def _attribute_name(header: str) -> str:
    if header.startswith("x-attr-"):
        return header[len("x-attr-") :]
    return "mime.type" if header == "content-type" else header


def authorized(headers, token: bytes) -> bool:
    """Whether `headers` carry exactly one `Authorization: Bearer <token>`."""
    values = headers.get_all("Authorization") or []
    if len(values) != 1:
        return False
    scheme, _, presented = values[0].strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    # Header values are decoded as latin-1: encoding them back gives the bytes sent.
    return hmac.compare_digest(presented.strip().encode("latin-1", "replace"), token)
