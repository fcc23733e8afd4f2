"""The snapshot: the whole record map and swap-file list as of one transaction id.

Written as `snapshot.partial`, synced, then renamed to `snapshot` (seed 000,
checkpoint steps 2-9). `SnapshotCase` names the four states a crash can leave the two
files in (seed 000, restore step 2.1); `wal.WriteAheadLog` has one branch for each.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from . import format as fmt
from .errors import CorruptSnapshotError, NotAWriteAheadLogError, UnknownSerDeError

SNAPSHOT_NAME = "snapshot"
PARTIAL_NAME = "snapshot.partial"
_CHUNK = 1 << 20


class SnapshotCase(enum.Enum):
    NEITHER = "neither file: a new WAL, or one never checkpointed"
    SNAPSHOT_ONLY = "snapshot only: no checkpoint was running"
    BOTH = "snapshot and .partial: the crash hit while the .partial was written"
    PARTIAL_ONLY = ".partial only: the crash hit between deleting snapshot and renaming .partial"

    @classmethod
    def of(cls, snapshot_exists: bool, partial_exists: bool) -> "SnapshotCase":
        if snapshot_exists:
            return cls.BOTH if partial_exists else cls.SNAPSHOT_ONLY
        return cls.PARTIAL_ONLY if partial_exists else cls.NEITHER


class SnapshotContents(NamedTuple):
    path: str
    epoch: int
    serde_name: str
    serde_version: int
    max_txid: int
    records: dict
    swap_files: dict


def write_snapshot(file, *, epoch: int, serde, max_txid: int, records, swap_files) -> None:
    """Write a complete snapshot to an open WritableFile and sync it. `records` is
    the record map (read under the exclusive lock, so it does not change meanwhile)."""
    file.write(fmt.pack_snapshot_header(epoch, serde.name, serde.version, max_txid, len(records), len(swap_files)))
    encode = serde.encode_record
    pack_entry = fmt.SNAPSHOT_ENTRY.pack
    crc32 = fmt.crc32
    chunk = bytearray()
    for record in records.values():
        encoded = encode(record)
        chunk += pack_entry(len(encoded), crc32(encoded))
        chunk += encoded
        if len(chunk) >= _CHUNK:
            file.write(chunk)
            chunk = bytearray()
    for swap_file in swap_files.values():
        chunk += fmt.pack_snapshot_entry(fmt.pack_swap_file(swap_file))
    chunk += fmt.pack_snapshot_trailer(len(records), len(swap_files))
    file.write(chunk)
    file.sync()


def read_snapshot(path: str, data: bytes, serde) -> SnapshotContents:
    """Decode a snapshot completely, or raise CorruptSnapshotError naming the offset.
    A snapshot is all or nothing: it was synced before it was renamed into place, so
    any damage is damage (there is no torn tail to forgive)."""
    try:
        header, max_txid, record_count, swap_count = fmt.unpack_snapshot_header(data)
    except fmt.HeaderError as error:
        if error.reason.startswith("starts with"):
            raise NotAWriteAheadLogError(path, error.offset, f"snapshot {error.reason}") from None
        raise CorruptSnapshotError(path, error.offset, f"header: {error.reason}") from None
    if header.format_version != fmt.SNAPSHOT_FORMAT_VERSION:
        raise NotAWriteAheadLogError(path, 8, f"snapshot format version {header.format_version} is unknown")
    if header.serde_name != serde.name or not serde.can_read(header.serde_version):
        raise UnknownSerDeError(path, fmt.HEADER_START.size, header.serde_name, header.serde_version, _known(serde))
    version = header.serde_version
    view = memoryview(data)
    end = len(data)
    offset = header.length
    entry_size = fmt.SNAPSHOT_ENTRY.size
    unpack_entry = fmt.SNAPSHOT_ENTRY.unpack_from
    crc32 = fmt.crc32
    record_decoder = getattr(serde, "record_decoder", None)
    if record_decoder is not None:
        decode = record_decoder(header.serde_version)
    else:
        decode = lambda data, start, stop: serde.decode_record(view[start:stop], version)  # noqa: E731
    records: dict = {}
    index = 0
    try:
        for index in range(record_count):
            length, crc = unpack_entry(data, offset)
            start = offset + entry_size
            stop = start + length
            if stop > end:
                raise CorruptSnapshotError(path, offset, f"record {index} of {record_count} runs past the end of the file")
            if crc32(view[start:stop]) != crc:
                raise CorruptSnapshotError(path, offset, f"record {index} of {record_count}: CRC mismatch")
            record = decode(data, start, stop)
            records[record.id] = record
            offset = stop
        swap_files: dict = {}
        for index in range(swap_count):
            length, crc = unpack_entry(data, offset)
            start = offset + entry_size
            body = view[start : start + length]
            if start + length > end or crc32(body) != crc:
                raise CorruptSnapshotError(path, offset, f"swap-file entry {index} of {swap_count}: CRC mismatch or truncated")
            swap_file, _ = fmt.unpack_swap_file(body)
            swap_files[swap_file.location] = swap_file
            offset = start + length
        trailer_counts = fmt.unpack_snapshot_trailer(data, offset)
    except CorruptSnapshotError:
        raise
    except fmt.HeaderError as error:
        raise CorruptSnapshotError(path, error.offset, error.reason) from None
    except Exception as error:  # struct.error, ValueError, UnicodeDecodeError, InvalidClaimError
        raise CorruptSnapshotError(path, offset, f"entry {index} cannot be decoded: {error}") from None
    if trailer_counts != (record_count, swap_count):
        raise CorruptSnapshotError(path, offset, f"trailer counts {trailer_counts} disagree with the header ({record_count}, {swap_count})")
    if offset + fmt.SNAPSHOT_TRAILER.size != end:
        raise CorruptSnapshotError(path, offset + fmt.SNAPSHOT_TRAILER.size, "bytes follow the trailer")
    if len(records) != record_count:
        raise CorruptSnapshotError(path, header.length, f"{record_count} records announced, {len(records)} distinct ids read")
    return SnapshotContents(path, header.epoch, header.serde_name, version, max_txid, records, swap_files)


def _known(serde) -> str:
    oldest = getattr(serde, "OLDEST_VERSION", serde.version)
    return f"SerDe {serde.name!r} versions {oldest}..{serde.version}"
