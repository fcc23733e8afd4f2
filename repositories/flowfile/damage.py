"""Telling damage from a crash, after a WAL directory was read and before anything of it
is applied: a pure judgement of what `recovery.read_state` saw.

A crash takes only what was not yet synced: the tail of a journal's last group commit
(a torn or NUL tail), a snapshot checkpoint that never finished. Everything else that
is gone was acknowledged once, and NiFi's own write-ahead log refuses to start on
corruption that is not a torn tail. So does this one: each finding below is a `Damage`,
and the WAL refuses to recover while there is any, unless the operator accepts the
loss (`WriteAheadLog(accept_damage=True)`, `custody wal fsck --accept-damage`,
`custody run --accept-wal-damage`).

What counts as damage (each rule names the crash case it must not be confused with):

* **A damaged transaction that intact ones follow** (a flipped bit, a forged frame, an
  undecodable payload): a crash tears only the end of a journal. Damage at a
  journal's end is judged by the next rule.
* **A transaction id at or below the highest durable watermark that no journal
  holds** (`watermark`): it was synced once, so no crash took it. This finds a journal
  cut anywhere but in its unsynced tail, and one deleted, as long as a later
  transaction was written to another journal (a cut of the newest transactions of the
  only journal written since the last snapshot looks exactly like a crash).
* **A journal of the set missing**: a checkpoint creates every journal of its set
  (`partitions` in each journal's header) before it puts its snapshot in place, and
  only then are journals written; so with the snapshot there, every journal of the set
  exists. A crash in the middle of creating them leaves the old snapshot in place (or
  a `.partial`), not a snapshot without its journals.
* **The snapshot missing, or older than its journals**: journals exist only after a
  first snapshot; a journal's `generation` is the max transaction id of the snapshot it
  was created after (for an older journal: the id before its first transaction), so a
  journal of a generation above 0 with no snapshot, or of a generation above the
  snapshot's, means the snapshot that held the earlier state is gone or was replaced by
  an older copy. (A missing snapshot of generation 0 held nothing.)

Journals of format 1 and 2 (written before the journal set and the watermark) carry
no set and no watermark: for them only damaged transactions, holes in the journals'
numbering and a missing snapshot are found.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from .journal import Cut, journal_name
from .snapshot import SnapshotCase


class Damage(NamedTuple):
    """One finding: what is wrong, in which file, and what it lost where that is known."""

    path: str
    what: str  # one sentence, for the operator
    transactions: tuple[tuple[int, int], ...] = ()  # ((first, last), ...) ids of transactions lost, where known
    updates: int = 0  # updates lost, at least (counted from frame headers that survive)

    def lost_transactions(self) -> int:
        return sum(last - first + 1 for first, last in self.transactions)


class JournalSeen(NamedTuple):
    """A journal file as recovery read it."""

    partition: int
    path: str
    generation: int | None  # None: no intact header, or a format before 3
    partitions: int | None
    frames: int  # intact frames it holds
    first_txid: int | None = None  # the id of its first intact frame


class Reading(NamedTuple):
    """Everything the judgement needs of what `read_state` read."""

    directory: str
    case: SnapshotCase
    snapshot_path: str
    snapshot_max_txid: int  # of the snapshot recovery restores from (0 without one)
    snapshot_holds_state: bool  # it holds records or swap files, or a max transaction id above 0
    journals: list[JournalSeen]  # present journal files
    replayed: list[int]  # ids of the transactions replayed, ascending
    watermark: int  # the highest durable watermark among the replayed frames
    cuts: list[Cut]


def judge(reading: Reading) -> list[Damage]:
    """Every `Damage` in what was read; [] when a crash (or nothing) explains it all."""
    damage = [_damaged_frame(cut) for cut in reading.cuts if not cut.explained]
    snapshot = _missing_snapshot(reading)
    damage += snapshot + _missing_journals(reading)
    known = {cut.txid for cut in reading.cuts if not cut.explained and cut.txid is not None}
    # What a missing snapshot held is reported with it, not again as missing transactions.
    base = max([reading.snapshot_max_txid] + [last for found in snapshot for _, last in found.transactions])
    damage += _missing_transactions(reading, base, known)
    return damage


def _damaged_frame(cut: Cut) -> Damage:
    lost = ((cut.txid, cut.txid),) if cut.txid is not None else ()
    return Damage(cut.path, f"bytes {cut.offset}..{cut.end}: {cut.reason}", lost, cut.updates)


def _missing_snapshot(reading: Reading) -> list[Damage]:
    case, journals = reading.case, reading.journals
    if case is SnapshotCase.NEITHER:
        # A snapshot of transaction 0 held nothing; losing it loses nothing.
        needed = [(j, _snapshot_needed(j)) for j in journals if _snapshot_needed(j) > 0]
        if needed:
            journal, upto = needed[0]
            return [
                Damage(
                    reading.snapshot_path,
                    f"the snapshot is missing, but {journal.path} follows a snapshot of the transactions up to "
                    f"{upto}: every FlowFile the snapshot held is lost",
                    ((1, upto),),
                )
            ]
        return []
    if case is SnapshotCase.PARTIAL_ONLY:
        return []  # the .partial holds every transaction the journals hold
    newer = [
        (j, j.generation)
        for j in journals
        if j.generation is not None
        and j.generation > reading.snapshot_max_txid
        and (j.frames or case is SnapshotCase.SNAPSHOT_ONLY)
    ]
    if newer:
        journal, generation = newer[0]
        return [
            Damage(
                reading.snapshot_path,
                f"the snapshot covers transactions up to {reading.snapshot_max_txid}, but {journal.path} was "
                f"created after a snapshot of transactions up to {generation}: the snapshot is older "
                "than its journals (restored from an older copy?), and the transactions in between are lost",
                ((reading.snapshot_max_txid + 1, generation),),
            )
        ]
    return []


def _snapshot_needed(journal: JournalSeen) -> int:
    """The max transaction id of the snapshot `journal` follows (0: none was needed)."""
    if journal.generation is not None:
        return journal.generation
    return journal.first_txid - 1 if journal.first_txid is not None else 0


def _missing_journals(reading: Reading) -> list[Damage]:
    if reading.case not in (SnapshotCase.SNAPSHOT_ONLY, SnapshotCase.BOTH):
        return []
    present = {j.partition for j in reading.journals}
    declared = [j for j in reading.journals if j.partitions is not None]
    current = [j for j in declared if j.generation == reading.snapshot_max_txid]
    if current or declared:
        expected = max(j.partitions for j in (current or declared) if j.partitions is not None)
        why = f"of the set of {expected} journals the snapshot's checkpoint created"
    elif not present:
        if not reading.snapshot_holds_state:
            return []  # the first checkpoint of an empty WAL, cut short by a crash (before journal sets)
        return [
            Damage(
                _journal_path(reading.directory, 0),
                "every journal is missing, though the snapshot holds state and journals always exist beside "
                "it: every transaction since the snapshot is lost",
            )
        ]
    else:
        expected = max(present) + 1
        why = "numbered below the highest journal present"
    missing = [p for p in range(expected) if p not in present]
    return [
        Damage(
            _journal_path(reading.directory, p),
            f"the journal is missing: it is one {why}, and every transaction it held is lost",
        )
        for p in missing
    ]


def _missing_transactions(reading: Reading, base: int, known: set[int]) -> list[Damage]:
    gaps = list(missing_ranges(base, reading.watermark, reading.replayed))
    gaps = list(_without(gaps, known))
    if not gaps:
        return []
    count = sum(last - first + 1 for first, last in gaps)
    tails = [cut for cut in reading.cuts if cut.explained]
    updates = sum(
        cut.updates for cut in tails if cut.txid is not None and any(first <= cut.txid <= last for first, last in gaps)
    )
    where = "; ".join(f"{cut.path} was cut at byte {cut.offset} ({cut.reason})" for cut in tails[:4])
    return [
        Damage(
            reading.directory,
            f"{count} transaction(s) ({format_ranges(gaps)}) are in no journal, yet a later transaction "
            f"recorded every transaction up to {reading.watermark} as durable, so no crash took them"
            + (f"; {where}" if where else "; a journal lost them (deleted, truncated or replaced)"),
            tuple(gaps),
            updates,
        )
    ]


def missing_ranges(base: int, top: int, present: Iterable[int]) -> Iterator[tuple[int, int]]:
    """The ranges (first, last) of ids in base+1 .. top that `present` (ascending) lacks."""
    expected = base + 1
    for txid in present:
        if txid > top:
            break
        if txid < expected:
            continue
        if txid > expected:
            yield expected, txid - 1
        expected = txid + 1
    if expected <= top:
        yield expected, top


def _without(ranges: Iterable[tuple[int, int]], ids: set[int]) -> Iterator[tuple[int, int]]:
    """`ranges` less the single ids in `ids`."""
    for first, last in ranges:
        start = first
        for txid in sorted(t for t in ids if first <= t <= last):
            if txid > start:
                yield start, txid - 1
            start = txid + 1
        if start <= last:
            yield start, last


def format_ranges(ranges: Sequence[tuple[int, int]], limit: int = 5) -> str:
    shown = [f"{first}" if first == last else f"{first}..{last}" for first, last in ranges[:limit]]
    more = f" and {len(ranges) - limit} more ranges" if len(ranges) > limit else ""
    return "ids " + ", ".join(shown) + more


def _journal_path(directory: str, partition: int) -> str:
    return f"{directory.rstrip('/')}/{journal_name(partition)}"
