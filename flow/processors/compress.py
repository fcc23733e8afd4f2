"""CompressContent: compresses or decompresses each FlowFile's content, streamed, as
NiFi's CompressContent.

Formats, with the `mime.type` set on compression, the extension `update_filename`
adds or removes, and what does the work:

    gzip           application/gzip             .gz   zlib (RFC 1952 members)
    bzip2          application/x-bzip2          .bz2  bz2
    xz-lzma2       application/x-xz             .xz   lzma (xz container, CRC-64 check)
    zstd           application/zstd             .zst  zstandard writes (frame with checksum);
                                                      pyarrow reads (zstandard's streaming
                                                      reader takes a cut frame for whole)
    lz4-framed     application/x-lz4-framed     .lz4  pyarrow (liblz4's frame format; its writer
                                                      links 64 KiB blocks and adds no checksum)
    snappy-framed  application/x-snappy-framed  .sz   the framing below, over pyarrow's raw
                                                      snappy blocks, checked with crc32c

The MIME types and extensions are NiFi's (its CompressContent source). Decompressing
with `use-mime-type-attribute` picks the format by `mime.type` as NiFi does
(application/gzip or x-gzip, bzip2 or x-bzip2, x-lz4-framed, x-snappy-framed, zstd),
plus application/x-xz, which NiFi's table lacks; a FlowFile without `mime.type` goes to
`failure`, one whose type names no format goes to `success` unchanged. That choice
picks what a compressed content is, so it is refused with mode `compress`.
`compression_level` is that of gzip (0-9), bzip2 (1-9, its block size in 100 kB), xz
(0-9) and zstd (1-22, zstd's own levels: NiFi's doubles its 0-9); lz4-framed and
snappy-framed take none, as in NiFi. A level outside the chosen format's range is
refused when the flow is loaded.

Every format is read and written in chunks of `CHUNK` (1 MB), never whole: a decoder
asks its library for at most a chunk of output at a time (a few bytes of zstd can
stand for gigabytes of zeros). gzip, bzip2 and xz contents may hold several streams
one after the other (as `cat a.gz b.gz` makes, and NiFi reads), and xz streams may be
followed by stream padding (NUL bytes, a multiple of four); anything else after the
last stream is refused. zstd and lz4 read concatenated frames and skippable frames.

Decompressing content that is not a whole stream of the format (a wrong magic number, a
corrupt block, a checksum that does not match, content cut short, trailing data, empty
content) sends the FlowFile to `failure` unchanged and penalized, the reason in
`compress.error` (NiFi only routes it; the attribute is ours). Empty content is a
stream of nothing only in snappy-framed, whose writers emit nothing for nothing.
Content that cannot be read at all goes to `failure` through `content_failures`;
storage that cannot be reached rolls the session back, as everywhere.

The snappy framing format (google/snappy's framing_format.txt), as written and read here:

    stream  = chunk*               the first chunk is the stream identifier
    chunk   = type:u8 length:u24le data[length]
    type ff   stream identifier: data is "sNaPpY" (length 6); it may appear again later
              (concatenated streams) and is checked each time
    type 00   compressed data: crc:u32le, then one raw snappy block (its preamble is the
              varint length of the uncompressed data, at most 65536 bytes)
    type 01   uncompressed data: crc:u32le, then at most 65536 bytes as they are
    type 02-7f  reserved, unskippable: refused
    type 80-fd  reserved, skippable: skipped
    type fe   padding: skipped
    crc     = masked CRC-32C (Castagnoli) of the uncompressed data:
              ((c >> 15) | (c << 17)) + 0xa282ead8, modulo 2**32

The writer emits the stream identifier, then each 64 KiB of content as a compressed
chunk, or as an uncompressed one when snappy saves less than an eighth of it.
"""

from __future__ import annotations

import bz2
import functools
import lzma
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import crc32c
import pyarrow
import zstandard

from ..errors import UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..session import ProcessSession

CHUNK = 1 << 20
BATCH = 16
ERROR_ATTRIBUTE = "compress.error"
MIME_TYPE = "mime.type"
FILENAME = "filename"
COMPRESS, DECOMPRESS = "compress", "decompress"
USE_MIME_TYPE = "use-mime-type-attribute"

# The snappy framing format (see the module docstring).
SNAPPY_STREAM_IDENTIFIER = b"\xff\x06\x00\x00sNaPpY"
SNAPPY_COMPRESSED, SNAPPY_UNCOMPRESSED, SNAPPY_PADDING, SNAPPY_IDENTIFIER = 0x00, 0x01, 0xFE, 0xFF
SNAPPY_MAX_DATA = 65536
SNAPPY_CRC_MASK_DELTA = 0xA282EAD8
_SNAPPY_HEADER = struct.Struct("<I")  # type in the low byte, length in the three high ones
_SNAPPY_CRC = struct.Struct("<I")
# The most a raw snappy block of SNAPPY_MAX_DATA bytes can take (snappy's MaxCompressedLength).
SNAPPY_MAX_BLOCK = 32 + SNAPPY_MAX_DATA + SNAPPY_MAX_DATA // 6
assert SNAPPY_STREAM_IDENTIFIER[:4] == _SNAPPY_HEADER.pack(SNAPPY_IDENTIFIER | 6 << 8)
assert _SNAPPY_HEADER.size == _SNAPPY_CRC.size == 4

GZIP_MAGIC = b"\x1f\x8b\x08"
BZIP2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
# zstd's and LZ4's skippable frames: magic 0x184D2A50 to 0x184D2A5F, little-endian.
_SKIPPABLE_TAIL = b"\x2a\x4d\x18"


class CorruptStream(ValueError):
    """The content is not a whole stream of the format; the message says why."""


class Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


@dataclass(frozen=True)
class Format:
    """A compression format: its `name` (the property's choice), the `extension` and
    `mime_type` NiFi gives it, the `levels` it takes (None: none), and its streamed
    `compress(source, sink, level)` and `decompress(source, sink)`, which raises
    `CorruptStream`."""

    name: str
    extension: str
    mime_type: str
    levels: range | None
    compress: Callable[[Source, Sink, int], None]
    decompress: Callable[[Source, Sink], None]


class _Input:
    """The content being decoded, read through a buffer (so that a decoder may read a
    4-byte header at a time) into which bytes can be put back (`unread`). An error of the
    content itself is remembered (`error`), so that an OSError it raised through a
    library is never taken for the library's verdict on the bytes."""

    def __init__(self, source: Source):
        self._source = source
        self._buffer = b""
        self._offset = 0  # of the next byte to read in `_buffer`
        self.error: BaseException | None = None
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes (all that is left with -1); b"" at the end."""
        if self._offset == len(self._buffer) and not self._fill(CHUNK if size < 0 else max(size, CHUNK)):
            return b""
        end = len(self._buffer) if size < 0 else min(len(self._buffer), self._offset + size)
        data = self._buffer[self._offset : end]
        self._offset = end
        return data

    def read_exactly(self, size: int) -> bytes:
        """`size` bytes, or fewer at the end of the content."""
        while len(self._buffer) - self._offset < size and self._fill(max(size, CHUNK)):
            pass
        return self.read(size)

    def unread(self, data: bytes) -> None:
        if data:
            self._buffer = data + self._buffer[self._offset :]
            self._offset = 0

    def skip_zeros(self) -> int:
        """Skip NUL bytes; how many there were."""
        count = 0
        while data := self.read(CHUNK):
            rest = data.lstrip(b"\0")
            count += len(data) - len(rest)
            if rest:
                self.unread(rest)
                break
        return count

    def _fill(self, size: int) -> bool:
        """Append up to `size` bytes of the content to what is left to read; False at its end."""
        try:
            data = self._source.read(size)
        except BaseException as error:
            self.error = error
            raise
        if not data:
            return False
        self._buffer = self._buffer[self._offset :] + data
        self._offset = 0
        return True

    def close(self) -> None:
        """pyarrow closes what it reads when done; the session closes the content."""


class _Output:
    """The new content, as pyarrow's compressing stream writes it (it closes what it
    writes to when done; the session closes the new content)."""

    def __init__(self, sink: Sink):
        self._sink = sink
        self.closed = False

    def write(self, data) -> int:
        self._sink.write(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


# -- the stream formats of the standard library ---------------------------------------


class _GzipMember:
    """zlib's inflater of one gzip member, with the interface of bz2's and lzma's
    decompressors (`needs_input`, `eof`, `unused_data`, a bounded `decompress`)."""

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(wbits=31)
        self.needs_input = True

    def decompress(self, data: bytes, max_length: int) -> bytes:
        inflater = self._inflater
        output = inflater.decompress(inflater.unconsumed_tail + data, max_length)
        self.needs_input = not inflater.unconsumed_tail and len(output) < max_length
        return output

    @property
    def eof(self) -> bool:
        return self._inflater.eof

    @property
    def unused_data(self) -> bytes:
        return self._inflater.unused_data


def _decode_streams(
    source: _Input,
    sink: Sink,
    name: str,
    magic: bytes,
    decoder: Callable[[], object],
    errors: tuple[type[BaseException], ...],
    padded: bool = False,
) -> None:
    """Decode the streams of `name` that fill the content, one after the other."""
    streams = 0
    while True:
        if padded and streams:
            padding = source.skip_zeros()
            if padding % 4:
                raise CorruptStream(f"{padding} bytes of {name} stream padding, not a multiple of 4")
        head = source.read_exactly(len(magic))
        if not head:
            if streams:
                return
            raise CorruptStream(f"the content is empty: no {name} stream")
        if head != magic:
            if streams:
                raise CorruptStream(f"trailing data after {name} stream {streams}: {_shown(head)}")
            raise CorruptStream(
                f"not {name}: the content starts with {_shown(head)}, not {name}'s magic {_shown(magic)}"
            )
        source.unread(head)
        _decode_stream(source, sink, name, decoder(), errors)
        streams += 1


def _decode_stream(source: _Input, sink: Sink, name: str, decoder, errors) -> None:
    while not decoder.eof:
        if decoder.needs_input:
            data = source.read(CHUNK)
            if not data:
                raise CorruptStream(f"truncated: the content ends inside a {name} stream")
        else:
            data = b""
        try:
            output = decoder.decompress(data, CHUNK)
        except errors as error:
            raise CorruptStream(f"corrupt {name} data: {error}") from None
        sink.write(output)
    source.unread(decoder.unused_data)


def _shown(data: bytes) -> str:
    return data[:8].hex(" ") + (" ..." if len(data) > 8 else "")


def _compress_with(compressor, source: Source, sink: Sink) -> None:
    while chunk := source.read(CHUNK):
        sink.write(compressor.compress(chunk))
    sink.write(compressor.flush())


def _gzip_compress(source: Source, sink: Sink, level: int) -> None:
    _compress_with(zlib.compressobj(level, zlib.DEFLATED, 31), source, sink)


def _gzip_decompress(source: Source, sink: Sink) -> None:
    _decode_streams(_Input(source), sink, "gzip", GZIP_MAGIC, _GzipMember, (zlib.error,))


def _bzip2_compress(source: Source, sink: Sink, level: int) -> None:
    _compress_with(bz2.BZ2Compressor(level), source, sink)


def _bzip2_decompress(source: Source, sink: Sink) -> None:
    _decode_streams(_Input(source), sink, "bzip2", BZIP2_MAGIC, bz2.BZ2Decompressor, (OSError, ValueError))


def _xz_compress(source: Source, sink: Sink, level: int) -> None:
    _compress_with(lzma.LZMACompressor(format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=level), source, sink)


def _xz_decompress(source: Source, sink: Sink) -> None:
    _decode_streams(
        _Input(source),
        sink,
        "xz",
        XZ_MAGIC,
        lambda: lzma.LZMADecompressor(format=lzma.FORMAT_XZ),
        (lzma.LZMAError,),
        padded=True,
    )


# -- zstd and LZ4: frames read by pyarrow -------------------------------------------------


def _zstd_compress(source: Source, sink: Sink, level: int) -> None:
    compressor = zstandard.ZstdCompressor(level=level, write_checksum=True).compressobj()
    _compress_with(compressor, source, sink)


def _lz4_compress(source: Source, sink: Sink, level: int) -> None:
    stream = pyarrow.CompressedOutputStream(_Output(sink), "lz4")
    try:
        while chunk := source.read(CHUNK):
            stream.write(chunk)
    finally:
        stream.close()


def _frames_decoder(name: str, codec: str, magic: bytes) -> Callable[[Source, Sink], None]:
    def decompress(source: Source, sink: Sink) -> None:
        content = _Input(source)
        head = content.read_exactly(4)
        if not head:
            raise CorruptStream(f"the content is empty: no {name} frame")
        if head != magic and not (len(head) == 4 and head[1:] == _SKIPPABLE_TAIL and head[0] & 0xF0 == 0x50):
            raise CorruptStream(
                f"not {name}: the content starts with {_shown(head)}, not {name}'s magic {_shown(magic)}"
            )
        content.unread(head)
        stream = pyarrow.CompressedInputStream(content, codec)
        try:
            while True:
                try:
                    output = stream.read(CHUNK)
                except (OSError, pyarrow.ArrowException) as error:
                    if content.error is not None:
                        raise content.error from None
                    if "runcated" in str(error):
                        raise CorruptStream(f"truncated: the content ends inside a {name} frame") from None
                    raise CorruptStream(f"corrupt {name} data: {error}") from None
                if not output:
                    return
                sink.write(output)
        finally:
            stream.close()

    return decompress


# -- snappy-framed --------------------------------------------------------------------


def snappy_masked_crc(data: bytes | memoryview) -> int:
    """The masked CRC-32C the snappy framing format stores for `data`."""
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + SNAPPY_CRC_MASK_DELTA) & 0xFFFFFFFF


def _snappy_chunk(kind: int, data: bytes) -> bytes:
    return _SNAPPY_HEADER.pack(kind | len(data) << 8) + data


def _snappy_compress(source: Source, sink: Sink, level: int) -> None:
    codec = pyarrow.Codec("snappy")
    sink.write(SNAPPY_STREAM_IDENTIFIER)
    while chunk := source.read(CHUNK):
        view = memoryview(chunk)
        framed = []
        for start in range(0, len(chunk), SNAPPY_MAX_DATA):
            piece = view[start : start + SNAPPY_MAX_DATA]
            crc = _SNAPPY_CRC.pack(snappy_masked_crc(piece))
            block = codec.compress(piece, asbytes=True)
            if len(block) < len(piece) - len(piece) // 8:
                framed.append(_snappy_chunk(SNAPPY_COMPRESSED, crc + block))
            else:
                framed.append(_snappy_chunk(SNAPPY_UNCOMPRESSED, crc + bytes(piece)))
        sink.write(b"".join(framed))


def _snappy_decompress(source: Source, sink: Sink) -> None:
    content = _Input(source)
    codec = pyarrow.Codec("snappy")
    offset = 0
    while header := content.read_exactly(4):
        if len(header) < 4:
            raise CorruptStream(f"truncated: the content ends inside the header of the chunk at byte {offset}")
        (word,) = _SNAPPY_HEADER.unpack(header)
        kind, length = word & 0xFF, word >> 8
        if offset == 0 and kind != SNAPPY_IDENTIFIER:
            raise CorruptStream(
                f"not snappy-framed: the content starts with {_shown(header)}, not the stream identifier "
                f"{_shown(SNAPPY_STREAM_IDENTIFIER)}"
            )
        where = f"the chunk of type {kind:#04x} at byte {offset}"
        if kind in (SNAPPY_COMPRESSED, SNAPPY_UNCOMPRESSED, SNAPPY_IDENTIFIER):
            most = {SNAPPY_COMPRESSED: 4 + SNAPPY_MAX_BLOCK, SNAPPY_UNCOMPRESSED: 4 + SNAPPY_MAX_DATA}.get(kind, 6)
            if length > most or (kind != SNAPPY_IDENTIFIER and length < 4):
                raise CorruptStream(f"corrupt snappy-framed data: {where} is {length} bytes long")
            data = content.read_exactly(length)
            if len(data) < length:
                raise CorruptStream(f"truncated: the content ends inside {where}")
            if kind == SNAPPY_IDENTIFIER:
                if data != SNAPPY_STREAM_IDENTIFIER[4:]:
                    raise CorruptStream(f"corrupt snappy-framed data: {where} is not the stream identifier")
            else:
                sink.write(_snappy_payload(codec, kind, data, where))
        elif kind < 0x80:
            raise CorruptStream(f"corrupt snappy-framed data: {where} has a reserved unskippable type")
        else:
            skipped = content.read_exactly(length) if length <= CHUNK else _skip(content, length)
            if len(skipped) < length:
                raise CorruptStream(f"truncated: the content ends inside {where}")
        offset += 4 + length


def _skip(content: _Input, length: int) -> bytes:
    """Read past `length` bytes a chunk at a time; a stand-in of their length (shorter
    if the content ends first)."""
    left = length
    while left:
        data = content.read(min(left, CHUNK))
        if not data:
            break
        left -= len(data)
    return bytes(length - left)


def _snappy_payload(codec, kind: int, data: bytes, where: str) -> bytes:
    (expected,) = _SNAPPY_CRC.unpack_from(data)
    if kind == SNAPPY_UNCOMPRESSED:
        payload = data[4:]
    else:
        size = _varint(data, 4)
        if size is None or size > SNAPPY_MAX_DATA:
            raise CorruptStream(f"corrupt snappy-framed data: {where} holds a bad snappy block length")
        try:
            payload = codec.decompress(data[4:], decompressed_size=size, asbytes=True)
        except (OSError, pyarrow.ArrowException) as error:
            raise CorruptStream(f"corrupt snappy-framed data: {where}: {error}") from None
    if snappy_masked_crc(payload) != expected:
        raise CorruptStream(f"corrupt snappy-framed data: CRC mismatch in {where}")
    return payload


def _varint(data: bytes, start: int) -> int | None:
    """The little-endian base-128 number at `start` (at most 32 bits), or None."""
    value = 0
    for shift, byte in zip(range(0, 35, 7), data[start : start + 5], strict=False):
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value if value < 1 << 32 else None
    return None


FORMATS: dict[str, Format] = {
    fmt.name: fmt
    for fmt in (
        Format("gzip", ".gz", "application/gzip", range(0, 10), _gzip_compress, _gzip_decompress),
        Format(
            "zstd",
            ".zst",
            "application/zstd",
            range(1, 23),
            _zstd_compress,
            _frames_decoder("zstd", "zstd", ZSTD_MAGIC),
        ),
        Format(
            "lz4-framed",
            ".lz4",
            "application/x-lz4-framed",
            None,
            _lz4_compress,
            _frames_decoder("lz4-framed", "lz4", LZ4_MAGIC),
        ),
        Format("snappy-framed", ".sz", "application/x-snappy-framed", None, _snappy_compress, _snappy_decompress),
        Format("bzip2", ".bz2", "application/x-bzip2", range(1, 10), _bzip2_compress, _bzip2_decompress),
        Format("xz-lzma2", ".xz", "application/x-xz", range(0, 10), _xz_compress, _xz_decompress),
    )
}

# mime.type -> format, for `use-mime-type-attribute` (NiFi's table, and application/x-xz).
FORMATS_BY_MIME_TYPE: dict[str, Format] = {
    "application/gzip": FORMATS["gzip"],
    "application/x-gzip": FORMATS["gzip"],
    "application/bzip2": FORMATS["bzip2"],
    "application/x-bzip2": FORMATS["bzip2"],
    "application/x-xz": FORMATS["xz-lzma2"],
    "application/zstd": FORMATS["zstd"],
    "application/x-lz4-framed": FORMATS["lz4-framed"],
    "application/x-snappy-framed": FORMATS["snappy-framed"],
}


def _compress(fmt: Format, level: int, source: Source, sink: Sink) -> None:
    fmt.compress(source, sink, level)


class CompressContent(Processor):
    type_name = "CompressContent"
    description = (
        "Compresses or decompresses each FlowFile's content (gzip, zstd, lz4-framed, snappy-framed, bzip2, "
        "xz-lzma2), streamed, and sets or removes mime.type, as NiFi's CompressContent."
    )
    properties = (
        PropertyDescriptor("mode", "choice", default=COMPRESS, choices=(COMPRESS, DECOMPRESS)),
        PropertyDescriptor(
            "compression_format",
            "choice",
            default=USE_MIME_TYPE,
            choices=(USE_MIME_TYPE, *FORMATS),
            description="use-mime-type-attribute (decompress only): the format mime.type names; a FlowFile "
            "without mime.type goes to failure, one whose type is no compression format passes to success",
        ),
        PropertyDescriptor(
            "compression_level",
            "integer",
            default=1,
            minimum=0,
            maximum=22,
            description="gzip 0-9, bzip2 1-9, xz-lzma2 0-9, zstd 1-22; lz4-framed and snappy-framed take none",
        ),
        PropertyDescriptor(
            "update_filename",
            "boolean",
            default=False,
            description="add the format's extension to filename when compressing, remove it when decompressing",
        ),
    )
    relationships = ("success", "failure")

    @classmethod
    def validate(cls, properties, dynamic):
        mode, name = properties.get("mode"), properties.get("compression_format")
        if mode == COMPRESS and name == USE_MIME_TYPE:
            return [
                (
                    "compression_format",
                    "use-mime-type-attribute picks the format a content is compressed in, for mode decompress; "
                    "name the format to compress with",
                )
            ]
        fmt = FORMATS.get(name or "")
        level = properties.get("compression_level")
        if mode == COMPRESS and fmt is not None and fmt.levels is not None and level not in fmt.levels:
            return [
                (
                    "compression_level",
                    f"{fmt.name} takes levels {fmt.levels.start} to {fmt.levels.stop - 1}, got {level}",
                )
            ]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        compressing = context["mode"] == COMPRESS
        chosen = context["compression_format"]
        level = context["compression_level"]
        rename = context["update_filename"]
        unreadable = ContentFailures(self.id, context, session)
        for flowfile in session.get_batch(BATCH):
            if chosen == USE_MIME_TYPE:
                mime_type = flowfile.attributes.get(MIME_TYPE)
                if mime_type is None:
                    self._fail(context, session, flowfile, "no mime.type attribute to pick the format by")
                    continue
                fmt = FORMATS_BY_MIME_TYPE.get(mime_type.split(";")[0].strip().lower())
                if fmt is None:
                    session.transfer(flowfile, "success")  # not compressed in a format known here
                    continue
            else:
                fmt = FORMATS[chosen]
            try:
                if compressing:
                    flowfile = session.transform(flowfile, functools.partial(_compress, fmt, level))
                else:
                    flowfile = session.transform(flowfile, fmt.decompress)
            except CorruptStream as error:
                self._fail(context, session, flowfile, f"cannot decompress {fmt.name}: {error}")
                continue
            except UnreadableContent as error:
                unreadable.set_aside(flowfile, error)
                continue
            session.transfer(self._renamed(session, flowfile, fmt, compressing, rename), "success")
        unreadable.log()

    @staticmethod
    def _renamed(session: ProcessSession, flowfile, fmt: Format, compressing: bool, rename: bool):
        """`flowfile` with the attributes of its new content: mime.type, and filename."""
        filename = flowfile.attributes.get(FILENAME)
        if compressing:
            flowfile = session.put_attribute(flowfile, MIME_TYPE, fmt.mime_type)
            if rename and filename is not None:
                flowfile = session.put_attribute(flowfile, FILENAME, filename + fmt.extension)
            return flowfile
        flowfile = session.remove_attribute(flowfile, MIME_TYPE)
        if rename and filename is not None and filename.lower().endswith(fmt.extension):
            flowfile = session.put_attribute(flowfile, FILENAME, filename[: -len(fmt.extension)])
        return flowfile

    def _fail(self, context: ProcessContext, session: ProcessSession, flowfile, reason: str) -> None:
        context.limited_log.warning("failure", "%s: %s goes to failure: %s", self.id, flowfile.id, reason)
        flowfile = session.put_attribute(flowfile, ERROR_ATTRIBUTE, reason)
        session.transfer(session.penalize(flowfile), "failure")
