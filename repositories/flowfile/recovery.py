"""Reading a WAL directory back into a record map, without changing anything.

`read_state` does NiFi's WAL restore as pure reads: pick the snapshot the
crash case calls for, decode it, then replay every partition's transactions in
transaction-id order, skipping those the snapshot already holds. What it had to cut is
in the returned report. The side effects (deleting or renaming `.partial`, saving cut
bytes, the forced checkpoint) are `WriteAheadLog.recover`'s, so that `custody wal
inspect` and `fsck` can run this on a live or damaged directory safely.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from ..storage.side_by_side import side_by_side
from . import format as fmt
from .damage import Damage, JournalSeen, Reading, format_ranges, judge, missing_ranges
from .errors import NotAWriteAheadLogError, StaleEpochError, UnknownSerDeError
from .journal import JOURNAL_PATTERN, NEXT_JOURNAL_PATTERN, Cut, JournalScan, journal_name, scan_journal
from .record import FlowFileRecord, SwapFile, apply_update
from .snapshot import PARTIAL_NAME, SNAPSHOT_NAME, SnapshotCase, SnapshotContents, read_snapshot

if TYPE_CHECKING:
    from repositories.storage import Storage

    from .serde import SerDe

CUT_DIRECTORY = "cut"

__all__ = [
    "CUT_DIRECTORY",
    "RecoveredState",
    "RecoveryReport",
    "WalFiles",
    "journal_name",
    "list_wal_files",
    "read_state",
]


@dataclass
class RecoveryReport:
    directory: str
    case: SnapshotCase = SnapshotCase.NEITHER
    snapshot_max_txid: int = 0
    snapshot_records: int = 0
    snapshot_epoch: int | None = None
    journals: list[str] = field(default_factory=list)
    transactions_replayed: int = 0
    transactions_in_snapshot: int = 0
    max_txid: int = 0
    record_count: int = 0
    swap_files: list[SwapFile] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)
    saved_cuts: list[str] = field(default_factory=list)  # side files the cut bytes went to
    checkpoint_reasons: list[str] = field(default_factory=list)
    damage: list[Damage] = field(default_factory=list)  # what no crash explains
    damage_accepted: bool = False  # recovered all the same, because the operator accepted the loss
    in_flight: list[tuple[int, int]] = field(default_factory=list)  # (first, last) ids a crash took unsynced
    epoch: int = 0  # the highest shard epoch in the snapshot's and the journals' headers
    journal_set: int | None = None  # how many journals the newest journal set holds (format 3), if known

    @property
    def unexplained(self) -> list[Cut]:
        """Damaged ranges no crash explains (part of `damage`)."""
        return [cut for cut in self.cuts if not cut.explained]

    @property
    def transactions_lost(self) -> int:
        """Transactions the damage lost, where their ids are known."""
        return sum(found.lost_transactions() for found in self.damage)

    @property
    def updates_lost(self) -> int:
        """Updates (FlowFile records put, deleted or swapped) the damage lost, at least:
        counted from the frame headers that survived; a journal cut or deleted whole
        leaves none to count."""
        return sum(found.updates for found in self.damage)

    def to_dict(self) -> dict[str, object]:
        return {
            "directory": self.directory,
            "case": self.case.name,
            "case_meaning": self.case.value,
            "snapshot": {
                "max_txid": self.snapshot_max_txid,
                "records": self.snapshot_records,
                "epoch": self.snapshot_epoch,
            },
            "journals": self.journals,
            "transactions_replayed": self.transactions_replayed,
            "transactions_already_in_snapshot": self.transactions_in_snapshot,
            "max_txid": self.max_txid,
            "record_count": self.record_count,
            "swap_files": [sf._asdict() for sf in self.swap_files],
            "cuts": [cut._asdict() for cut in self.cuts],
            "saved_cuts": self.saved_cuts,
            "checkpoint_needed_because": self.checkpoint_reasons,
            "unexplained_damage": len(self.unexplained),
            "damage": [found._asdict() for found in self.damage],
            "damage_accepted": self.damage_accepted,
            "transactions_lost": self.transactions_lost,
            "updates_lost_at_least": self.updates_lost,
            "in_flight_at_crash": self.in_flight,
        }


class WalFiles(NamedTuple):
    journals: dict[int, str]  # partition -> path
    snapshot: str | None
    partial: str | None
    # partition -> path of a next journal a checkpoint left (`journal-N.partial`): only
    # ever a header, never read; recovery deletes them.
    next_journals: dict[int, str]


class RecoveredState(NamedTuple):
    records: dict[str, FlowFileRecord]
    swap_files: dict[str, SwapFile]
    next_txid: int
    report: RecoveryReport
    scans: list[JournalScan]  # for the cut bytes


def list_wal_files(storage: Storage, directory: str) -> WalFiles:
    """Classify the directory's entries; anything a WAL does not write is refused."""
    journals: dict[int, str] = {}
    next_journals: dict[int, str] = {}
    snapshot: str | None = None
    partial: str | None = None
    for status in storage.list(directory):
        name = status.name
        match = JOURNAL_PATTERN.fullmatch(name)
        next_match = NEXT_JOURNAL_PATTERN.fullmatch(name)
        if match and not status.is_dir:
            journals[int(match.group(1))] = status.path
        elif next_match and not status.is_dir:
            next_journals[int(next_match.group(1))] = status.path
        elif name == SNAPSHOT_NAME and not status.is_dir:
            snapshot = status.path
        elif name == PARTIAL_NAME and not status.is_dir:
            partial = status.path
        elif name == CUT_DIRECTORY and status.is_dir:
            continue
        else:
            raise NotAWriteAheadLogError(
                status.path,
                0,
                "a FlowFile WAL directory holds only journal-N, journal-N.partial, snapshot, snapshot.partial and cut/",
            )
    return WalFiles(journals, snapshot, partial, next_journals)


def read_side_by_side(storage: Storage, paths: list[str]) -> dict[str, bytes]:
    """The bytes of each file of `paths`, read at once (`side_by_side`): on HDFS each
    read is round trips to the NameNode and a DataNode that do nothing locally, and an
    adopter reads a snapshot and four journals before its shard can run (about 40 ms
    each on a loaded two-core machine, one after another). The first error in the
    order of `paths` is raised, as reading them one by one would."""
    data: dict[str, bytes] = {}

    def read(path: str) -> None:
        data[path] = storage.read(path)

    side_by_side([functools.partial(read, path) for path in paths], "wal-recovery-read")
    return data


def read_state(storage: Storage, directory: str, files: WalFiles, serde: SerDe, epoch: int | None) -> RecoveredState:
    report = RecoveryReport(directory)
    report.case = SnapshotCase.of(files.snapshot is not None, files.partial is not None)
    # Which file holds the state: for BOTH the .partial may be incomplete and the
    # journals were not yet truncated, so the old snapshot is the truth.
    source = {
        SnapshotCase.NEITHER: None,
        SnapshotCase.SNAPSHOT_ONLY: files.snapshot,
        SnapshotCase.BOTH: files.snapshot,
        SnapshotCase.PARTIAL_ONLY: files.partial,
    }[report.case]
    records: dict[str, FlowFileRecord] = {}
    swap_files: dict[str, SwapFile] = {}
    next_txid = 1
    snapshot_epoch: int | None = None
    snapshot_holds_state = False
    journal_paths = [path for _, path in sorted(files.journals.items())]
    data = read_side_by_side(storage, ([source] if source is not None else []) + journal_paths)
    if source is not None:
        contents: SnapshotContents = read_snapshot(source, data.pop(source), serde)
        if epoch is not None and contents.epoch > epoch:
            raise StaleEpochError(source, contents.epoch, epoch)
        records, swap_files = contents.records, contents.swap_files
        next_txid = contents.max_txid + 1
        snapshot_epoch = report.snapshot_epoch = contents.epoch
        report.snapshot_max_txid = contents.max_txid
        report.snapshot_records = len(records)
        snapshot_holds_state = bool(records or swap_files or contents.max_txid)
        if epoch is not None and contents.epoch < epoch:
            report.checkpoint_reasons.append(f"adopting: snapshot epoch {contents.epoch} < own epoch {epoch}")

    base = next_txid - 1  # the snapshot's max transaction id (0 without one)
    report.epoch = snapshot_epoch or 0
    newest_set = -1
    scans: list[JournalScan] = []
    seen: list[JournalSeen] = []
    for partition, path in sorted(files.journals.items()):
        scan = scan_journal(path, data.pop(path))
        scans.append(scan)
        report.journals.append(path)
        report.cuts.extend(scan.cuts)
        header = scan.header
        seen.append(
            JournalSeen(
                partition,
                path,
                header.generation if header else None,
                header.partitions if header else None,
                len(scan.frames),
                scan.frames[0].txid if scan.frames else None,
            )
        )
        if header is None:
            report.checkpoint_reasons.append(f"{path} has no intact header")
            continue
        report.epoch = max(report.epoch, header.epoch)
        if (
            header.partitions is not None
            and header.generation is not None  # both are, from format 3 on
            and (report.journal_set is None or header.generation >= newest_set)
        ):
            report.journal_set, newest_set = header.partitions, header.generation
        if header.serde_name != serde.name or not serde.can_read(header.serde_version):
            known = f"SerDe {serde.name!r} versions {getattr(serde, 'OLDEST_VERSION', serde.version)}..{serde.version}"
            raise UnknownSerDeError(path, fmt.HEADER_START.size, header.serde_name, header.serde_version, known)
        if epoch is not None and header.epoch > epoch:
            raise StaleEpochError(path, header.epoch, epoch)
        if epoch is not None and header.epoch < epoch:
            report.checkpoint_reasons.append(f"adopting: {path} epoch {header.epoch} < own epoch {epoch}")
        if header.serde_version != serde.version:
            report.checkpoint_reasons.append(
                f"{path} written by SerDe version {header.serde_version}, this one writes {serde.version}"
            )
        if header.format_version != fmt.JOURNAL_FORMAT_VERSION:
            # New frames are appended only in the current format: rewrite it first.
            report.checkpoint_reasons.append(
                f"{path} is journal format version {header.format_version}, "
                f"this release writes {fmt.JOURNAL_FORMAT_VERSION}"
            )
        if scan.cuts:
            report.checkpoint_reasons.append(f"{path}: {len(scan.cuts)} damaged range(s) cut")

    # As NiFi's restore does: always apply the smallest transaction id any
    # partition offers next; ids below the generator are already in the snapshot.
    def tagged(scan: JournalScan, version: int) -> Iterator[tuple[int, int, fmt.Frame, str, int]]:
        for frame in scan.frames:
            yield frame.txid, frame.offset, frame, scan.path, version

    merged = heapq.merge(*(tagged(scan, scan.header.serde_version) for scan in scans if scan.header is not None))
    split_payload = fmt.split_payload
    decode = serde.decode_update
    replayed: list[int] = []
    watermark = 0
    for txid, _, frame, path, version in merged:
        if txid < next_txid:
            report.transactions_in_snapshot += 1
            continue
        if epoch is not None and frame.epoch > epoch:
            raise StaleEpochError(path, frame.epoch, epoch)
        frame_end = frame.end
        if snapshot_epoch is not None and frame.epoch < snapshot_epoch:
            # Written by an owner older than the one that checkpointed: a zombie's write
            # after fencing. Never applied, and not damage: the fencing refused it.
            report.cuts.append(
                Cut(
                    path,
                    frame.offset,
                    frame_end,
                    f"transaction {txid} has epoch {frame.epoch}, older "
                    f"than the snapshot's {snapshot_epoch}: a fenced owner's write, refused",
                    True,
                    txid,
                    frame.count,
                )
            )
            report.checkpoint_reasons.append(f"{path}: stale-epoch transaction {txid}")
            continue
        try:
            updates = [decode(piece, version) for piece in split_payload(frame.payload, frame.count)]
        except Exception as error:  # CRC matched but the content is not what the SerDe wrote
            report.cuts.append(
                Cut(
                    path,
                    frame.offset,
                    frame_end,
                    f"transaction {txid} cannot be decoded: {error}",
                    False,
                    txid,
                    frame.count,
                )
            )
            report.checkpoint_reasons.append(f"{path}: undecodable transaction {txid}")
            continue
        for update in updates:
            apply_update(records, swap_files, update)
        next_txid = txid + 1
        replayed.append(txid)
        if frame.watermark > watermark:
            watermark = frame.watermark
        report.transactions_replayed += 1
    report.max_txid = next_txid - 1
    report.record_count = len(records)
    report.swap_files = list(swap_files.values())
    report.damage = judge(
        Reading(
            directory,
            report.case,
            source or f"{directory.rstrip('/')}/{SNAPSHOT_NAME}",
            base,
            snapshot_holds_state,
            seen,
            replayed,
            watermark,
            report.cuts,
        )
    )
    # Ids no journal holds above every watermark: transactions a crash took before they
    # were synced (never acknowledged). A new journal generation must start above them,
    # or the next frames' watermarks would claim them durable.
    report.in_flight = [gap for gap in missing_ranges(base, report.max_txid, replayed) if gap[0] > watermark]
    if report.in_flight:
        report.checkpoint_reasons.append(
            f"transactions in flight at the crash never reached a journal ({format_ranges(report.in_flight)})"
        )
    return RecoveredState(records, swap_files, next_txid, report, scans)
