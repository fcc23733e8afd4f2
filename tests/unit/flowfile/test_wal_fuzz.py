"""Fuzzing the FlowFile WAL's recovery on damaged files: a WAL of two journals and a
snapshot, written by the real WAL, has one of its files damaged (bits flipped, bytes
overwritten, zeroed, inserted or written twice, the file cut short), in one of the
restore cases (snapshot; snapshot and a `.partial`; `.partial` alone). Then a node
starts on it: `WriteAheadLog.recover()`, every record decoded, and a second restart.
The files the previous release wrote (format 1 journals and snapshots) are damaged
the same way.

Each restart answers within 2 s and 256 MB with the records, or with a
`WriteAheadLogError` that says why. A node that starts without accepting damage starts
only on what a crash could have left: the transactions after the checkpoint, up to
some point (the writer syncs each before it writes the next, so a crash loses only the
newest), and nothing else missing. Accepting the damage, what it returns was written:
no id that was never written, every record equal to a version of it that was written,
every swap file one that was registered. Damage in a journal costs only the
transactions at and after the first damaged byte of that journal (the package
docstring: every intact transaction is replayed); a damaged snapshot is refused, never
read in part; and a second restart finds what the first one restored.

About 260 examples; CUSTODY_LONG=1 runs twenty times as many.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repositories.flowfile import (
    Delete,
    FlowFileRecord,
    Put,
    SwapFile,
    SwapIn,
    SwapOut,
    WriteAheadLogError,
    decode_records,
)
from repositories.flowfile import format as fmt
from repositories.flowfile.record import apply_update
from repositories.flowfile.snapshot import PARTIAL_NAME, SNAPSHOT_NAME
from repositories.storage import LocalStorage
from tests.damaged_files import damaged_bytes, fuzz_settings, scratch_directory, within_bounds

from .helpers import make_record, open_wal
from .test_lazy_and_versions import DATA

SWAP_A = SwapFile("swap/q1.0.swap", "q1", 2, 20)
SWAP_B = SwapFile("swap/q1.1.swap", "q1", 1, 10)
ODD = FlowFileRecord("odd\0id é", {"k\0ey": "välue", "": ""}, None, "q2", 0, 5, 4, 3)
BEFORE_CHECKPOINT = [
    [Put(make_record(n)) for n in range(4)],
    [Put(make_record(4)), Put(make_record(5)), Put(ODD)],
    [SwapOut(SWAP_A, ("ff-0", "ff-1"))],
    [Delete("ff-2")],
]
AFTER_CHECKPOINT = [
    [Put(make_record(3, version=1))],
    [Put(make_record(6)), Put(make_record(7))],
    [SwapIn(SWAP_A.location), Put(make_record(0, version=1)), Put(make_record(1, version=1))],
    [Delete("ff-4")],
    [SwapOut(SWAP_B, ("ff-6",))],
    [Put(make_record(8)), Delete(ODD.id)],
    [Put(make_record(5, version=2)), Delete("ff-7")],
    [Put(make_record(9))],
]


@dataclass(frozen=True)
class Transaction:
    txid: int
    journal: str  # the file name
    end: int  # the offset just past its frame
    updates: list


@dataclass(frozen=True, repr=False)
class Written:
    files: dict  # name -> bytes
    transactions: list  # [Transaction], those after the checkpoint
    landmarks: dict  # name -> offsets where a change hurts most
    final: tuple  # (records, swap files) with every transaction applied


def state_after(transactions) -> tuple[dict, dict]:
    records, swap_files = {}, {}
    for updates in transactions:
        for update in updates:
            apply_update(records, swap_files, update)
    return records, swap_files


def read_files(directory: str) -> dict:
    return {
        name: open(os.path.join(directory, name), "rb").read()
        for name in sorted(os.listdir(directory))
        if os.path.isfile(os.path.join(directory, name))
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Written:
    directory = str(tmp_path_factory.mktemp("wal") / "wal")
    wal = open_wal(LocalStorage(), directory)
    wal.recover()
    for updates in BEFORE_CHECKPOINT:
        wal.update(updates)
    wal.checkpoint()
    transactions = []
    for updates in AFTER_CHECKPOINT:
        sizes = {name: len(data) for name, data in read_files(directory).items()}
        txid = wal.update(updates)
        (journal,) = [name for name, data in read_files(directory).items() if len(data) != sizes[name]]
        transactions.append(Transaction(txid, journal, os.path.getsize(os.path.join(directory, journal)), updates))
    wal.close()
    files = read_files(directory)
    assert set(files) == {"journal-0", "journal-1", SNAPSHOT_NAME}
    landmarks = {name: file_landmarks(name, data) for name, data in files.items()}
    for transaction in transactions:  # each frame's start, where the next one's header begins
        landmarks[transaction.journal] += (transaction.end,)
    return Written(files, transactions, landmarks, state_after(BEFORE_CHECKPOINT + AFTER_CHECKPOINT))


def file_landmarks(name: str, data: bytes) -> tuple:
    """The SerDe name's length, the end of the header, and for a snapshot its trailer."""
    if name.startswith(SNAPSHOT_NAME):
        header = fmt.unpack_file_header(data, fmt.SNAPSHOT_MAGIC, fmt.SNAPSHOT_COUNTS.size)[0]
        return 18, header.length, len(data) - fmt.SNAPSHOT_TRAILER.size
    return 18, fmt.unpack_journal_header(data).length


def restart(directory: str, accept_damage: bool = False):
    """What a node does at start: recover, then read every record."""

    def run():
        wal = open_wal(LocalStorage(), directory, accept_damage=accept_damage)
        try:
            records = wal.recover()
            decode_records(records.values())
            return records, dict(wal.swap_files)
        finally:
            wal.close()

    return within_bounds(run, (WriteAheadLogError,))


def written_versions() -> dict:
    versions: dict = {}
    for updates in BEFORE_CHECKPOINT + AFTER_CHECKPOINT:
        for update in updates:
            if isinstance(update, Put):
                versions.setdefault(update.record.id, []).append(update.record)
    return versions


VERSIONS = written_versions()
SWAP_FILES = {SWAP_A.location: SWAP_A, SWAP_B.location: SWAP_B}


def check_only_written(records: dict, swap_files: dict) -> None:
    for record_id, record in records.items():
        assert record_id in VERSIONS, f"{record_id!r} was never written"
        assert record in VERSIONS[record_id], f"{record!r} is no version written"
    for location, swap_file in swap_files.items():
        assert SWAP_FILES.get(location) == swap_file, f"{swap_file} was never registered"


def check_intact_transactions_kept(written: Written, damaged: str, first_change: int, records, swap_files) -> None:
    """Whatever an intact transaction (all of it before the first changed byte, or in
    another journal) left last in a record or swap file is what recovery shows; what the
    snapshot holds and no later transaction touched is there too."""
    last = {}  # ("record"|"swap", key) -> (transaction or None for the snapshot, update)
    for update in (u for updates in BEFORE_CHECKPOINT for u in updates):
        for key in touched(update):
            last[key] = (None, update)
    for transaction in written.transactions:
        for update in transaction.updates:
            for key in touched(update):
                last[key] = (transaction, update)
    for (kind, key), (transaction, update) in last.items():
        if transaction is not None and transaction.journal == damaged and transaction.end > first_change:
            continue
        state = records if kind == "record" else swap_files
        expected = written.final[0 if kind == "record" else 1].get(key)
        assert state.get(key) == expected, f"{kind} {key!r}: {state.get(key)!r}, expected {expected!r} ({update})"


def touched(update) -> list:
    if isinstance(update, Put):
        return [("record", update.record.id)]
    if isinstance(update, Delete):
        return [("record", update.record_id)]
    if isinstance(update, SwapOut):
        return [("swap", update.swap_file.location)] + [("record", i) for i in update.record_ids]
    return [("swap", update.location)]


CASES = {  # restore case -> the snapshot files present, and what they hold
    "snapshot": {SNAPSHOT_NAME: SNAPSHOT_NAME},
    "snapshot and partial": {SNAPSHOT_NAME: SNAPSHOT_NAME, PARTIAL_NAME: SNAPSHOT_NAME},
    "partial": {PARTIAL_NAME: SNAPSHOT_NAME},
}


@fuzz_settings(200)
@given(data=st.data(), case=st.sampled_from(sorted(CASES)))
def test_recovery_of_a_damaged_wal_keeps_what_is_intact_or_refuses(written, data, case):
    files = {name: content for name, content in written.files.items() if name.startswith("journal-")}
    files.update({name: written.files[source] for name, source in CASES[case].items()})
    target = data.draw(st.sampled_from(sorted(files)), label="damaged file")
    landmarks = written.landmarks[CASES[case].get(target, target)]
    damaged = data.draw(damaged_bytes(files[target], landmarks), label="damage")
    files[target] = damaged.content
    with scratch_directory() as root:
        directory = os.path.join(root, "wal")
        os.mkdir(directory)
        for name, content in files.items():
            with open(os.path.join(directory, name), "wb") as handle:
                handle.write(content)
        outcome, value = restart(directory)
        if outcome == "returned":
            assert value in CRASH_STATES, "started, without accepting damage, on what no crash leaves"
        outcome, value = restart(directory, accept_damage=True)
        if outcome == "refused":
            return
        records, swap_files = value
        check_only_written(records, swap_files)
        in_use = SNAPSHOT_NAME if SNAPSHOT_NAME in files else PARTIAL_NAME
        if target.startswith("journal-"):
            check_intact_transactions_kept(written, target, damaged.first_change, records, swap_files)
        elif target == in_use:
            assert damaged.first_change == len(written.files[SNAPSHOT_NAME]) == len(damaged.content), (
                "a changed snapshot was read"
            )
        if target != in_use:
            assert target.startswith("journal-") or (records, swap_files) == written.final
        again, value_again = restart(directory)
        assert (again, value_again) == ("returned", (records, swap_files)), "a second restart found another state"


# What a crash can leave: the checkpoint's state and the first k transactions after it.
CRASH_STATES = [state_after(BEFORE_CHECKPOINT + AFTER_CHECKPOINT[:k]) for k in range(len(AFTER_CHECKPOINT) + 1)]

# name -> shard epoch they were written at
OLD_FORMATS = {"wal-format1-serde2": 3, "wal-journal1-snapshot2-serde3": 5, "wal-journal2-snapshot2-serde3": 6}


@pytest.mark.parametrize("name", sorted(OLD_FORMATS))
@fuzz_settings(30)
@given(data=st.data())
def test_recovery_of_damaged_files_of_the_previous_formats_answers_or_refuses(name, data):
    source = os.path.join(DATA, name)
    files = read_files(source)
    target = data.draw(st.sampled_from(sorted(files)), label="damaged file")
    damaged = data.draw(damaged_bytes(files[target], (18,)), label="damage")
    with scratch_directory() as root:
        directory = os.path.join(root, "wal")
        shutil.copytree(source, directory)
        with open(os.path.join(directory, target), "wb") as handle:
            handle.write(damaged.content)
        restart_at(directory, OLD_FORMATS[name])


def restart_at(directory: str, epoch: int) -> None:
    def run():
        wal = open_wal(LocalStorage(), directory, epoch=epoch, accept_damage=True)
        try:
            decode_records(wal.recover().values())
        finally:
            wal.close()

    within_bounds(run, (WriteAheadLogError,))
