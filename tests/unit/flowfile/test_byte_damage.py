"""Damage the journal's bytes on disk and assert exactly what survives.

Each transaction puts its own records, so "what survives" is exact: every
transaction whose bytes are intact, and nothing of a damaged one.
"""

from __future__ import annotations

import os

import pytest

from repositories.flowfile import FlowFileSerDe, Put, list_wal_files, read_state
from repositories.flowfile import format as fmt
from repositories.storage import LocalStorage

from .helpers import make_record, open_wal

TRANSACTIONS = 6


@pytest.fixture(scope="module")
def journal(tmp_path_factory):
    """A one-partition WAL with TRANSACTIONS transactions; returns (dir, bytes, txn ranges)."""
    directory = str(tmp_path_factory.mktemp("damage") / "wal")
    storage = LocalStorage()
    wal = open_wal(storage, directory, partitions=1)
    wal.recover()
    ranges = []
    path = os.path.join(directory, "journal-0")
    for txn in range(TRANSACTIONS):
        start = os.path.getsize(path)
        wal.update([Put(make_record(txn * 2)), Put(make_record(txn * 2 + 1))])
        ranges.append((start, os.path.getsize(path)))
    wal.close()
    return directory, open(path, "rb").read(), ranges


def recovered(directory: str, data: bytes):
    with open(os.path.join(directory, "journal-0"), "wb") as handle:
        handle.write(data)
    storage = LocalStorage()
    state = read_state(storage, directory, list_wal_files(storage, directory), FlowFileSerDe(), epoch=0)
    return set(state.records), state.report


def ids_of(transactions) -> set:
    return {f"ff-{n}" for txn in transactions for n in (txn * 2, txn * 2 + 1)}


def test_truncate_at_every_offset_of_the_last_transactions(journal):
    directory, data, ranges = journal
    first = ranges[-3][0]
    for cut_at in range(first, len(data) + 1):
        complete = [txn for txn, (_, end) in enumerate(ranges) if end <= cut_at]
        records, report = recovered(directory, data[:cut_at])
        assert records == ids_of(complete), cut_at
        assert not report.unexplained, cut_at
        assert bool(report.cuts) == (cut_at not in {end for _, end in ranges}), cut_at


@pytest.mark.parametrize("nuls", [1, 7, 33, 4096])
def test_appended_nuls_are_a_crash_tail(journal, nuls):
    directory, data, _ = journal
    records, report = recovered(directory, data + b"\0" * nuls)
    assert records == ids_of(range(TRANSACTIONS))
    assert len(report.cuts) == 1 and report.cuts[0].explained and "NUL" in report.cuts[0].reason


def test_a_flipped_bit_loses_only_its_own_transaction(journal):
    directory, data, ranges = journal
    first = ranges[-3][0]
    for position in range(first, len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 1 << (position % 8)
        hit = next(txn for txn, (start, end) in enumerate(ranges) if start <= position < end)
        records, report = recovered(directory, bytes(damaged))
        assert records == ids_of(t for t in range(TRANSACTIONS) if t != hit), position
        assert report.cuts, position
        # Damage before intact transactions is not what a crash leaves.
        assert bool(report.unexplained) == (hit != TRANSACTIONS - 1), position


def test_flipped_bit_in_the_journal_header_is_a_clear_error(journal):
    directory, data, _ = journal
    damaged = bytearray(data)
    damaged[12] ^= 0x01
    from repositories.flowfile import CorruptJournalError

    with pytest.raises(CorruptJournalError, match="journal-0 at offset 0"):
        recovered(directory, bytes(damaged))


def test_fsck_reports_unexplained_damage(journal, capsys):
    from cluster.cli import main

    directory, data, ranges = journal
    recovered(directory, data)
    assert main(["wal", "fsck", directory]) == 0
    damaged = bytearray(data)
    damaged[ranges[1][0] + fmt.FRAME_HEADER_SIZE + 3] ^= 0x40
    recovered(directory, bytes(damaged))
    assert main(["wal", "fsck", directory]) == 1
    assert main(["wal", "inspect", directory, "--json"]) == 0
    assert '"unexplained_damage": 1' in capsys.readouterr().out
    recovered(directory, data)  # leave the module fixture intact
