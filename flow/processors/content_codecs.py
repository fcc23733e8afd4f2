"""CryptographicHashContent and EncodeContent: a digest of each FlowFile's content into
an attribute, and the content encoded to or decoded from base64, base32 or hex, both
streamed a chunk at a time, as NiFi's processors of those names.

CryptographicHashContent puts the lowercase hex digest of the content in the attribute
`content_<algorithm>`, named by NiFi's name of the algorithm (content_SHA-256). The
algorithms are NiFi's allowable values, computed by hashlib: BLAKE2-160 to BLAKE2-512
are BLAKE2b with a digest of 20 to 64 bytes, as in NiFi. One this Python's hashlib
lacks (MD2 always; SHA-512/224 and SHA-512/256 where OpenSSL has none) is refused when
the flow is loaded. With `fail_when_empty`, an empty content goes to `failure`.

EncodeContent, as NiFi's (commons-codec's streams):
- encoding base64 and base32 on one line by default; with line_output_mode
  MULTIPLE_LINES each line holds `encoded_line_length` characters rounded down to a
  whole block (4 for base64, 8 for base32; NiFi's documentation says 4 for both, its
  codec rounds base32 to 8), and every line, the last included, ends with "\\n"; a
  length shorter than a block writes one line with no "\\n". hex is uppercase.
- decoding is lenient where NiFi's is: base64 takes the standard and the URL-safe
  alphabets, whitespace anywhere, missing padding, and stops at the first "="; base32
  takes upper and lower case and whitespace; a trailing group too short to hold a byte
  is dropped. A byte outside the alphabet (and whitespace) sends the FlowFile to
  `failure`; so does, for hex, any character but a hex digit (either case), or an odd count of them.

Ours: a FlowFile sent to `failure` is penalized, the reason in `hash.error` or
`encode.error`; content that cannot be read goes there through `content_failures`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..errors import ExpressionError, UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..session import ProcessSession

# A multiple of 3 and of 5, so that every chunk but the last encodes to whole blocks.
CHUNK = 15 << 16
BATCH = 16
SUCCESS, FAILURE = "success", "failure"
HASH_ERROR_ATTRIBUTE = "hash.error"
ENCODE_ERROR_ATTRIBUTE = "encode.error"
ENCODE, DECODE = "Encode", "Decode"
BASE64, BASE32, HEX = "base64", "base32", "hex"
SINGLE_LINE, MULTIPLE_LINES = "SINGLE_LINE", "MULTIPLE_LINES"
LINE_SEPARATOR = b"\n"
WHITESPACE = b" \t\r\n"


class Hash(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


# NiFi's names of the algorithms, with how hashlib makes each.
HASH_ALGORITHMS: dict[str, Callable[[], Hash]] = {
    "MD2": functools.partial(hashlib.new, "md2"),
    "MD5": hashlib.md5,
    "SHA-1": hashlib.sha1,
    "SHA-224": hashlib.sha224,
    "SHA-256": hashlib.sha256,
    "SHA-384": hashlib.sha384,
    "SHA-512": hashlib.sha512,
    "SHA-512/224": functools.partial(hashlib.new, "sha512_224"),
    "SHA-512/256": functools.partial(hashlib.new, "sha512_256"),
    "SHA3-224": hashlib.sha3_224,
    "SHA3-256": hashlib.sha3_256,
    "SHA3-384": hashlib.sha3_384,
    "SHA3-512": hashlib.sha3_512,
    "BLAKE2-160": functools.partial(hashlib.blake2b, digest_size=20),
    "BLAKE2-256": functools.partial(hashlib.blake2b, digest_size=32),
    "BLAKE2-384": functools.partial(hashlib.blake2b, digest_size=48),
    "BLAKE2-512": functools.partial(hashlib.blake2b, digest_size=64),
}


def hash_available(algorithm: str) -> bool:
    """Whether this Python's hashlib computes `algorithm` (one of NiFi's names)."""
    try:
        HASH_ALGORITHMS[algorithm]()
    except (KeyError, ValueError):
        return False
    return True


def hash_attribute(algorithm: str) -> str:
    return f"content_{algorithm}"


class Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


def digest(algorithm: str, source: Source) -> str:
    """The lowercase hex digest of what `source` yields, read a chunk at a time."""
    hasher = HASH_ALGORITHMS[algorithm]()
    while chunk := source.read(CHUNK):
        hasher.update(chunk)
    return hasher.hexdigest()


class CryptographicHashContent(Processor):
    type_name = "CryptographicHashContent"
    description = (
        "Puts the hex digest of each FlowFile's content, streamed, in the attribute content_<algorithm>, as NiFi's "
        "CryptographicHashContent."
    )
    properties = (
        PropertyDescriptor(
            "fail_when_empty",
            "boolean",
            default=False,
            description="send a FlowFile with empty content to failure instead of hashing it",
        ),
        PropertyDescriptor(
            "hash_algorithm",
            "choice",
            default="SHA-256",
            choices=tuple(HASH_ALGORITHMS),
            description="NiFi's name of the algorithm, which names the attribute (content_SHA-256); one this "
            "Python's hashlib lacks is refused",
        ),
    )
    relationships = (SUCCESS, FAILURE)

    @classmethod
    def validate(cls, properties, dynamic):
        algorithm = properties.get("hash_algorithm")
        if algorithm is not None and not hash_available(algorithm):
            usable = ", ".join(name for name in HASH_ALGORITHMS if hash_available(name))
            return [("hash_algorithm", f"this Python's hashlib has no {algorithm}; choose one of {usable}")]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        algorithm = context["hash_algorithm"]
        unreadable = ContentFailures(self.id, context, session)
        for flowfile in session.get_batch(BATCH):
            if context["fail_when_empty"] and flowfile.size == 0:
                context.limited_log.warning(
                    "empty", "%s: %s goes to failure: its content is empty", self.id, flowfile.id
                )
                flowfile = session.put_attribute(flowfile, HASH_ERROR_ATTRIBUTE, "the content is empty")
                session.transfer(session.penalize(flowfile), FAILURE)
                continue
            try:
                with session.read(flowfile) as stream:
                    value = digest(algorithm, stream)
            except UnreadableContent as error:
                unreadable.set_aside(flowfile, error)
                continue
            session.transfer(session.put_attribute(flowfile, hash_attribute(algorithm), value), SUCCESS)
        unreadable.log()


# -- encoding and decoding ----------------------------------------------------------


class DecodeError(ValueError):
    """The content is not in the encoding; the message says why."""


class _Lines:
    """Writes encoded text to `sink` in lines of `length` characters, each ending with
    "\\n" (length 0: one line, no separator)."""

    def __init__(self, sink: Sink, length: int):
        self._sink = sink
        self._length = length
        self._column = 0

    def write(self, text: bytes) -> None:
        if not self._length:
            self._sink.write(text)
            return
        pieces = []
        start = 0
        while start < len(text):
            take = min(self._length - self._column, len(text) - start)
            pieces.append(text[start : start + take])
            start += take
            self._column += take
            if self._column == self._length:
                pieces.append(LINE_SEPARATOR)
                self._column = 0
        self._sink.write(b"".join(pieces))

    def close(self) -> None:
        if self._length and self._column:
            self._sink.write(LINE_SEPARATOR)


def encode(encoding: str, line_length: int, source: Source, sink: Sink) -> None:
    """Encode what `source` yields into `sink`; `line_length` 0 writes one line."""
    if encoding == HEX:
        while chunk := source.read(CHUNK):
            sink.write(chunk.hex().upper().encode("ascii"))
        return
    block = 4 if encoding == BASE64 else 8
    lines = _Lines(sink, line_length // block * block)
    encoder = base64.b64encode if encoding == BASE64 else base64.b32encode
    while chunk := source.read(CHUNK):
        lines.write(encoder(chunk))
    lines.close()


_BASE64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_="
_BASE32_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz234567="
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_URL_SAFE = bytes.maketrans(b"-_", b"+/")


def _check_alphabet(chunk: bytes, alphabet: bytes, name: str, offset: int) -> None:
    stray = chunk.translate(None, alphabet)
    if stray:
        position = offset + chunk.index(stray[:1])
        raise DecodeError(f"not {name}: byte {stray[0]:#04x} at offset {position} is outside its alphabet")


def _decode_blocks(encoding: str, source: Source, sink: Sink) -> None:
    """base64 or base32: decode whole blocks as they come, the rest at the end."""
    base64_ = encoding == BASE64
    block = 4 if base64_ else 8
    alphabet = (_BASE64_ALPHABET if base64_ else _BASE32_ALPHABET) + WHITESPACE
    pending = b""
    ended = False  # past the first "=": the rest is checked, not decoded
    offset = 0
    while chunk := source.read(CHUNK):
        _check_alphabet(chunk, alphabet, encoding, offset)
        offset += len(chunk)
        if ended:
            continue
        text = chunk.translate(None, WHITESPACE)
        text = text.translate(_URL_SAFE) if base64_ else text.upper()
        pad = text.find(b"=")
        if pad >= 0:
            text, ended = text[:pad], True
        pending += text
        whole = len(pending) // block * block
        sink.write(_decode_whole(base64_, pending[:whole]))
        pending = pending[whole:]
    sink.write(_decode_tail(base64_, pending))


def _decode_whole(base64_: bool, text: bytes) -> bytes:
    if not text:
        return b""
    try:
        return base64.b64decode(text, validate=True) if base64_ else base64.b32decode(text)
    except (binascii.Error, ValueError) as error:
        raise DecodeError(f"cannot decode: {error}") from None


def _decode_tail(base64_: bool, text: bytes) -> bytes:
    """A last group shorter than a block: the whole bytes its bits hold (commons-codec's
    lenient decoding drops the bits left over)."""
    if not text:
        return b""
    alphabet = (
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        if base64_
        else b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
    )
    width = 6 if base64_ else 5
    value = 0
    for character in text:
        value = value << width | alphabet.index(character)
    bits = len(text) * width
    count = bits // 8
    return (value >> (bits - count * 8)).to_bytes(count, "big") if count else b""


def _decode_hex(source: Source, sink: Sink) -> None:
    pending = b""
    offset = 0
    while chunk := source.read(CHUNK):
        _check_alphabet(chunk, _HEX_DIGITS, "hex", offset)
        offset += len(chunk)
        pending += chunk
        whole = len(pending) // 2 * 2
        sink.write(bytes.fromhex(pending[:whole].decode("ascii")))
        pending = pending[whole:]
    if pending:
        raise DecodeError(f"not hex: an odd number of digits ({offset})")


def decode(encoding: str, source: Source, sink: Sink) -> None:
    """Decode what `source` yields into `sink`. Raises DecodeError."""
    if encoding == HEX:
        _decode_hex(source, sink)
    else:
        _decode_blocks(encoding, source, sink)


class EncodeContent(Processor):
    type_name = "EncodeContent"
    description = (
        "Encodes each FlowFile's content to base64, base32 or hex, or decodes it, streamed, as NiFi's EncodeContent."
    )
    properties = (
        PropertyDescriptor("mode", "choice", default=ENCODE, choices=(ENCODE, DECODE)),
        PropertyDescriptor("encoding", "choice", default=BASE64, choices=(BASE64, BASE32, HEX)),
        PropertyDescriptor(
            "line_output_mode",
            "choice",
            default=SINGLE_LINE,
            choices=(SINGLE_LINE, MULTIPLE_LINES),
            description="encoding base64 or base32: one line, or lines of encoded_line_length",
        ),
        PropertyDescriptor(
            "encoded_line_length",
            "expression",
            default="76",
            description="characters a line holds with MULTIPLE_LINES, rounded down to a whole block (4 for base64, "
            "8 for base32); an expression, evaluated for each FlowFile",
        ),
    )
    relationships = (SUCCESS, FAILURE)

    @classmethod
    def validate(cls, properties, dynamic):
        length = properties.get("encoded_line_length")
        if length is not None and length.is_literal and _line_length(length.evaluate()) is None:
            return [("encoded_line_length", f"expected a positive integer, got {length.text!r}")]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        encoding = context["encoding"]
        encoding_mode = context["mode"] == ENCODE
        lines = encoding_mode and encoding != HEX and context["line_output_mode"] == MULTIPLE_LINES
        unreadable = ContentFailures(self.id, context, session)
        for flowfile in session.get_batch(BATCH):
            length = 0
            if lines:
                try:
                    text = context["encoded_line_length"].evaluate(flowfile)
                except ExpressionError as error:
                    self._fail(context, session, flowfile, f"encoded_line_length: {error}")
                    continue
                found = _line_length(text)
                if found is None:
                    self._fail(context, session, flowfile, f"encoded_line_length is {text!r}, not a positive integer")
                    continue
                length = found
            try:
                if encoding_mode:
                    flowfile = session.transform(flowfile, functools.partial(encode, encoding, length))
                else:
                    flowfile = session.transform(flowfile, functools.partial(decode, encoding))
            except DecodeError as error:
                self._fail(context, session, flowfile, str(error))
                continue
            except UnreadableContent as error:
                unreadable.set_aside(flowfile, error)
                continue
            session.transfer(flowfile, SUCCESS)
        unreadable.log()

    def _fail(self, context: ProcessContext, session: ProcessSession, flowfile, reason: str) -> None:
        context.limited_log.warning("failure", "%s: %s goes to failure: %s", self.id, flowfile.id, reason)
        flowfile = session.put_attribute(flowfile, ENCODE_ERROR_ATTRIBUTE, reason)
        session.transfer(session.penalize(flowfile), FAILURE)


def _line_length(text: str) -> int | None:
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None
