"""Damage the journal's bytes on disk and assert exactly what survives.

Each transaction puts its own records, so "what survives" is exact: every
transaction whose bytes are intact, and nothing of a damaged one.
"""

from __future__ import annotations

import os
import shutil

import pytest

from repositories.flowfile import FlowFileRecord, FlowFileSerDe, Put, list_wal_files, read_state
from repositories.flowfile import format as fmt
from repositories.flowfile.record import apply_update
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


# -- a frame carried inside a payload -------------------------------------------------

FORGED_TXID = 10**6


def forged_frame_text(serde) -> tuple[str, str]:
    """An attribute value whose UTF-8 bytes hold a complete, CRC-valid frame of the
    format this release writes (a Put of a record named "forged", with a transaction id
    far above any real one), and that record's id. Attribute values are user data:
    a flow can receive this text from anywhere."""
    for attempt in range(1 << 20):
        record = FlowFileRecord("forged", {"n": "x" * (attempt % 61) + str(attempt)}, None, "q1", 0, 0, 0, 0)
        payload = fmt.pack_payload([serde.encode_update(Put(record))])
        frame = fmt.pack_frame(FORGED_TXID, 0, 1, payload, fmt.crc32(payload), 0)
        try:
            # The frame's marker byte 0xA5 follows a 0xC2 (together: U+00A5), and its
            # last byte, the Commit marker 0xCC, is followed by a 0x80 (U+0300).
            return "user data " + (b"\xc2" + frame + b"\x80").decode("utf-8") + " more user data", record.id
        except UnicodeDecodeError:
            continue
    raise AssertionError("no attempt gave a frame that is valid UTF-8")


def test_a_frame_inside_a_payload_is_never_replayed_after_a_damaged_header(tmp_path):
    """One bit flipped in the header of a transaction whose attribute value carries a
    complete, CRC-valid frame: recovery must not look for frames inside that payload.
    It loses only the damaged transaction, replays nothing of the forged one, and keeps
    every later intact transaction (a forged high transaction id must not make them
    look "already in the snapshot")."""
    directory = str(tmp_path / "wal")
    storage = LocalStorage()
    wal = open_wal(storage, directory, partitions=1)
    wal.recover()
    path = os.path.join(directory, "journal-0")
    text, forged_id = forged_frame_text(FlowFileSerDe())
    carrier = make_record(2).replace(attributes={"filename": "carrier", "payload": text})
    ranges = []
    for updates in (
        [Put(make_record(0)), Put(make_record(1))],
        [Put(carrier)],
        [Put(make_record(4)), Put(make_record(5))],
        [Put(make_record(6))],
    ):
        start = os.path.getsize(path)
        wal.update(updates)
        ranges.append((start, os.path.getsize(path)))
    wal.close()
    data = open(path, "rb").read()
    carrier_start, carrier_end = ranges[1]
    assert data.find(b"\xa5", carrier_start + 1, carrier_end) != -1  # the forged frame is in there
    for bit in range(8):
        for position in (carrier_start, carrier_start + 3):  # the marker, then a txid byte
            damaged = bytearray(data)
            damaged[position] ^= 1 << bit
            records, report = recovered(directory, bytes(damaged))
            assert forged_id not in records, (position, bit)
            assert records == {"ff-0", "ff-1", "ff-4", "ff-5", "ff-6"}, (position, bit)
            assert report.max_txid == 4, (position, bit)
            assert [(cut.offset, cut.end, cut.explained) for cut in report.cuts] == [
                (carrier_start, carrier_end, False)
            ], (position, bit)


def test_a_frame_whose_header_and_length_guard_are_both_damaged_cuts_the_rest_of_its_journal(journal):
    """Nothing trusted says where the next frame starts: the rest is cut (and kept in
    cut/), not searched for something that looks like a frame."""
    directory, data, ranges = journal
    start, _ = ranges[2]
    damaged = bytearray(data)
    damaged[start + 1] ^= 0x01  # the transaction id
    damaged[start + fmt.FRAME_HEADER_SIZE - 1] ^= 0x01  # the length guard's CRC
    records, report = recovered(directory, bytes(damaged))
    assert records == ids_of(range(2))
    assert [(cut.offset, cut.end, cut.explained) for cut in report.cuts] == [(start, len(data), False)]
    assert "length guard" in report.cuts[0].reason


def test_a_frame_whose_transaction_id_does_not_increase_is_cut(tmp_path):
    directory = str(tmp_path / "wal")
    storage = LocalStorage()
    open_wal(storage, directory, partitions=1).recover()
    serde = FlowFileSerDe()
    frames = []
    for txid in (1, 3, 2, 4):
        payload = fmt.pack_payload([serde.encode_update(Put(make_record(txid)))])
        frames.append(fmt.pack_frame(txid, 0, 1, payload, fmt.crc32(payload), 0))
    header = fmt.pack_journal_header(0, serde.name, serde.version, 0, 1)
    records, report = recovered(directory, header + b"".join(frames))
    assert records == {"ff-1", "ff-3", "ff-4"}
    (cut,) = report.cuts
    assert (cut.txid, cut.explained) == (2, False) and "follows transaction 3" in cut.reason


def test_a_damaged_header_in_a_journal_of_format_1_cuts_the_rest_of_that_journal_only(tmp_path):
    """Format 1 frames have no length guard: past a damaged header nothing can be
    located without searching user data, so the rest of that journal is cut."""
    from .test_lazy_and_versions import DATA, journal_format_1_transactions

    directory = str(tmp_path / "wal")
    shutil.copytree(os.path.join(DATA, "wal-journal1-snapshot2-serde3"), directory)
    path = os.path.join(directory, "journal-0")
    data = open(path, "rb").read()
    header_length = fmt.unpack_file_header(data, fmt.JOURNAL_MAGIC)[0].length
    damaged = bytearray(data)
    damaged[header_length + 1] ^= 0x01  # the first frame's transaction id
    storage = LocalStorage()
    with open(path, "wb") as handle:
        handle.write(bytes(damaged))
    state = read_state(storage, directory, list_wal_files(storage, directory), FlowFileSerDe(), epoch=5)
    before, after = journal_format_1_transactions()
    expected, swaps = {}, {}
    for transaction in before + [after[1], after[3]]:  # journal-1 holds transactions 4 and 6
        for update in transaction:
            apply_update(expected, swaps, update)
    assert state.records == expected and state.swap_files == swaps
    (cut,) = state.report.cuts
    assert (cut.path, cut.offset, cut.end, cut.explained) == (path, header_length, len(data), False)
