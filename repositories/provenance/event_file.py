"""Writing and reading event files (layout in `event_file_format`).

`write_event_file` turns the merged, id-ordered events of one rollover into blocks of
about `block_bytes` uncompressed bytes, compresses the blocks in parallel (zstd
releases the GIL), and commits the file by renaming it. `EventFile` reads one block
at a time through the table of contents.
"""

from __future__ import annotations

import bisect
import os
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import zstandard

from . import event_file_format as fmt
from . import files
from .errors import CorruptBlockError, CorruptFileError
from .event_batch import read_stored_batch


@dataclass(frozen=True, slots=True)
class EventFileInfo:
    first_id: int
    last_id: int
    event_count: int
    min_time_ms: int
    max_time_ms: int
    size: int  # event file plus table of contents, in bytes
    uncompressed_size: int
    path: str


def write_event_file(
    directory: str,
    first_id: int,
    table: pa.Table,
    *,
    block_bytes: int = 1 << 20,
    level: int = 3,
    threads: int = 2,
    before_commit: Callable[[str], None] | None = None,
    toc_committed: Callable[[str], None] | None = None,
) -> EventFileInfo:
    """Write `table` (SCHEMA, sorted by id, any chunking) as the event file named `first_id`.

    `first_id` is the generation's first id, which the journals are named after too;
    it is at most the first id in `table` (a torn first frame can make them differ).

    Order matters for a crash: both files are written as `.partial` and fsynced, the
    TOC is renamed first and the event file last, so a `.prov` never exists without the
    bytes it names. `before_commit(path)` and `toc_committed(path)` are the fault seams
    before the two renames and between them.
    """
    n = table.num_rows
    if n == 0:
        raise ValueError("an event file needs at least one event")
    per_row = max(1, table.nbytes // n)
    rows_per_block = max(1, block_bytes // per_row)
    batches = [table.slice(i, rows_per_block).combine_chunks().to_batches()[0] for i in range(0, n, rows_per_block)]
    raw = [b.serialize() for b in batches]
    compressor = zstandard.ZstdCompressor(level=level)
    if threads > 1 and len(raw) > 1:
        compressed = [bytes(s) for s in compressor.multi_compress_to_buffer(raw, threads=threads)]
    else:
        compressed = [compressor.compress(r) for r in raw]

    chunks = [fmt.pack_file_header(first_id)]
    blocks: list[fmt.BlockInfo] = []
    offset = fmt.FILE_HEADER.size
    for index, (batch, payload, plain) in enumerate(zip(batches, compressed, raw, strict=False)):
        times = pc.min_max(batch.column("time_ms")).as_py()
        block_first = batch.column("id")[0].as_py()
        # Ids handed out to batches a crash kept from the journals leave gaps.
        skipped = batch.column("id")[batch.num_rows - 1].as_py() - block_first - (batch.num_rows - 1)
        header = fmt.pack_block_header(
            index, block_first, batch.num_rows, plain.size, payload, times["min"], times["max"], skipped
        )
        chunks += [header, payload]
        blocks.append(
            fmt.BlockInfo(offset, block_first, batch.num_rows, len(payload), times["min"], times["max"], skipped)
        )
        offset += len(header) + len(payload)

    prov = os.path.join(directory, fmt.event_file_name(first_id))
    toc = os.path.join(directory, fmt.toc_name(first_id))
    files.delete(prov + fmt.PARTIAL)
    files.delete(toc + fmt.PARTIAL)
    length = files.write_new(prov + fmt.PARTIAL, chunks)
    toc_bytes = fmt.pack_toc(first_id, length, blocks)
    files.write_new(toc + fmt.PARTIAL, [toc_bytes])
    if before_commit is not None:
        before_commit(prov)
    files.rename(toc + fmt.PARTIAL, toc)
    if toc_committed is not None:
        toc_committed(prov)
    files.rename(prov + fmt.PARTIAL, prov)
    files.fsync_directory(directory)
    return EventFileInfo(
        first_id=first_id,
        last_id=table.column("id")[n - 1].as_py(),
        event_count=n,
        min_time_ms=min(b.min_time_ms for b in blocks),
        max_time_ms=max(b.max_time_ms for b in blocks),
        size=length + len(toc_bytes),
        uncompressed_size=sum(r.size for r in raw),
        path=prov,
    )


@dataclass
class ScanResult:
    blocks: list[fmt.BlockInfo]
    damaged: list[tuple[int, str]]  # (offset, reason)
    file_length: int


def scan_blocks(path: str) -> ScanResult:
    """Walk the block headers of an event file, resynchronising past damage.

    Used to rebuild a lost or damaged TOC and by `custody provenance inspect`.
    """
    data = files.read_all(path)
    try:
        fmt.unpack_file_header(data)
    except ValueError as error:
        raise CorruptFileError(path, f"event file header: {error}") from None
    blocks, damaged = [], []
    offset = fmt.FILE_HEADER.size
    while offset < len(data):
        try:
            h = fmt.unpack_block_header(data, offset)
            end = offset + fmt.BLOCK_HEADER.size + h.compressed_length
            if end > len(data):
                raise ValueError(f"block truncated: {len(data) - offset} of {end - offset} bytes present")
        except ValueError as error:
            damaged.append((offset, str(error)))
            following = data.find(fmt.BLOCK_MAGIC, offset + 1)
            if following < 0:
                break
            offset = following
            continue
        blocks.append(
            fmt.BlockInfo(offset, h.first_id, h.count, h.compressed_length, h.min_time_ms, h.max_time_ms, h.skipped_ids)
        )
        offset = end
    return ScanResult(blocks, damaged, len(data))


class EventFile:
    """Read access to one event file through its table of contents.

    Thread-safe: reads use `pread` on a shared descriptor, under `_lock`, which also
    guards the descriptor's opening and closing.
    """

    def __init__(self, path: str, toc_path: str | None = None):
        self.path = path
        self.toc_path = toc_path or path[: -len(fmt.EVENT_SUFFIX)] + fmt.TOC_SUFFIX
        self.toc_rebuilt: str | None = None
        try:
            first_id, _, blocks = fmt.unpack_toc(files.read_all(self.toc_path))
        except (OSError, ValueError) as error:
            # The TOC is redundant: rebuild it from the block headers.
            self.toc_rebuilt = str(error)
            blocks = scan_blocks(path).blocks
            first_id = int(os.path.basename(path).split(".")[0])
        self.first_id = first_id
        self.blocks = blocks
        self._starts = [b.first_id for b in blocks]
        self._fd: int | None = None
        self._lock = threading.Lock()

    @property
    def last_id(self) -> int:
        return self.blocks[-1].last_id if self.blocks else self.first_id - 1

    @property
    def event_count(self) -> int:
        return sum(b.count for b in self.blocks)

    @property
    def min_time_ms(self) -> int:
        return min((b.min_time_ms for b in self.blocks), default=0)

    @property
    def max_time_ms(self) -> int:
        return max((b.max_time_ms for b in self.blocks), default=0)

    def block_index_for(self, event_id: int) -> int | None:
        i = bisect.bisect_right(self._starts, event_id) - 1
        if i < 0 or event_id > self.blocks[i].last_id:
            return None
        return i

    def _read_at(self, offset: int, length: int) -> bytes:
        # The read is made under the lock that `close` takes: a descriptor closed (and
        # its number reused by another file) between lookup and pread would read
        # another file's bytes. A pread is short; decompression happens outside.
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY)
            return files.read_at(self._fd, offset, length)

    def read_block(self, index: int) -> pa.RecordBatch:
        """Decompress one block; raises CorruptBlockError naming only that block's events."""
        info = self.blocks[index]

        def damaged(reason: str) -> CorruptBlockError:
            return CorruptBlockError(self.path, index, info.offset, reason, info.first_id, info.count)

        want = fmt.BLOCK_HEADER.size + info.compressed_length
        data = self._read_at(info.offset, want)
        if len(data) < want:
            raise damaged(f"truncated: {len(data)} of {want} bytes present")
        try:
            header = fmt.unpack_block_header(data)
        except ValueError as error:
            raise damaged(str(error)) from None
        if (header.first_id, header.count, header.compressed_length, header.skipped_ids) != (
            info.first_id,
            info.count,
            info.compressed_length,
            info.skipped_ids,
        ):
            raise damaged("block header disagrees with the table of contents")
        payload = memoryview(data)[fmt.BLOCK_HEADER.size :]
        if zlib.crc32(payload) != header.payload_crc:
            raise damaged("payload checksum mismatch (bit flip or torn write)")
        try:
            # A zstd frame that states its size is decompressed to that size, whatever
            # max_output_size says: it must state the size the block header does.
            size = zstandard.frame_content_size(payload)
            if size not in (-1, header.uncompressed_length):
                raise damaged(f"its zstd frame holds {size} bytes, its header says {header.uncompressed_length}")
            plain = zstandard.ZstdDecompressor().decompress(payload, max_output_size=header.uncompressed_length)
            batch = read_stored_batch(plain)
        except (zstandard.ZstdError, ValueError) as error:
            raise damaged(f"cannot decode: {error}") from None
        if batch.num_rows != info.count:
            raise damaged(f"holds {batch.num_rows} events, expected {info.count}")
        return batch

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
