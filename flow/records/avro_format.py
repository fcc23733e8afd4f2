"""Avro records: `AvroReader` and `AvroRecordSetWriter`, named as NiFi's are.

Avro content comes two ways. An *object container file* carries its writer's schema
in a header and its records in blocks; *schemaless* content is records binary-encoded
one after another, readable only by one who is given their schema. This module frames
the container itself (the layout below, from the Avro 1.11 specification) and leaves
the binary encoding of the records themselves to `fastavro` when reading, and when
writing to `avro_columns` (from Arrow's columns with numpy) for every schema that
module encodes, to `fastavro` for the rest: a damaged block is named by its number
and its first record, every codec is checked here (snappy's CRC too), and a record
that cannot be decoded is named by its index.

The container, byte by byte:

    magic          4 bytes   b"Obj\\x01"
    metadata       map       an Avro map of bytes (below); "avro.schema" holds the
                             writer's schema as JSON, "avro.codec" the codec's name
                             (null when absent)
    sync marker    16 bytes  chosen at random by the writer
    then blocks, until the content ends, each:
    record count   long
    data size      long      the size of the data as stored, compressed
    data           bytes     the block's records one after another, compressed
                             as a whole by the codec
    sync marker    16 bytes  the header's again: a block that ends anywhere else is
                             damaged (or two files were joined)

A long is zigzag-encoded, (n << 1) ^ (n >> 63), then written 7 bits a byte, low
bits first, the high bit of each byte set while more follow. A map is written in
runs: a count n, then n (key, value) pairs (each a long length and that many
bytes), until a count of 0; a negative count -n is followed by the run's size in
bytes, a long, then its n pairs. The codecs, each applied to a block's data whole:
null (as is), deflate (raw deflate, RFC 1951, no zlib header), bzip2, xz,
zstandard (one zstd frame), snappy (raw snappy, then the CRC-32 of the uncompressed
data, 4 bytes big-endian).

The reader reads a block at a time (a block is held whole, as Avro's own readers
hold it; its size is refused past 2^31 - 1 bytes, as theirs refuse it) and yields a
batch of about `RECORDS_PER_BATCH` records. With `infer-schema` the content must be
a container, and its schema is the file's. With `schema-text-property` the given
schema is the reader's: a container's records are decoded with the file's schema
and then matched to the given one by field name, as Avro's schema resolution does in
the common cases (a field the file lacks takes its default, or null, and is refused
when it has neither; a field the given schema lacks is dropped; an int read as a
long or a double is widened; nested records are matched by name too, a field they
lack being null), and content that does not start with the magic is decoded as
schemaless records of the given schema. (A schemaless record that happens to begin
with the magic bytes would be taken for a container: Avro gives no other way to tell
them apart.) The Arrow schema `given_schema` returns carries the given Avro text in
its metadata, for the defaults and for schemaless records; the batches do not.

Dates, times and timestamps go between Avro and Arrow as the integers both store
them as, never through Python's datetime (which lacks nanoseconds and years past
9999); decimals go as Python decimals, maps as dicts.

The writer writes a container whose schema is the Arrow schema's (`avro_schema`),
its top-level record named `nifiRecord` in the namespace `org.apache.nifi`, as
NiFi's writer names it, and a block per `RECORDS_PER_BATCH` records of each batch
it is given; or, with `schema_write_strategy` `no-schema`, the records alone.
"""

from __future__ import annotations

import bz2
import io
import json
import lzma
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import fastavro
import pyarrow as pa
import zstandard
from fastavro.types import Schema as ParsedAvroSchema

from ..processor import PropertyDescriptor
from .avro_columns import encoder_for
from .avro_schema import arrow_schema, avro_schema
from .errors import RecordError
from .readers import SCHEMA_PROPERTIES, SCHEMA_TEXT, Opener, RecordReader, fit_batch
from .writers import RecordSetWriter, RecordWriter

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
SCHEMA_KEY = "avro.schema"
CODEC_KEY = "avro.codec"
# The largest block Avro's own readers take (Java's DataFileStream refuses more).
MAX_BLOCK_SIZE = (1 << 31) - 1
RECORDS_PER_BATCH = 10_000
# The metadata key under which `AvroReader.given_schema` keeps the given Avro schema's
# text in the Arrow schema it returns: decoding schemaless records needs the text.
GIVEN_SCHEMA_METADATA = b"avro.schema"
RECORD_NAME, RECORD_NAMESPACE = "nifiRecord", "org.apache.nifi"
_READ_SIZE = 1 << 20
# Logical types decoded as what is stored: fastavro would make Python objects of them
# (datetimes, which cannot hold nanoseconds or every year Avro can; UUIDs) where Arrow
# takes the integers, or the text, as they are.
_DECODED_AS_STORED = frozenset(
    {
        "date",
        "time-millis",
        "time-micros",
        "timestamp-millis",
        "timestamp-micros",
        "timestamp-nanos",
        "local-timestamp-millis",
        "local-timestamp-micros",
        "local-timestamp-nanos",
        "uuid",
    }
)


# -- codecs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Codec:
    """How a container's block data is compressed. `decompress` raises what its
    library raises for data it cannot read; the reader names the block."""

    name: str
    compress: Callable[[bytes], bytes]
    decompress: Callable[[bytes], bytes]


def _deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def _inflate(data: bytes) -> bytes:
    return zlib.decompress(data, -15)


def _zstd_compress(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


def _zstd_decompress(data: bytes) -> bytes:
    # One frame per block as Avro writes it, its content size not always in its header.
    parts = []
    while data:
        unpacker = zstandard.ZstdDecompressor().decompressobj()
        parts.append(unpacker.decompress(data))
        if not unpacker.eof:
            raise ValueError("the zstd frame is cut short")
        data = unpacker.unused_data
    return b"".join(parts)


_SNAPPY = pa.Codec("snappy") if pa.Codec.is_available("snappy") else None
# Snappy expands a byte into at most a few dozen (a 2-byte copy yields up to 64 bytes):
# a block that claims more is damaged, and is not given the memory it claims.
_SNAPPY_MAX_RATIO = 64


def _snappy_compress(data: bytes) -> bytes:
    assert _SNAPPY is not None
    packed = _SNAPPY.compress(data, asbytes=True)
    return packed + zlib.crc32(data).to_bytes(4, "big")


def _snappy_decompress(data: bytes) -> bytes:
    assert _SNAPPY is not None
    if len(data) < 5:
        raise ValueError("the block is too short for snappy data and its checksum")
    packed, checksum = data[:-4], int.from_bytes(data[-4:], "big")
    size, shift = 0, 0
    for byte in packed[:5]:  # the uncompressed size, an unsigned varint
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if size > _SNAPPY_MAX_RATIO * len(packed):
        raise ValueError(f"the snappy data claims {size} bytes from {len(packed)}")
    plain = _SNAPPY.decompress(packed, decompressed_size=size, asbytes=True)
    if zlib.crc32(plain) != checksum:
        raise ValueError("the CRC-32 of the uncompressed data does not match the block's")
    return plain


def _same(data: bytes) -> bytes:
    return data


CODECS: dict[str, Codec] = {
    codec.name: codec
    for codec in (
        Codec("null", _same, _same),
        Codec("deflate", _deflate, _inflate),
        Codec("bzip2", bz2.compress, bz2.decompress),
        Codec("xz", lzma.compress, lzma.decompress),
        Codec("zstandard", _zstd_compress, _zstd_decompress),
        *([Codec("snappy", _snappy_compress, _snappy_decompress)] if _SNAPPY is not None else []),
    )
}
_CODEC_ERRORS = (zlib.error, OSError, ValueError, EOFError, lzma.LZMAError, zstandard.ZstdError, pa.ArrowException)


# -- the framing: longs, the header, blocks --------------------------------------------


def encode_long(value: int) -> bytes:
    """`value` as Avro writes a long (zigzag, then 7 bits a byte)."""
    folded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while folded > 0x7F:
        out.append((folded & 0x7F) | 0x80)
        folded >>= 7
    out.append(folded)
    return bytes(out)


def encode_header(schema_json: str, codec: str, sync: bytes) -> bytes:
    """A container's header: magic, metadata (schema and codec), sync marker."""
    entries = [(SCHEMA_KEY.encode(), schema_json.encode()), (CODEC_KEY.encode(), codec.encode())]
    out = bytearray(MAGIC)
    out += encode_long(len(entries))
    for key, value in entries:
        out += encode_long(len(key)) + key + encode_long(len(value)) + value
    out += encode_long(0)
    out += sync
    return bytes(out)


class _Truncated(Exception):
    """The content ends inside something that was begun."""


class _Malformed(Exception):
    """Bytes of the framing that no writer writes (a long of more than 10 bytes)."""


_DECODE_ERRORS = (ValueError, IndexError, KeyError, TypeError, OverflowError, MemoryError)


def _decode_failure(error: Exception) -> str:
    return f"the record cannot be decoded with its schema ({type(error).__name__}: {error})"


class ContentBytes:
    """A stream read ahead in chunks and taken apart from the front. Only this class
    reads the stream, so what the stream raises (content that cannot be read at all)
    reaches the caller as it was raised, and never passes through a decoder."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.buffer = b""
        self.position = 0
        self.ended = False

    def available(self) -> int:
        return len(self.buffer) - self.position

    def fill(self, wanted: int) -> bool:
        """Read until `wanted` bytes are held unread; False when the content ends first."""
        if self.available() >= wanted:
            return True
        parts = [self.buffer[self.position :]]
        held = len(parts[0])
        while held < wanted and not self.ended:
            chunk = self.stream.read(max(_READ_SIZE, min(wanted - held, 64 << 20)))
            if not chunk:
                self.ended = True
                break
            parts.append(chunk)
            held += len(chunk)
        self.buffer, self.position = b"".join(parts), 0
        return held >= wanted

    def at_end(self) -> bool:
        return not self.fill(1)

    def peek(self, size: int) -> bytes:
        self.fill(size)
        return self.buffer[self.position : self.position + size]

    def take(self, size: int) -> bytes:
        if not self.fill(size):
            raise _Truncated
        taken = self.buffer[self.position : self.position + size]
        self.position += size
        return taken

    def long(self) -> int:
        folded, shift = 0, 0
        while True:
            byte = self.take(1)[0]
            folded |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (folded >> 1) ^ -(folded & 1)
            shift += 7
            if shift > 63:
                raise _Malformed("a long runs past 10 bytes")

    def records(self, decoder: ParsedAvroSchema, first: int, limit: int) -> list:
        """Up to `limit` schemaless records decoded with `decoder` from here on: those
        whole in what is held, or the next one when none is (empty at the end of the
        content). `first` is the index of the first, to name a record that fails."""
        while True:
            self.fill(1)
            view = io.BytesIO(self.buffer)
            view.seek(self.position)
            rows: list = []
            while len(rows) < limit and view.tell() < len(self.buffer):
                start = view.tell()
                try:
                    rows.append(fastavro.schemaless_reader(view, decoder))
                except EOFError:  # begun in what is held, ends in what is not yet read
                    view.seek(start)
                    break
                except _DECODE_ERRORS as error:
                    raise RecordError(_decode_failure(error), record=first + len(rows)) from None
            self.position = view.tell()
            if rows or self.available() == 0:
                return rows
            held = self.available()
            self.fill(2 * held + _READ_SIZE)  # doubling: a long record is decoded a few times, not once a chunk
            if self.available() == held:
                raise RecordError("the content ends inside this record", record=first)


@dataclass(frozen=True)
class ContainerHeader:
    schema_json: str
    codec: Codec
    sync: bytes


def read_header(content: ContentBytes) -> ContainerHeader:
    """The header that `content` starts with."""
    try:
        if content.take(len(MAGIC)) != MAGIC:
            raise RecordError("not an Avro object container file: it does not start with Obj\\x01")
        metadata = {}
        while count := content.long():
            if count < 0:
                count = -count
                content.long()  # the run's size in bytes, which its pairs give again
            for _ in range(count):
                key = content.take(_length(content.long(), "a metadata key"))
                metadata[key.decode("utf-8", "replace")] = content.take(_length(content.long(), "a metadata value"))
        sync = content.take(SYNC_SIZE)
    except _Truncated:
        raise RecordError("the Avro container's header is cut short") from None
    except _Malformed as error:
        raise RecordError(f"the Avro container's header is damaged: {error}") from None
    if SCHEMA_KEY not in metadata:
        raise RecordError("the Avro container's header holds no avro.schema")
    try:
        schema_json = metadata[SCHEMA_KEY].decode()
    except UnicodeDecodeError:
        raise RecordError("the Avro container's avro.schema is not UTF-8 text") from None
    codec_name = metadata.get(CODEC_KEY, b"null").decode("utf-8", "replace")
    if codec_name not in CODECS:
        known = ", ".join(sorted(CODECS))
        raise RecordError(f"the Avro container's codec {codec_name!r} is not one this reader knows ({known})")
    return ContainerHeader(schema_json, CODECS[codec_name], sync)


def _length(value: int, what: str) -> int:
    if value < 0:
        raise _Malformed(f"{what} has a negative length")
    return value


def read_block(content: ContentBytes, header: ContainerHeader, block: int, first: int) -> tuple[int, bytes]:
    """(record count, uncompressed data) of the block `content` is at: the `block`th of
    the file, whose first record is the `first`th."""
    try:
        count, size = content.long(), content.long()
        if count < 0 or not 0 <= size <= MAX_BLOCK_SIZE:
            raise RecordError(
                f"block {block} counts {count} records in {size} bytes: the file is damaged", record=first
            )
        stored = content.take(size)
        sync = content.take(SYNC_SIZE)
    except _Truncated:
        raise RecordError(f"the content ends inside block {block}: the file is cut short", record=first) from None
    except _Malformed as error:
        raise RecordError(f"block {block} is damaged: {error}", record=first) from None
    if sync != header.sync:
        raise RecordError(f"block {block} is not followed by the file's sync marker: the file is damaged", record=first)
    try:
        return count, header.codec.decompress(stored)
    except _CODEC_ERRORS as error:
        raise RecordError(
            f"block {block} cannot be decompressed with its codec {header.codec.name}: {error}", record=first
        ) from None


# -- schemas ----------------------------------------------------------------------------


def _as_stored(avro):
    """The Avro schema `avro` without the logical types `_DECODED_AS_STORED` names, so
    that their values are decoded as the integers (or text) stored."""
    if isinstance(avro, list):
        return [_as_stored(member) for member in avro]
    if not isinstance(avro, dict):
        return avro
    plain = {key: _as_stored(value) if key in ("type", "items", "values") else value for key, value in avro.items()}
    if plain.get("logicalType") in _DECODED_AS_STORED:
        del plain["logicalType"]
    if isinstance(avro.get("fields"), list):
        plain["fields"] = [
            {**field, "type": _as_stored(field.get("type"))} if isinstance(field, dict) else field
            for field in avro["fields"]
        ]
    return plain


@dataclass(frozen=True)
class _RecordSchema:
    """An Avro record schema, parsed to decode with and to build batches of."""

    arrow: pa.Schema
    decoder: ParsedAvroSchema

    @classmethod
    def parse(cls, text: str, whose: str) -> _RecordSchema:
        arrow = arrow_schema(text)  # refuses, by field, what Arrow cannot hold
        document = json.loads(text)
        try:
            decoder = fastavro.parse_schema(_as_stored(document))
        except Exception as error:  # fastavro raises several kinds for a schema it refuses
            raise RecordError(f"{whose} schema is not a valid Avro schema: {error}") from None
        return cls(arrow, decoder)


# -- reading ----------------------------------------------------------------------------


class AvroReader(RecordReader):
    type_name = "AvroReader"
    description = (
        "Reads Avro records: an object container file, its schema from its header; or, with a schema "
        "given, schemaless binary-encoded records."
    )
    properties = SCHEMA_PROPERTIES

    def given_schema(self, flowfile) -> pa.Schema | None:
        """The given schema, carrying its Avro text in its metadata: the reader's schema,
        that schemaless records are decoded with and fields' defaults come from."""
        schema = super().given_schema(flowfile)
        if schema is None:
            return None
        text = self.config["schema_text"].evaluate(flowfile)
        return schema.with_metadata({GIVEN_SCHEMA_METADATA: text.encode()})

    def batches(self, open_stream: Opener, schema: pa.Schema | None) -> Iterator[pa.RecordBatch]:
        given = self.config.get("schema_access_strategy") == SCHEMA_TEXT
        with open_stream() as stream:
            content = ContentBytes(stream)
            if content.at_end():
                return
            if content.peek(len(MAGIC)) == MAGIC:
                yield from _container_batches(content, schema, given)
            elif given and schema is not None:
                yield from _schemaless_batches(content, _given_record_schema(schema))
            else:
                raise RecordError(
                    "not an Avro object container file: it does not start with Obj\\x01 (schemaless "
                    "Avro records need their schema given: schema_access_strategy schema-text-property)"
                )

    def infer_schema(self, open_stream: Opener) -> pa.Schema:
        with open_stream() as stream:
            content = ContentBytes(stream)
            if content.at_end():
                return pa.schema([])
            return _RecordSchema.parse(read_header(content).schema_json, "the file's").arrow


def _given_record_schema(schema: pa.Schema) -> _RecordSchema:
    """The given schema as Avro: its own text when `given_schema` kept it, else the one
    `avro_schema` writes for it (which knows no enums, and puts null first in unions)."""
    text = (schema.metadata or {}).get(GIVEN_SCHEMA_METADATA)
    if text is None:
        return _RecordSchema.parse(json.dumps(avro_schema(schema)), "the given")
    return _RecordSchema.parse(text.decode(), "the given")


def _given_defaults(schema: pa.Schema) -> dict:
    """The defaults of the given schema's top-level fields, by name (none when the schema
    came without its Avro text)."""
    text = (schema.metadata or {}).get(GIVEN_SCHEMA_METADATA)
    if text is None:
        return {}
    document = json.loads(text)
    return {
        field["name"]: field["default"]
        for field in document.get("fields", [])
        if isinstance(field, dict) and "default" in field
    }


def _container_batches(content: ContentBytes, target: pa.Schema | None, given: bool) -> Iterator[pa.RecordBatch]:
    header = read_header(content)
    writer = _RecordSchema.parse(header.schema_json, "the file's")
    defaults = _given_defaults(target) if given and target is not None else {}
    rows: list = []
    record = 0  # the index of rows[0]
    block = 0
    while not content.at_end():
        first = record + len(rows)
        count, data = read_block(content, header, block, first)
        view = io.BytesIO(data)
        for index in range(count):
            try:
                rows.append(fastavro.schemaless_reader(view, writer.decoder))
            except EOFError:
                raise RecordError(
                    f"block {block} ends after {index} of the {count} records it counts", record=first + index
                ) from None
            except _DECODE_ERRORS as error:
                raise RecordError(_decode_failure(error), record=first + index) from None
            if len(rows) >= RECORDS_PER_BATCH:
                yield _batch(rows, writer.arrow, target, defaults, record)
                record += len(rows)
                rows = []
        if view.tell() != len(data):
            raise RecordError(
                f"block {block} holds {len(data) - view.tell()} bytes past its {count} records", record=first
            )
        block += 1
    if rows:
        yield _batch(rows, writer.arrow, target, defaults, record)


def _schemaless_batches(content: ContentBytes, reader: _RecordSchema) -> Iterator[pa.RecordBatch]:
    record = 0
    rows: list = []
    while True:
        more = content.records(reader.decoder, record + len(rows), RECORDS_PER_BATCH - len(rows))
        rows += more
        if len(rows) >= RECORDS_PER_BATCH or (rows and not more):
            yield _batch(rows, reader.arrow, None, {}, record)
            record += len(rows)
            rows = []
        if not more:
            return


def _batch(rows: list, schema: pa.Schema, target: pa.Schema | None, defaults: dict, record: int) -> pa.RecordBatch:
    """The decoded `rows` (the first the `record`th) as a batch of `schema`, fitted to
    `target` when one is given."""
    try:
        batch = pa.RecordBatch.from_pylist(rows, schema=schema)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
        raise RecordError(f"the records do not fit their schema: {error}", record=record) from None
    if target is None:
        return batch
    return _fitted(batch, target.remove_metadata(), defaults, record)


def _fitted(batch: pa.RecordBatch, target: pa.Schema, defaults: dict, record: int) -> pa.RecordBatch:
    """`batch` matched to `target` by field name (`fit_batch`): a field it lacks takes its
    default, or null, and is refused when it has neither (as Avro's schema resolution
    does)."""

    def missing(field: pa.Field, rows: int) -> pa.Array:
        if field.name in defaults:
            return _default_column(field, defaults[field.name], rows, record)
        if field.nullable:
            return pa.nulls(rows, field.type)
        raise RecordError(
            f"field {field.name!r} of the given schema is not in the file's, has no default and cannot be null",
            record=record,
        )

    return fit_batch(batch, target, record, missing)


def _default_column(field: pa.Field, default, rows: int, record: int) -> pa.Array:
    if default is None:
        return pa.nulls(rows, field.type)
    if isinstance(default, str) and (pa.types.is_binary(field.type) or pa.types.is_fixed_size_binary(field.type)):
        default = default.encode("latin-1")  # Avro writes a bytes default as text of code points 0-255
    try:
        return pa.repeat(pa.scalar(default, field.type), rows)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
        raise RecordError(
            f"the default of field {field.name!r} does not fit its type: {error}", record=record
        ) from None


# -- writing ----------------------------------------------------------------------------

EMBED, NO_SCHEMA = "embed-avro-schema", "no-schema"
_COMPRESSION = {"none": "null", "deflate": "deflate", "bzip2": "bzip2", "xz": "xz", "zstandard": "zstandard"}
if "snappy" in CODECS:
    _COMPRESSION["snappy"] = "snappy"


class AvroRecordSetWriter(RecordWriter):
    type_name = "AvroRecordSetWriter"
    description = "Writes records as an Avro object container file, or as schemaless Avro records."
    mime_type = "application/avro-binary"
    properties = (
        PropertyDescriptor(
            "compression_format",
            "choice",
            default="none",
            choices=tuple(_COMPRESSION),
            description="the codec of the container's blocks",
        ),
        PropertyDescriptor(
            "schema_write_strategy",
            "choice",
            default=EMBED,
            choices=(EMBED, NO_SCHEMA),
            description="an object container file, its schema in its header; or the records alone (schemaless)",
        ),
    )

    def open(self, sink: BinaryIO, schema: pa.Schema) -> RecordSetWriter:
        codec = CODECS[_COMPRESSION[self.config["compression_format"]]]
        return _AvroSetWriter(sink, schema, codec, container=self.config["schema_write_strategy"] == EMBED)


_ENCODE_ERRORS = (ValueError, TypeError, OverflowError, KeyError, AttributeError)


class _AvroSetWriter(RecordSetWriter):
    def __init__(self, sink: BinaryIO, schema: pa.Schema, codec: Codec, *, container: bool):
        self.sink, self.codec, self.container = sink, codec, container
        self.avro_types = pa.schema([field.with_type(_avro_type(field.type)) for field in schema])
        self.stored_types = pa.schema([field.with_type(_stored_type(field.type)) for field in self.avro_types])
        document = avro_schema(self.avro_types, name=RECORD_NAME)
        document["namespace"] = RECORD_NAMESPACE
        try:
            self.encoder = fastavro.parse_schema(_as_stored(document))
            self.array_encoder = fastavro.parse_schema({"type": "array", "items": self.encoder})
        except Exception as error:  # fastavro raises several kinds for a schema it refuses
            raise RecordError(f"the records' schema cannot be written as Avro: {error}") from None
        self.columns = encoder_for(self.stored_types)
        self.sync = os.urandom(SYNC_SIZE)
        self.count = 0
        if container:
            sink.write(encode_header(json.dumps(document), codec.name, self.sync))

    def write(self, batch: pa.RecordBatch) -> None:
        for start in range(0, batch.num_rows, RECORDS_PER_BATCH):
            self._write_block(batch.slice(start, RECORDS_PER_BATCH))

    def _write_block(self, batch: pa.RecordBatch) -> None:
        try:
            stored = batch.cast(self.avro_types).cast(self.stored_types)
            encoded = self.columns.encode(stored) if self.columns is not None else None
            rows = stored.to_pylist(maps_as_pydicts="strict") if encoded is None else None
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
            raise RecordError(f"cannot be written as Avro: {error}", record=self.count) from None
        if rows is not None:  # a schema, or values, left to fastavro
            encoded = self._encode(rows)
        assert encoded is not None
        if self.container:
            data = self.codec.compress(encoded)
            self.sink.write(encode_long(stored.num_rows) + encode_long(len(data)) + data + self.sync)
        else:
            self.sink.write(encoded)
        self.count += stored.num_rows

    def _encode(self, rows: list[dict]) -> bytes:
        """`rows` binary-encoded one after another. They are encoded as one Avro array,
        whose encoding is its count, its items and a 0 (fastavro writes an array in one
        run): its items alone are the records, at a third less cost than a call each.
        A row that cannot be encoded is found by encoding them one at a time."""
        if not rows:
            return b""
        encoded = io.BytesIO()
        try:
            fastavro.schemaless_writer(encoded, self.array_encoder, rows)
        except _ENCODE_ERRORS:
            for index, row in enumerate(rows):
                try:
                    fastavro.schemaless_writer(io.BytesIO(), self.encoder, row)
                except _ENCODE_ERRORS as error:
                    raise RecordError(f"cannot be written as Avro: {error}", record=self.count + index) from None
            raise
        array = encoded.getvalue()
        count = encode_long(len(rows))
        assert array.startswith(count) and array.endswith(b"\x00"), "an array written in more than one run"
        return array[len(count) : -1]

    def close(self) -> None:
        pass


def _avro_type(kind: pa.DataType) -> pa.DataType:
    """`kind` in the units and types Avro has: seconds as milliseconds, nanosecond
    times as microseconds, dates in days, map keys as text, dictionaries decoded."""
    if pa.types.is_dictionary(kind):
        return _avro_type(kind.value_type)
    if pa.types.is_timestamp(kind) and kind.unit == "s":
        return pa.timestamp("ms", kind.tz)
    if pa.types.is_date64(kind):
        return pa.date32()
    if pa.types.is_time32(kind) and kind.unit == "s":
        return pa.time32("ms")
    if pa.types.is_time64(kind) and kind.unit == "ns":
        return pa.time64("us")
    if pa.types.is_float16(kind):
        return pa.float32()
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_avro_type(field.type)) for field in kind])
    if pa.types.is_map(kind):
        return pa.map_(pa.string(), kind.item_field.with_type(_avro_type(kind.item_type)))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return pa.list_(kind.value_field.with_type(_avro_type(kind.value_type)))
    return kind


def _stored_type(kind: pa.DataType) -> pa.DataType:
    """`kind` (in Avro's units) as the integers a date, time or timestamp is stored as."""
    if pa.types.is_timestamp(kind) or pa.types.is_time64(kind):
        return pa.int64()
    if pa.types.is_date32(kind) or pa.types.is_time32(kind):
        return pa.int32()
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_stored_type(field.type)) for field in kind])
    if pa.types.is_map(kind):
        return pa.map_(kind.key_field, kind.item_field.with_type(_stored_type(kind.item_type)))
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_stored_type(kind.value_type)))
    return kind
