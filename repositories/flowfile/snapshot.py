"""The snapshot: the whole record map and swap-file list as of one transaction id.

Written as `snapshot.partial`, synced, then renamed to `snapshot` (NiFi's WAL
checkpoint). `SnapshotCase` names the four states a crash can leave the two files in
(NiFi's write-ahead log design: the four restore cases); `wal.WriteAheadLog` has one
branch for each.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from . import format as fmt
from .errors import CorruptSnapshotError, NotAWriteAheadLogError, UnknownSerDeError
from .record import FlowFileRecord, SwapFile

if TYPE_CHECKING:
    from repositories.storage import WritableFile

    from .serde import BatchDecoder, RecordDecoder, SerDe

SNAPSHOT_NAME = "snapshot"
PARTIAL_NAME = "snapshot.partial"
_CHUNK = 1 << 20


class SnapshotCase(enum.Enum):
    NEITHER = "neither file: a new WAL, or one never checkpointed"
    SNAPSHOT_ONLY = "snapshot only: no checkpoint was running"
    BOTH = "snapshot and .partial: the crash hit while the .partial was written"
    PARTIAL_ONLY = ".partial only: the crash hit between deleting snapshot and renaming .partial"

    @classmethod
    def of(cls, snapshot_exists: bool, partial_exists: bool) -> SnapshotCase:
        if snapshot_exists:
            return cls.BOTH if partial_exists else cls.SNAPSHOT_ONLY
        return cls.PARTIAL_ONLY if partial_exists else cls.NEITHER


class SnapshotContents(NamedTuple):
    path: str
    epoch: int
    serde_name: str
    serde_version: int
    max_txid: int
    records: dict[str, FlowFileRecord]
    swap_files: dict[str, SwapFile]


def write_snapshot(
    file: WritableFile,
    *,
    epoch: int,
    serde: SerDe,
    max_txid: int,
    records: Mapping[str, FlowFileRecord],
    swap_files: Mapping[str, SwapFile],
) -> None:
    """Write a complete snapshot (format 2: records in CRC'd blocks) to an open
    WritableFile and sync it. `records` is the record map (read under the exclusive
    lock, so it does not change meanwhile)."""
    file.write(fmt.pack_snapshot_header(epoch, serde.name, serde.version, max_txid, len(records), len(swap_files)))
    encode = serde.encode_record
    pack_body, pack_block = fmt.pack_snapshot_block_body, fmt.pack_snapshot_block
    block_records, block_bytes = fmt.SNAPSHOT_BLOCK_RECORDS, fmt.SNAPSHOT_BLOCK_BYTES
    ids: list[str] = []
    encoded: list[bytes] = []
    size = 0
    for record in records.values():
        piece = encode(record)
        ids.append(record.id)
        encoded.append(piece)
        size += len(piece)
        if len(ids) == block_records or size >= block_bytes:
            body = pack_body(ids, encoded)
            file.write(pack_block(len(ids), body) + body)
            ids, encoded, size = [], [], 0
    tail = bytearray()
    if ids:
        body = pack_body(ids, encoded)
        tail += pack_block(len(ids), body)
        tail += body
    for swap_file in swap_files.values():
        tail += fmt.pack_snapshot_entry(fmt.pack_swap_file(swap_file))
    tail += fmt.pack_snapshot_trailer(len(records), len(swap_files))
    file.write(tail)
    file.sync()


def read_snapshot(path: str, data: bytes, serde: SerDe) -> SnapshotContents:
    """Decode a snapshot completely, or raise CorruptSnapshotError naming the offset.
    A snapshot is all or nothing: it was synced before it was renamed into place, so
    any damage is damage (there is no torn tail to forgive). Records of SerDe version
    3 come back lazy (see `record`), after the CRC of their block matched."""
    try:
        header, max_txid, record_count, swap_count = fmt.unpack_snapshot_header(data)
    except fmt.HeaderError as error:
        if error.reason.startswith("starts with"):
            raise NotAWriteAheadLogError(path, error.offset, f"snapshot {error.reason}") from None
        raise CorruptSnapshotError(path, error.offset, f"header: {error.reason}") from None
    if header.format_version not in fmt.SNAPSHOT_FORMAT_VERSIONS:
        raise NotAWriteAheadLogError(path, 8, f"snapshot format version {header.format_version} is unknown")
    if header.serde_name != serde.name or not serde.can_read(header.serde_version):
        raise UnknownSerDeError(path, fmt.HEADER_START.size, header.serde_name, header.serde_version, _known(serde))
    version = header.serde_version
    view = memoryview(data)
    record_decoder = getattr(serde, "record_decoder", None)
    decode: RecordDecoder
    if record_decoder is not None:
        decode = record_decoder(header.serde_version)
    else:
        decode = lambda data, start, stop: serde.decode_record(view[start:stop], version)  # noqa: E731
    records: dict[str, FlowFileRecord] = {}
    offset = header.length
    try:
        if header.format_version >= 2:
            offset = _read_blocks(path, data, view, offset, record_count, _batch_decoder(serde, version, view), records)
        else:
            offset = _read_entries(path, data, view, offset, record_count, decode, records)
        swap_files: dict[str, SwapFile] = {}
        entry_size = fmt.SNAPSHOT_ENTRY.size
        for index in range(swap_count):
            length, crc = fmt.SNAPSHOT_ENTRY.unpack_from(data, offset)
            start = offset + entry_size
            body = view[start : start + length]
            if start + length > len(data) or fmt.crc32(body) != crc:
                raise CorruptSnapshotError(
                    path, offset, f"swap-file entry {index} of {swap_count}: CRC mismatch or truncated"
                )
            swap_file, _ = fmt.unpack_swap_file(body)
            swap_files[swap_file.location] = swap_file
            offset = start + length
        trailer_counts = fmt.unpack_snapshot_trailer(data, offset)
    except CorruptSnapshotError:
        raise
    except fmt.HeaderError as error:
        raise CorruptSnapshotError(path, error.offset, error.reason) from None
    except Exception as error:  # struct.error, ValueError, UnicodeDecodeError, InvalidClaimError
        raise CorruptSnapshotError(path, offset, f"an entry cannot be decoded: {error}") from None
    if trailer_counts != (record_count, swap_count):
        raise CorruptSnapshotError(
            path, offset, f"trailer counts {trailer_counts} disagree with the header ({record_count}, {swap_count})"
        )
    if offset + fmt.SNAPSHOT_TRAILER.size != len(data):
        raise CorruptSnapshotError(path, offset + fmt.SNAPSHOT_TRAILER.size, "bytes follow the trailer")
    if len(records) != record_count:
        raise CorruptSnapshotError(
            path, header.length, f"{record_count} records announced, {len(records)} distinct ids read"
        )
    return SnapshotContents(path, header.epoch, header.serde_name, version, max_txid, records, swap_files)


def _read_blocks(
    path: str,
    data: bytes,
    view: memoryview,
    offset: int,
    record_count: int,
    decode_batch: BatchDecoder,
    records: dict[str, FlowFileRecord],
) -> int:
    """Format 2: check each block's CRC, then split it and decode its records in bulk.
    Returns the offset after the last block."""
    end = len(data)
    unpack_block, unpack_body = fmt.unpack_snapshot_block, fmt.unpack_snapshot_block_body
    crc32 = fmt.crc32
    block_header_size = fmt.SNAPSHOT_BLOCK_HEADER_SIZE
    done = 0
    while done < record_count:
        count, length, body_crc = unpack_block(data, offset)
        if not 0 < count <= record_count - done:
            raise CorruptSnapshotError(
                path, offset, f"record block of {count} records, {record_count - done} of {record_count} left to read"
            )
        start = offset + block_header_size
        stop = start + length
        if stop > end:
            raise CorruptSnapshotError(
                path, offset, f"record block (records {done}..{done + count - 1}) runs past the end of the file"
            )
        if crc32(view[start:stop]) != body_crc:
            raise _locate_damage(path, data, view, offset, start, stop, count, done, record_count)
        try:
            ids, pieces = unpack_body(data, start, stop, count)
            records.update(zip(ids, decode_batch(ids, pieces), strict=False))
        except Exception as error:  # the CRC matched: the writer wrote bytes its SerDe cannot read
            raise CorruptSnapshotError(
                path, offset, f"record block (records {done}..{done + count - 1}) cannot be decoded: {error}"
            ) from None
        done += count
        offset = stop
    return offset


def _locate_damage(
    path: str,
    data: bytes,
    view: memoryview,
    block_offset: int,
    start: int,
    stop: int,
    count: int,
    done: int,
    record_count: int,
) -> CorruptSnapshotError:
    """The block CRC failed: name the first record whose own CRC fails, if any."""
    for index, position, length, crc in fmt.snapshot_block_entries(data, start, stop, count):
        if fmt.crc32(view[position : position + length]) != crc:
            return CorruptSnapshotError(
                path,
                position,
                f"record {done + index} of {record_count}: CRC mismatch "
                f"(its block at offset {block_offset} fails its CRC too)",
            )
    return CorruptSnapshotError(
        path,
        block_offset,
        f"record block (records {done}..{done + count - 1}): "
        "CRC mismatch outside the records' bytes (entry table or id column)",
    )


def _batch_decoder(serde: SerDe, version: int, view: memoryview) -> BatchDecoder:
    """fn(ids, pieces) -> records, for format 2 blocks."""
    batch = getattr(serde, "record_batch_decoder", None)
    if batch is not None:
        decoder: BatchDecoder = batch(version)
        return decoder

    def decode_each(ids: list[str], pieces: list[bytes]) -> list[FlowFileRecord]:
        decoded = []
        for record_id, piece in zip(ids, pieces, strict=False):
            record = serde.decode_record(piece, version)
            if record.id != record_id:
                raise ValueError(f"record {record.id!r} is listed as {record_id!r} in its block")
            decoded.append(record)
        return decoded

    return decode_each


def _read_entries(
    path: str,
    data: bytes,
    view: memoryview,
    offset: int,
    record_count: int,
    decode: RecordDecoder,
    records: dict[str, FlowFileRecord],
) -> int:
    """Format 1: one CRC per record entry, no blocks. Returns the offset after the last record."""
    end = len(data)
    entry_size = fmt.SNAPSHOT_ENTRY.size
    unpack_entry = fmt.SNAPSHOT_ENTRY.unpack_from
    crc32 = fmt.crc32
    index = 0
    try:
        for index in range(record_count):
            length, crc = unpack_entry(data, offset)
            start = offset + entry_size
            stop = start + length
            if stop > end:
                raise CorruptSnapshotError(
                    path, offset, f"record {index} of {record_count} runs past the end of the file"
                )
            if crc32(view[start:stop]) != crc:
                raise CorruptSnapshotError(path, offset, f"record {index} of {record_count}: CRC mismatch")
            record = decode(data, start, stop)
            records[record.id] = record
            offset = stop
    except CorruptSnapshotError:
        raise
    except Exception as error:
        raise CorruptSnapshotError(path, offset, f"entry {index} cannot be decoded: {error}") from None
    return offset


def _known(serde: SerDe) -> str:
    oldest = getattr(serde, "OLDEST_VERSION", serde.version)
    return f"SerDe {serde.name!r} versions {oldest}..{serde.version}"
