"""Journals: the per-partition edit logs, read back by `scan_journal` and written by
`Journal` with group commit.

A scan never raises for damage it can explain by a crash: it returns the intact
frames and a `Cut` for each damaged range. A torn or NUL tail is what a crash leaves
(explained); a damaged frame followed by intact ones is not (unexplained: `custody wal
fsck` fails on it), but the intact frames after it are kept all the same, so that no
committed transaction is lost unless its own bytes were damaged.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from . import format as fmt
from .errors import CorruptJournalError, JournalPoisonedError, NotAWriteAheadLogError
from .hooks import WalHooks


class Cut(NamedTuple):
    """Bytes recovery did not apply: [offset, end) of `path`, and why."""

    path: str
    offset: int
    end: int
    reason: str
    explained: bool  # True when a crash explains it (torn or NUL tail)
    txid: int | None = None


class JournalScan(NamedTuple):
    path: str
    header: fmt.FileHeader | None  # None: empty or torn header (the crash hit creation)
    frames: list  # [fmt.Frame], in file order (so in increasing txid order)
    cuts: list  # [Cut]
    data: bytes  # the whole file, kept until cut bytes are saved


def scan_journal(path: str, data: bytes) -> JournalScan:
    """Parse a journal file's bytes into intact frames and cuts."""
    if not data:
        return JournalScan(path, None, [], [], data)
    try:
        header, _ = fmt.unpack_file_header(data, fmt.JOURNAL_MAGIC)
    except fmt.HeaderError as error:
        if error.torn:
            cut = Cut(path, 0, len(data), f"torn journal header: {error.reason}", True)
            return JournalScan(path, None, [], [cut], data)
        if error.reason.startswith("starts with"):
            raise NotAWriteAheadLogError(path, error.offset, f"journal {error.reason}") from None
        raise CorruptJournalError(path, error.offset, None, f"journal header: {error.reason}") from None
    if header.format_version != fmt.JOURNAL_FORMAT_VERSION:
        raise NotAWriteAheadLogError(path, 8, f"journal format version {header.format_version} is unknown")
    frames, cuts = _scan_frames(path, data, header.length)
    return JournalScan(path, header, frames, cuts, data)


def _scan_frames(path: str, data: bytes, offset: int) -> tuple[list, list]:
    frames: list = []
    cuts: list = []
    view = memoryview(data)
    end = len(data)
    header_size = fmt.FRAME_HEADER_SIZE
    crc32 = fmt.crc32
    parse = fmt.parse_frame_header
    Frame = fmt.Frame
    while offset < end:
        if data[offset] == 0 and data.count(0, offset) == end - offset:
            cuts.append(Cut(path, offset, end, "NUL bytes after the last transaction", True))
            break
        if end - offset < header_size:
            cuts.append(Cut(path, offset, end, "torn transaction: file ends inside its frame header", True))
            break
        parsed = parse(data, offset)
        if parsed is None:
            resume = _resynchronise(data, offset + 1)
            _cut_damage(cuts, path, offset, resume, end, None, "transaction frame header is damaged (marker or header CRC)")
            if resume is None:
                break
            offset = resume
            continue
        txid, epoch, count, length, payload_crc = parsed
        stop = offset + header_size + length
        if stop > end:
            cuts.append(Cut(path, offset, end, f"torn transaction {txid}: file ends inside its payload", True, txid))
            break
        payload = view[offset + header_size : stop]
        if crc32(payload) != payload_crc:
            resume = _resynchronise(data, stop) if stop < end else None
            _cut_damage(cuts, path, offset, resume, end, txid, f"transaction {txid} payload CRC mismatch")
            if resume is None:
                break
            offset = resume
            continue
        frames.append(Frame(offset, txid, epoch, count, payload))
        offset = stop
    return frames, cuts


def _cut_damage(cuts, path, offset, resume, end, txid, reason) -> None:
    if resume is None:
        # Nothing intact follows: indistinguishable from a write torn by a crash.
        cuts.append(Cut(path, offset, end, reason + " (at the tail)", True, txid))
    else:
        cuts.append(Cut(path, offset, resume, reason + " (intact transactions follow it)", False, txid))


def _resynchronise(data: bytes, start: int) -> int | None:
    """Offset of the next intact frame at or after `start`, or None. A frame counts as
    intact only if its header CRC and its payload CRC both match, so a stray 0xA5 in
    damaged bytes cannot be mistaken for one."""
    end = len(data)
    marker = bytes([fmt.TRANSACTION_MARKER])
    position = data.find(marker, start)
    while position != -1 and position + fmt.FRAME_HEADER_SIZE <= end:
        parsed = fmt.parse_frame_header(data, position)
        if parsed is not None:
            stop = position + fmt.FRAME_HEADER_SIZE + parsed[3]
            if stop <= end and fmt.crc32(memoryview(data)[position + fmt.FRAME_HEADER_SIZE : stop]) == parsed[4]:
                return position
        position = data.find(marker, position + 1)
    return None


class Journal:
    """One partition's open journal, written with group commit.

    Lock plan:
      * `append_lock` guards `_pending` (framed transactions not yet handed to the
        file) and `_appended` (how many frames were appended). It is held for the
        microseconds an append takes, and is what a writer claims, round-robin and
        without blocking, to own the partition (as NiFi's writers claim partitions).
      * `io_lock` guards the WritableFile, `_durable` and `_poison`. The thread that
        holds it takes *every* pending frame, writes them and syncs once: that is the
        group commit. Committers queued behind it find their frame already durable
        and return without a sync of their own.
      * Order: `io_lock` before `append_lock`, never the reverse.
    """

    def __init__(self, path: str, file, hooks: WalHooks):
        self.path = path
        self._file = file
        self._hooks = hooks
        self.append_lock = threading.Lock()
        self.io_lock = threading.Lock()
        self._pending = bytearray()
        self._appended = 0
        self._durable = 0
        self._poison: BaseException | None = None
        self.syncs = 0  # how many syncs this journal did (the benchmark reports it)

    @property
    def poisoned(self) -> bool:
        return self._poison is not None

    @property
    def pending_bytes(self) -> int:
        return len(self._pending)

    def append(self, frame: bytes) -> int:
        """Queue one framed transaction. The caller holds `append_lock`."""
        if self._poison is not None:
            raise JournalPoisonedError(self.path, self._poison)
        self._pending += frame
        self._appended += 1
        return self._appended

    def wait_durable(self, sequence: int) -> None:
        """Return once the frame `sequence` is synced; share the sync with whoever else waits."""
        with self.io_lock:
            if self._durable >= sequence:
                return
            self._write_pending(sync=True)

    def flush(self) -> None:
        """Hand pending frames to the file without syncing (sync=False updates)."""
        with self.io_lock:
            if self._pending and self._poison is None:
                self._write_pending(sync=False)

    def _write_pending(self, *, sync: bool) -> None:
        # Caller holds io_lock.
        if self._poison is not None:
            raise JournalPoisonedError(self.path, self._poison)
        with self.append_lock:
            data, self._pending = self._pending, bytearray()
            target = self._appended
        try:
            self._hooks.before_journal_write(self.path)
            if data:
                self._file.write(data)
            if sync:
                self._hooks.before_sync(self.path)
                self._file.sync()
                self.syncs += 1
                self._hooks.after_sync(self.path)
        except BaseException as error:
            # Part of `data` may be on disk: the file's tail is unknown, so no later
            # frame may follow it. Only a checkpoint (which rewrites the journal from
            # the in-memory map) makes the partition writable again.
            self._poison = error
            raise JournalPoisonedError(self.path, error) from error
        if sync:
            self._durable = target

    def close(self, *, sync: bool = True) -> None:
        with self.io_lock:
            try:
                if self._poison is None:
                    self._write_pending(sync=sync)
            finally:
                self._file.close()
