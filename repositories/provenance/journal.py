"""Journals: the uncompressed, unindexed files that registered events go to first.

`JournalWriter` appends one frame per registered batch with a single `writev`, so a
crash leaves at most a torn last frame. `read_journal` returns the intact frames and
says how many bytes it cut.

Lock plan: a `JournalWriter` is not thread-safe; the repository guards each journal
with its own lock, and many threads write to different journals at once.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field

import pyarrow as pa

from repositories.storage.local import FILE_MODE

from . import journal_format as fmt
from .errors import CorruptFileError
from .event_batch import read_stored_batch


class JournalWriter:
    def __init__(self, path: str, first_id: int, slot: int, *, sync_each_write: bool = False):
        self.path = path
        self.bytes_written = 0
        self._sync = sync_each_write
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, FILE_MODE)
        header = fmt.pack_header(first_id, slot)
        os.write(self._fd, header)
        self.bytes_written = len(header)

    def append(self, batch: pa.RecordBatch) -> int:
        """Write one frame; returns its size. Data is in the OS once this returns."""
        payload = batch.serialize()
        head = fmt.pack_frame_header(batch.column(0)[0].as_py(), batch.num_rows, payload)
        expected = len(head) + payload.size
        written = os.writev(self._fd, [head, payload])
        if written != expected:
            # A short write leaves a torn frame; recovery cuts it, but nothing after it
            # may be appended, so the writer refuses further use.
            os.close(self._fd)
            self._fd = -1
            raise OSError(f"short write to journal {self.path}: {written} of {expected} bytes")
        if self._sync:
            os.fdatasync(self._fd)
        self.bytes_written += expected
        return expected

    def close(self, *, sync: bool = True) -> None:
        if self._fd >= 0:
            if sync:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1


@dataclass
class JournalContents:
    path: str
    first_id: int
    slot: int
    batches: list[pa.RecordBatch] = field(default_factory=list)
    cut_offset: int | None = None  # where intact frames end, if bytes were cut
    cut_reason: str | None = None
    file_length: int = 0

    @property
    def max_id(self) -> int | None:
        if not self.batches:
            return None
        return max(b.column(0)[b.num_rows - 1].as_py() for b in self.batches)

    @property
    def event_count(self) -> int:
        return sum(b.num_rows for b in self.batches)


def read_journal(path: str) -> JournalContents:
    """Every intact frame of a journal. A torn or damaged tail is reported, not raised."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        first_id, slot = fmt.unpack_header(data)
    except ValueError as error:
        if len(data) < fmt.HEADER.size:
            # Crashed between create and the header write: the journal holds no event.
            return JournalContents(path, -1, -1, cut_offset=0, cut_reason="torn header", file_length=len(data))
        raise CorruptFileError(path, f"journal header: {error}") from None
    contents = JournalContents(path, first_id, slot, file_length=len(data))
    view = memoryview(data)
    offset = fmt.HEADER.size
    while offset < len(data):
        try:
            frame_first, count, length, crc = fmt.unpack_frame_header(view, offset)
        except ValueError as error:
            contents.cut_offset, contents.cut_reason = offset, str(error)
            break
        start = offset + fmt.FRAME.size
        payload = view[start : start + length]
        if len(payload) < length:
            contents.cut_offset, contents.cut_reason = offset, "torn frame payload"
            break
        if zlib.crc32(payload) != crc:
            contents.cut_offset, contents.cut_reason = offset, "frame payload checksum mismatch"
            break
        try:
            batch = read_stored_batch(bytes(payload))
        except ValueError as error:  # its checksum matched: bytes no writer writes
            contents.cut_offset, contents.cut_reason = offset, f"frame payload cannot be decoded: {error}"
            break
        if not batch.num_rows or batch.num_rows != count or batch.column(0)[0].as_py() != frame_first:
            contents.cut_offset, contents.cut_reason = offset, "frame header disagrees with its payload"
            break
        contents.batches.append(batch)
        offset = start + length
    return contents
