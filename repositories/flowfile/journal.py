"""Journals: the per-partition edit logs, read back by `scan_journal` and written by
`Journal` with group commit.

A scan never raises for damage it can explain by a crash: it returns the intact
frames and a `Cut` for each damaged range. A torn or NUL tail is what a crash leaves
(explained); a damaged frame followed by intact ones is not (unexplained: `custody wal
fsck` fails on it), but the intact frames after it are kept all the same, so that no
committed transaction is lost unless its own bytes were damaged.

A scan moves from one frame to the next only by a length whose CRC matched (see
`format`): it never searches for a marker in bytes it could not place, because a
payload holds user data, and user data can hold a complete, CRC-valid frame.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from ..instruments import LatencyHistogram
from ..storage.abandon import abandon_file
from . import format as fmt
from .errors import CorruptJournalError, JournalWriteError, NotAWriteAheadLogError
from .hooks import WalHooks

if TYPE_CHECKING:
    from repositories.storage import WritableFile

JOURNAL_PATTERN = re.compile(r"journal-(\d+)")
# A checkpoint's next journal of a partition, written beside its `.partial` snapshot and
# renamed over `journal-N` once the snapshot is in place; never written to before.
NEXT_JOURNAL_PATTERN = re.compile(r"journal-(\d+)\.partial")


def journal_name(partition: int) -> str:
    return f"journal-{partition}"


def next_journal_name(partition: int) -> str:
    return f"journal-{partition}.partial"


class Cut(NamedTuple):
    """Bytes recovery did not apply: [offset, end) of `path`, and why."""

    path: str
    offset: int
    end: int
    reason: str
    explained: bool  # True when a crash explains it (torn or NUL tail), or fencing does
    txid: int | None = None
    updates: int = 0  # updates the cut transaction held, when its frame header survived


class JournalScan(NamedTuple):
    path: str
    header: fmt.JournalHeader | None  # None: empty or torn header (the crash hit creation)
    frames: list[fmt.Frame]  # in file order, with increasing transaction ids
    cuts: list[Cut]
    data: bytes  # the whole file, kept until cut bytes are saved


def scan_journal(path: str, data: bytes) -> JournalScan:
    """Parse a journal file's bytes into intact frames and cuts."""
    if not data:
        return JournalScan(path, None, [], [], data)
    try:
        header = fmt.unpack_journal_header(data)
    except fmt.HeaderError as error:
        if error.torn:
            cut = Cut(path, 0, len(data), f"torn journal header: {error.reason}", True)
            return JournalScan(path, None, [], [cut], data)
        if error.reason.startswith("starts with"):
            raise NotAWriteAheadLogError(path, error.offset, f"journal {error.reason}") from None
        raise CorruptJournalError(path, error.offset, None, f"journal header: {error.reason}") from None
    if header.format_version not in fmt.JOURNAL_FORMAT_VERSIONS:
        raise NotAWriteAheadLogError(path, 8, f"journal format version {header.format_version} is unknown")
    frames, cuts = _scan_frames(path, data, header.length, header.format_version)
    return JournalScan(path, header, frames, cuts, data)


class _Damage(NamedTuple):
    offset: int
    end: int
    reason: str
    txid: int | None
    updates: int = 0


def _scan_frames(path: str, data: bytes, offset: int, version: int) -> tuple[list[fmt.Frame], list[Cut]]:
    frames: list[fmt.Frame] = []
    damage: list[_Damage] = []
    tail: Cut | None = None  # what a crash leaves at the end: torn or NUL
    view = memoryview(data)
    end = len(data)
    header_size = fmt.frame_header_size(version)
    guarded = version >= 2
    crc32 = fmt.crc32
    parse, parse_guard = fmt.parse_frame_header, fmt.parse_length_guard
    Frame = fmt.Frame
    last_txid = 0
    while offset < end:
        if data[offset] == 0 and data.count(0, offset) == end - offset:
            tail = Cut(path, offset, end, "NUL bytes after the last transaction", True)
            break
        if end - offset < header_size:
            tail = Cut(path, offset, end, "torn transaction: file ends inside its frame header", True)
            break
        parsed = parse(data, offset, version)
        guard = parse_guard(data, offset, version) if guarded else None
        if parsed is None:
            if guard is None:
                # No length left to trust: the next frame cannot be located without
                # reading bytes that may be user data, so the rest is cut.
                what = (
                    "transaction frame header and its length guard are damaged"
                    if guarded
                    else "transaction frame header is damaged (marker or header CRC)"
                )
                damage.append(_Damage(offset, end, what + "; the rest of the journal cannot be located", None))
                break
            stop = offset + header_size + guard
            if stop > end:
                tail = Cut(
                    path, offset, end, "torn transaction: damaged header, and the file ends inside its payload", True
                )
                break
            damage.append(
                _Damage(
                    offset,
                    stop,
                    "transaction frame header is damaged (marker or header CRC); skipped by its length guard",
                    None,
                )
            )
            offset = stop
            continue
        txid, epoch, count, length, payload_crc, watermark = parsed
        stop = offset + header_size + length
        if stop > end:
            tail = Cut(path, offset, end, f"torn transaction {txid}: file ends inside its payload", True, txid, count)
            break
        payload = view[offset + header_size : stop]
        if guarded and guard != length:
            damage.append(_Damage(offset, stop, f"transaction {txid}: length guard is damaged", txid, count))
        elif crc32(payload) != payload_crc:
            damage.append(_Damage(offset, stop, f"transaction {txid} payload CRC mismatch", txid, count))
        elif txid <= last_txid:
            damage.append(
                _Damage(
                    offset,
                    stop,
                    f"transaction {txid} follows transaction {last_txid} in the same journal (ids only increase there)",
                    txid,
                    count,
                )
            )
        else:
            frames.append(Frame(offset, txid, epoch, count, payload, stop, watermark))
            last_txid = txid
        offset = stop
    cuts = [_judged(path, data, version, frames, item) for item in damage]
    if tail is not None:
        cuts.append(tail)
    return frames, cuts


def _judged(path: str, data: bytes, version: int, frames: list[fmt.Frame], damage: _Damage) -> Cut:
    """A damaged range as a Cut: explained by a crash only when nothing intact follows
    it (then it is indistinguishable from a write the crash tore)."""
    if any(frame.offset >= damage.end for frame in frames) or (
        damage.end == len(data) and _intact_frame_in(data, damage.offset + 1, version)
    ):
        return Cut(
            path,
            damage.offset,
            damage.end,
            damage.reason + " (intact transactions follow it)",
            False,
            damage.txid,
            damage.updates,
        )
    return Cut(path, damage.offset, damage.end, damage.reason + " (at the tail)", True, damage.txid, damage.updates)


def _intact_frame_in(data: bytes, start: int, version: int) -> bool:
    """Whether an intact-looking frame starts anywhere at or after `start`. Only to tell
    damage from a torn tail in the report: what this finds may lie inside a payload
    (user data), so it is never applied."""
    end = len(data)
    header_size = fmt.frame_header_size(version)
    marker = bytes([fmt.TRANSACTION_MARKER])
    position = data.find(marker, start)
    while position != -1 and position + header_size <= end:
        parsed = fmt.parse_frame_header(data, position, version)
        if parsed is not None:
            stop = position + header_size + parsed[3]
            if stop <= end and fmt.crc32(memoryview(data)[position + header_size : stop]) == parsed[4]:
                return True
        position = data.find(marker, position + 1)
    return False


class Journal:
    """One partition's open journal, written with group commit.

    A write or sync that fails poisons the journal for good: part of the bytes may
    be on storage, so the file's tail is unknown and no frame may follow it. The
    journal raises `JournalWriteError` to every waiter of the failed group and to
    every later append, and tells its owner (`on_failure`) at once, so that the WAL
    acknowledges nothing more until it has rolled to new journals.

    Lock plan:
      * `append_lock` guards `_pending` (framed transactions not yet handed to the
        file) and `_appended` (how many frames were appended). It is held for the
        microseconds an append takes, and is what a writer claims, round-robin and
        without blocking, to own the partition (as NiFi's writers claim partitions).
      * `io_lock` guards the WritableFile, `_durable` and `_failure`. The thread that
        holds it takes *every* pending frame, writes them and syncs once: that is the
        group commit. Committers queued behind it find their frame already durable
        and return without a sync of their own. `append` reads `_failure` without it:
        a frame appended as a write fails is refused, or pending when its waiter
        finds the failure, never written after the failed bytes.
      * Order: `io_lock` before `append_lock`, never the reverse; `on_failure` is
        called with `io_lock` held and must not take it.

    Every sync, failed ones included, is timed into `sync_durations` (the WAL's).
    """

    def __init__(
        self,
        path: str,
        file: WritableFile,
        hooks: WalHooks,
        on_failure: Callable[[BaseException], None],
        sync_durations: LatencyHistogram,
    ) -> None:
        self.path = path
        self._file = file
        self._hooks = hooks
        self._on_failure = on_failure
        self._sync_durations = sync_durations
        self.append_lock = threading.Lock()
        self.io_lock = threading.Lock()
        self._pending = bytearray()
        self._appended = 0
        self._durable = 0
        self._failure: BaseException | None = None
        self.syncs = 0  # how many syncs this journal did (the benchmark reports it)

    @property
    def pending_bytes(self) -> int:
        return len(self._pending)

    def append(self, frame: bytes) -> int:
        """Queue one framed transaction. The caller holds `append_lock`."""
        if self._failure is not None:
            raise JournalWriteError(self.path, self._failure)
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
            if self._pending:
                self._write_pending(sync=False)

    def _write_pending(self, *, sync: bool) -> None:
        # Caller holds io_lock.
        if self._failure is not None:
            raise JournalWriteError(self.path, self._failure)
        with self.append_lock:
            data, self._pending = self._pending, bytearray()
            target = self._appended
        try:
            self._hooks.before_journal_write(self.path)
            if data:
                self._file.write(data)
            if sync:
                self._hooks.before_sync(self.path)
                started = time.perf_counter()
                try:
                    self._file.sync()
                finally:
                    self._sync_durations.observe(time.perf_counter() - started)
                self.syncs += 1
                self._hooks.after_sync(self.path)
        except BaseException as error:
            self._failure = error
            self._on_failure(error)
            if not isinstance(error, Exception):
                raise  # the process is going down (or a test crashes it here): nothing to roll
            raise JournalWriteError(self.path, error) from error
        if sync:
            self._durable = target

    def close(self, *, sync: bool = True) -> None:
        """Hand over (and sync) what is pending, then close the file; a journal whose
        write failed is only closed."""
        with self.io_lock:
            try:
                if self._failure is None:
                    self._write_pending(sync=sync)
            finally:
                self._file.close()

    def abandon(self, why: BaseException) -> None:
        """Never write again, at once: no sync, no close, and no wait for `io_lock`,
        which a sync in flight holds until its storage answers or its deadline passes
        (that sync is the storage's to finish; its waiters then fail). From now on
        every append and write is refused with `why`; pending frames are dropped. The
        file is abandoned where its storage can (`WritableFile.abandon`: hdfs-native's
        writer let go unsynced, its lease recovered by the adopter); a file that cannot
        (local disk) is closed on a thread of its own once whoever writes it lets go."""
        if self._failure is None:
            self._failure = why
        with self.append_lock:
            self._pending = bytearray()
        if abandon_file(self._file):
            return

        def close_when_free() -> None:
            with self.io_lock:
                try:
                    self._file.close()
                except Exception:  # noqa: BLE001 - abandoned: nothing is owed to this file
                    pass

        threading.Thread(target=close_when_free, name=f"abandoned {self.path}", daemon=True).start()
