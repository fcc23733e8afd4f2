"""A WAL damaged in a way no crash explains refuses to recover, changes nothing, and
names what was lost; accepted, it recovers what survives and keeps a report.

The WALs here are written as a node writes them: several partitions, each transaction
synced before the next is written, so that every later frame records the earlier ones
as durable. Then one file is deleted, cut or flipped, as an operator's mistake or a
disk would do it.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from repositories.flowfile import CheckpointError, Put, WalDamagedError, list_wal_files, read_state
from repositories.flowfile import format as fmt
from repositories.flowfile.damage import (
    JournalSeen,
    Reading,
    format_ranges,
    judge,
    missing_ranges,
)
from repositories.flowfile.journal import Cut
from repositories.flowfile.snapshot import PARTIAL_NAME, SNAPSHOT_NAME, SnapshotCase
from repositories.flowfile.watermark import TransactionIds
from repositories.storage import LocalStorage

from .helpers import make_record, open_wal

PARTITIONS = 4
BEFORE, AFTER = 40, 200  # records put before the checkpoint, and after it (one per transaction)


@pytest.fixture
def storage():
    return LocalStorage()


def written_wal(storage, directory: str) -> dict:
    """A WAL of 4 partitions: a checkpoint of BEFORE records, then AFTER transactions
    of one record each; returns the records."""
    wal = open_wal(storage, directory, partitions=PARTITIONS)
    wal.recover()
    for n in range(BEFORE):
        wal.update([Put(make_record(n))])
    wal.checkpoint()
    for n in range(BEFORE, BEFORE + AFTER):
        wal.update([Put(make_record(n))])
    records = dict(wal.records)
    wal.close()
    return records


def files_of(directory: str) -> dict:
    return {
        name: open(os.path.join(directory, name), "rb").read()
        for name in os.listdir(directory)
        if os.path.isfile(os.path.join(directory, name))
    }


def refused(storage, directory: str) -> WalDamagedError:
    before = files_of(directory)
    with pytest.raises(WalDamagedError) as caught:
        open_wal(storage, directory, partitions=PARTITIONS).recover()
    assert files_of(directory) == before, "a refused recovery changed the directory"
    assert not os.path.exists(os.path.join(directory, "cut")), "a refused recovery wrote side files"
    return caught.value


def test_a_deleted_journal_is_refused_naming_the_journal_and_the_transactions(storage, tmp_path):
    directory = str(tmp_path / "wal")
    written_wal(storage, directory)
    os.unlink(os.path.join(directory, "journal-0"))
    error = refused(storage, directory)
    message = str(error)
    assert "journal-0: the journal is missing" in message and "4 journals" in message
    assert "Nothing was changed or deleted" in message and "--accept-damage" in message
    lost = sum(found.lost_transactions() for found in error.damage)
    assert lost >= AFTER // PARTITIONS - 1, error.damage  # journal-0's share, less its newest (a crash may take it)


def test_a_journal_cut_deep_inside_is_refused_though_the_cut_looks_like_a_torn_tail(storage, tmp_path):
    directory = str(tmp_path / "wal")
    written_wal(storage, directory)
    path = os.path.join(directory, "journal-0")
    data = open(path, "rb").read()
    with open(path, "wb") as handle:
        handle.write(data[: len(data) // 2])
    error = refused(storage, directory)
    assert "no crash took them" in str(error) and "journal-0 was cut at byte" in str(error)
    assert sum(found.lost_transactions() for found in error.damage) >= AFTER // PARTITIONS // 2 - 1


def test_a_flipped_byte_inside_a_journal_is_refused(storage, tmp_path):
    directory = str(tmp_path / "wal")
    written_wal(storage, directory)
    path = os.path.join(directory, "journal-1")
    data = bytearray(open(path, "rb").read())
    data[len(data) // 3] ^= 0x20
    with open(path, "wb") as handle:
        handle.write(bytes(data))
    error = refused(storage, directory)
    assert "journal-1" in str(error)


def test_a_deleted_snapshot_is_refused(storage, tmp_path):
    directory = str(tmp_path / "wal")
    written_wal(storage, directory)
    os.unlink(os.path.join(directory, SNAPSHOT_NAME))
    error = refused(storage, directory)
    assert "the snapshot is missing" in str(error)
    assert error.damage[0].transactions == ((1, BEFORE),)


def test_a_snapshot_replaced_by_an_older_copy_is_refused(storage, tmp_path):
    directory = str(tmp_path / "wal")
    wal = open_wal(storage, directory, partitions=PARTITIONS)
    wal.recover()
    wal.update([Put(make_record(0))])
    wal.checkpoint()
    old = open(os.path.join(directory, SNAPSHOT_NAME), "rb").read()
    wal.update([Put(make_record(1))])
    wal.checkpoint()
    wal.update([Put(make_record(2))])
    wal.close()
    with open(os.path.join(directory, SNAPSHOT_NAME), "wb") as handle:
        handle.write(old)
    assert "older than its journals" in str(refused(storage, directory))


def test_accepted_damage_recovers_what_survives_and_keeps_a_report(storage, tmp_path):
    directory = str(tmp_path / "wal")
    records = written_wal(storage, directory)
    os.unlink(os.path.join(directory, "journal-2"))
    wal = open_wal(storage, directory, partitions=PARTITIONS, accept_damage=True)
    recovered = wal.recover()
    report = wal.last_recovery
    assert report.damage_accepted and report.damage
    assert set(recovered) < set(records) and all(recovered[key] == records[key] for key in recovered)
    assert set(make_record(n).id for n in range(BEFORE)) <= set(recovered)  # the snapshot's, untouched
    assert report.transactions_lost == len(records) - len(recovered)
    (saved,) = wal.damage_reports()
    assert json.load(open(saved))["transactions_lost"] == report.transactions_lost
    wal.damage_handled(saved)
    assert wal.damage_reports() == []
    wal.update([Put(make_record(999))])
    wal.close()
    again = open_wal(storage, directory, partitions=PARTITIONS)  # no longer damaged: the acceptance rewrote it
    assert set(again.recover()) == set(recovered) | {"ff-999"}
    assert not again.last_recovery.damage
    again.close()


def test_what_a_crash_leaves_is_no_damage(storage, tmp_path):
    """The newest frame torn: the unsynced tail of its journal's last group commit
    (no other frame records it durable). Tearing an older frame is refused above."""
    from repositories.flowfile.journal import scan_journal

    directory = str(tmp_path / "wal")
    wal = open_wal(storage, directory, partitions=PARTITIONS)
    wal.recover()
    for n in range(20):
        wal.update([Put(make_record(n))])
    wal.close()
    newest = max(
        (name for name in files_of(directory) if name.startswith("journal-")),
        key=lambda name: scan_journal(name, files_of(directory)[name]).frames[-1].txid,
    )
    path = os.path.join(directory, newest)
    data = open(path, "rb").read()
    with open(path, "wb") as handle:
        handle.write(data[:-7])
    again = open_wal(storage, directory, partitions=PARTITIONS)
    assert set(again.recover()) == {make_record(n).id for n in range(19)}
    assert not again.last_recovery.damage and again.last_recovery.cuts[0].explained
    again.close()


@pytest.mark.parametrize(
    "seam",
    [
        "checkpoint_started",
        "checkpoint_journal_prepared",
        "checkpoint_partial_written",
        "checkpoint_snapshot_deleted",
        "checkpoint_renamed",
        "checkpoint_journal_reset",
    ],
)
@pytest.mark.parametrize("partitions", [2, 6])
def test_a_crash_inside_a_checkpoint_that_changes_the_journal_set_is_no_damage(storage, tmp_path, seam, partitions):
    """Partitions 4 -> 2 or 6 (journals deleted or created), and a crash at each seam of
    the checkpoint that does it; and the first checkpoint of a new WAL likewise."""
    from repositories.flowfile import WalHooks

    class Crash(Exception):
        pass

    class CrashAt(WalHooks):
        def __getattribute__(self, name):
            if name == seam:

                def crash(*_args, **_kwargs):
                    raise Crash(name)

                return crash
            return super().__getattribute__(name)

    directory = str(tmp_path / "wal")
    records = written_wal(storage, directory)
    wal = open_wal(storage, directory, partitions=partitions, hooks=CrashAt())
    with pytest.raises(CheckpointError):
        wal.recover()  # the journal set differs from the partitions: a checkpoint at once
    again = open_wal(storage, directory, partitions=partitions)
    assert again.recover() == records
    assert not again.last_recovery.damage
    again.close()
    if seam == "checkpoint_journal_prepared":
        return  # a new WAL has no journal yet, so its first checkpoint prepares no next one
    fresh = str(tmp_path / "fresh")
    with pytest.raises(CheckpointError):
        open_wal(storage, fresh, partitions=partitions, hooks=CrashAt()).recover()
    new = open_wal(storage, fresh, partitions=partitions)
    assert new.recover() == {} and not new.last_recovery.damage
    new.close()


def test_a_new_wal_creates_its_whole_journal_set_before_its_first_snapshot(storage, tmp_path):
    from repositories.flowfile import WalHooks

    directory = str(tmp_path / "wal")
    seen = []

    class Watch(WalHooks):
        def checkpoint_snapshot_deleted(self, path):
            seen.append(sorted(name for name in os.listdir(directory) if name.startswith("journal-")))

    open_wal(storage, directory, partitions=3, hooks=Watch()).recover()
    assert seen == [["journal-0", "journal-1", "journal-2"]]
    header = fmt.unpack_journal_header(open(os.path.join(directory, "journal-1"), "rb").read())
    assert (header.generation, header.partitions) == (0, 3)


def test_fsck_fails_on_damage_and_accepts_it_when_asked(storage, tmp_path, capsys):
    from cluster.cli import main

    directory = str(tmp_path / "wal")
    records = written_wal(storage, directory)
    shutil.copy(os.path.join(directory, "journal-1"), str(tmp_path / "journal-1.copy"))
    os.unlink(os.path.join(directory, "journal-1"))
    assert main(["wal", "fsck", directory]) == 1
    out = capsys.readouterr()
    assert "DAMAGE" in out.out and "journal-1: the journal is missing" in out.out
    assert main(["wal", "fsck", "--accept-damage", directory]) == 0
    out = capsys.readouterr().out
    assert "accepted" in out and "transactions lost" in out
    assert main(["wal", "fsck", directory]) == 0
    wal = open_wal(storage, directory, partitions=PARTITIONS)
    recovered = wal.recover()
    assert set(recovered) < set(records)
    wal.close()


# -- the judgement alone ------------------------------------------------------------------


def reading(**overrides) -> Reading:
    values = dict(
        directory="/w",
        case=SnapshotCase.SNAPSHOT_ONLY,
        snapshot_path="/w/snapshot",
        snapshot_max_txid=10,
        snapshot_holds_state=True,
        journals=[JournalSeen(p, f"/w/journal-{p}", 10, 2, 1, 11 + p) for p in range(2)],
        replayed=[11, 12],
        watermark=11,
        cuts=[],
    )
    values.update(overrides)
    return Reading(**values)


def test_judge_finds_nothing_in_an_intact_directory():
    assert judge(reading()) == []


def test_judge_missing_ranges_and_their_text():
    assert list(missing_ranges(10, 20, [11, 12, 15, 18, 25])) == [(13, 14), (16, 17), (19, 20)]
    assert list(missing_ranges(0, 0, [])) == []
    assert list(missing_ranges(5, 7, [])) == [(6, 7)]
    assert format_ranges([(1, 1), (3, 9)]) == "ids 1, 3..9"
    assert format_ranges([(n, n) for n in range(0, 20, 2)], limit=2) == "ids 0, 2 and 8 more ranges"


def test_judge_a_newest_transaction_a_crash_may_have_taken_is_no_damage():
    assert judge(reading(replayed=[11], watermark=10)) == []


def test_judge_an_id_below_the_watermark_that_no_journal_holds():
    (found,) = judge(reading(replayed=[11, 13], watermark=12))
    assert found.transactions == ((12, 12),) and "no crash took them" in found.what


def test_judge_a_damaged_frame_counts_once():
    cut = Cut("/w/journal-1", 80, 120, "transaction 12 payload CRC mismatch", False, 12, 3)
    (found,) = judge(reading(replayed=[11, 13], watermark=12, cuts=[cut]))
    assert (found.transactions, found.updates) == (((12, 12),), 3)


def test_judge_a_fenced_owners_write_is_no_damage():
    cut = Cut("/w/journal-1", 80, 120, "a fenced owner's write, refused", True, 12, 1)
    assert judge(reading(cuts=[cut])) == []


@pytest.mark.parametrize("case", [SnapshotCase.SNAPSHOT_ONLY, SnapshotCase.BOTH])
def test_judge_a_missing_journal_of_the_set(case):
    journals = [JournalSeen(0, "/w/journal-0", 10, 3, 1, 11), JournalSeen(2, "/w/journal-2", 10, 3, 0, None)]
    (found,) = judge(reading(case=case, journals=journals, replayed=[11], watermark=10))
    assert found.path == "/w/journal-1" and "3 journals" in found.what


def test_judge_stale_journals_of_a_larger_set_do_not_count_while_the_current_set_is_whole():
    """A crash while a checkpoint that shrank the set deleted the stale journals."""
    journals = [
        JournalSeen(0, "/w/journal-0", 10, 2, 0, None),
        JournalSeen(1, "/w/journal-1", 10, 2, 0, None),
        JournalSeen(3, "/w/journal-3", 4, 4, 2, 5),
    ]
    assert judge(reading(journals=journals, replayed=[], watermark=0)) == []


def test_judge_journals_of_a_release_without_journal_sets():
    journals = [JournalSeen(0, "/w/journal-0", None, None, 1, 11), JournalSeen(2, "/w/journal-2", None, None, 1, 12)]
    (found,) = judge(reading(journals=journals, watermark=0))
    assert found.path == "/w/journal-1"
    assert judge(reading(journals=[], snapshot_holds_state=False, replayed=[], watermark=0)) == []
    (none_left,) = judge(reading(journals=[], replayed=[], watermark=0))
    assert "every journal is missing" in none_left.what


def test_judge_a_missing_snapshot():
    assert (
        judge(
            reading(
                case=SnapshotCase.NEITHER,
                snapshot_max_txid=0,
                journals=[JournalSeen(0, "/w/journal-0", 0, 2, 3, 1)],
                replayed=[1, 2, 3],
                watermark=2,
            )
        )
        == []
    )
    (found,) = judge(reading(case=SnapshotCase.NEITHER, snapshot_max_txid=0, replayed=[11, 12], watermark=11))
    assert "snapshot is missing" in found.what and found.transactions == ((1, 10),)
    older = [JournalSeen(0, "/w/journal-0", None, None, 2, 31)]
    (found,) = judge(
        reading(case=SnapshotCase.NEITHER, snapshot_max_txid=0, journals=older, replayed=[31, 32], watermark=0)
    )
    assert found.transactions == ((1, 30),)


def test_judge_a_partial_alone_holds_everything():
    journals = [JournalSeen(0, "/w/journal-0", 3, 4, 2, 4)]
    assert judge(reading(case=SnapshotCase.PARTIAL_ONLY, journals=journals, replayed=[], watermark=0)) == []


def test_the_watermark_never_passes_an_id_still_open():
    ids = TransactionIds(5)
    assert ids.take() == (5, 4)
    assert ids.take() == (6, 4)  # 5 not durable yet
    ids.durable(6)
    assert ids.take() == (7, 4)
    ids.durable(5)
    assert ids.take() == (8, 6)  # 7 open
    ids.durable(7)
    ids.durable(8)
    assert ids.take() == (9, 8)
    assert ids.covered() == 9 and ids.take() == (10, 9)
    assert ids.last() == 10


def test_read_state_reports_the_damage_without_changing_anything(storage, tmp_path):
    """What `custody wal inspect` reads: the same findings, on a live or damaged WAL."""
    directory = str(tmp_path / "wal")
    written_wal(storage, directory)
    os.unlink(os.path.join(directory, "journal-3"))
    before = files_of(directory)
    state = read_state(storage, directory, list_wal_files(storage, directory), open_wal(storage, directory).serde, None)
    assert [found.path.rsplit("/", 1)[-1] for found in state.report.damage][:1] == ["journal-3"]
    assert files_of(directory) == before
    assert not os.path.exists(os.path.join(directory, PARTIAL_NAME))
