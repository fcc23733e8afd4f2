"""WriteAheadLog behaviour on local disk: restore cases, poison, bad input, epochs."""

from __future__ import annotations

import os
import threading

import pytest

from repositories.flowfile import (
    CheckpointError,
    CorruptSnapshotError,
    Delete,
    FlowFileSerDe,
    NotAWriteAheadLogError,
    NotRecoveredError,
    OutcomeUnknownError,
    Put,
    StaleEpochError,
    SwapFile,
    SwapIn,
    SwapOut,
    UnknownSerDeError,
    WalHooks,
    WriteAheadLogPoisonedError,
)
from repositories.flowfile import format as fmt
from repositories.flowfile.snapshot import SnapshotCase
from repositories.storage import LocalStorage, StorageError
from tests.storage_faults import Crash as StorageCrash
from tests.storage_faults import Fault, FaultyStorage, UnbufferedLocalStorage

from .helpers import make_record, open_wal


@pytest.fixture
def storage():
    return LocalStorage()


@pytest.fixture
def directory(tmp_path):
    return str(tmp_path / "wal")


class Crash(Exception):
    """Raised from a fault seam to stop the process at that point (the WAL is then
    abandoned without close, as a SIGKILL would leave it)."""


class CrashAt(WalHooks):
    def __init__(self, seam: str):
        def crash(path):
            raise Crash(f"{seam} {path}")

        super().__init__({seam: crash})  # a misspelt seam raises UnknownSeam here


def fill(wal, numbers, version=0):
    return wal.update([Put(make_record(n, version)) for n in numbers])


def test_update_before_recover_is_refused(storage, directory):
    with pytest.raises(NotRecoveredError):
        open_wal(storage, directory).update([Put(make_record(1))])


def test_round_trip_with_deletes_and_swaps(storage, directory):
    wal = open_wal(storage, directory)
    assert wal.recover() == {}
    fill(wal, range(10))
    wal.update([Delete("ff-3"), SwapOut(SwapFile("swap/1", "q1", 2, 20), ("ff-4", "ff-5"))])
    wal.update([SwapOut(SwapFile("swap/2", "q1", 1, 10), ("ff-6",))])
    wal.update([SwapIn("swap/2"), Put(make_record(6))])
    expected = dict(wal.records)
    wal.close()
    again = open_wal(storage, directory)
    assert again.recover() == expected
    assert set(again.swap_files) == {"swap/1"}
    assert again.last_recovery.max_txid == 4


def test_relocated_swap_registrations_are_checkpointed_at_their_new_place(storage, directory):
    wal = open_wal(storage, directory)
    wal.recover()
    wal.update(
        [
            SwapOut(SwapFile("/old/swap/1", "q1", 2, 20), ("ff-1", "ff-2")),
            SwapOut(SwapFile("/elsewhere/swap/2", "q1", 1, 10), ("ff-3",)),
        ]
    )
    wal.close()
    moved = open_wal(storage, directory, relocate_swap=lambda location: location.replace("/old/", "/new/"))
    moved.recover()
    assert set(moved.swap_files) == {"/new/swap/1", "/elsewhere/swap/2"}
    assert moved.swap_files["/new/swap/1"] == SwapFile("/new/swap/1", "q1", 2, 20)
    assert "1 swap file registrations relocated" in moved.last_recovery.checkpoint_reasons
    moved.close()
    again = open_wal(storage, directory)  # no relocation: the snapshot already has them
    again.recover()
    assert set(again.swap_files) == {"/new/swap/1", "/elsewhere/swap/2"}
    assert not again.last_recovery.checkpoint_reasons


def test_an_unfinished_first_checkpoint_is_an_empty_wal(storage, directory):
    os.makedirs(directory)
    with open(os.path.join(directory, "snapshot.partial"), "wb"):
        pass  # killed as the first checkpoint began: no snapshot, no journal
    wal = open_wal(storage, directory)
    assert wal.recover() == {}
    fill(wal, [1])
    assert sorted(os.listdir(directory)) == ["journal-0", "journal-1", "snapshot"]


def test_a_damaged_partial_beside_journals_is_still_refused(storage, directory):
    wal = open_wal(storage, directory)
    wal.recover()
    fill(wal, [1, 2])
    wal.close()
    os.rename(os.path.join(directory, "snapshot"), os.path.join(directory, "snapshot.partial"))
    with open(os.path.join(directory, "snapshot.partial"), "r+b") as partial:
        partial.truncate(10)
    with pytest.raises(CorruptSnapshotError):
        open_wal(storage, directory).recover()
    assert os.path.exists(os.path.join(directory, "snapshot.partial"))


def test_case_neither_file(storage, directory):
    wal = open_wal(storage, directory)
    wal.recover()
    fill(wal, range(3))
    wal.close()
    os.unlink(os.path.join(directory, "snapshot"))
    again = open_wal(storage, directory)
    assert set(again.recover()) == {"ff-0", "ff-1", "ff-2"}
    assert again.last_recovery.case is SnapshotCase.NEITHER


@pytest.mark.parametrize(
    "seam, case",
    [
        ("checkpoint_started", SnapshotCase.SNAPSHOT_ONLY),
        ("checkpoint_journal_prepared", SnapshotCase.BOTH),
        ("checkpoint_partial_written", SnapshotCase.BOTH),
        ("checkpoint_snapshot_deleted", SnapshotCase.PARTIAL_ONLY),
        ("checkpoint_renamed", SnapshotCase.SNAPSHOT_ONLY),
        ("checkpoint_journal_reset", SnapshotCase.SNAPSHOT_ONLY),
    ],
)
def test_crash_inside_checkpoint_restores_everything(storage, directory, seam, case):
    wal = open_wal(storage, directory)
    wal.recover()
    fill(wal, range(5))
    wal.update([Delete("ff-1")])
    expected = dict(wal.records)
    wal._hooks = CrashAt(seam)
    with pytest.raises(CheckpointError):
        wal.checkpoint()
    with pytest.raises(WriteAheadLogPoisonedError):  # refused until a checkpoint succeeds
        fill(wal, [99])
    again = open_wal(storage, directory)
    assert again.recover() == expected
    assert again.last_recovery.case is case
    names = set(os.listdir(directory))
    assert "snapshot" in names and "snapshot.partial" not in names
    assert {name for name in names if name.startswith("journal-")} == {"journal-0", "journal-1"}  # no next journal left
    fill(again, [7])
    again.close()
    third = open_wal(storage, directory)
    assert set(third.recover()) == set(expected) | {"ff-7"}


@pytest.mark.parametrize(
    "where", [Fault("delete", "after", path="snapshot"), Fault("rename", "before", path="snapshot")]
)
def test_a_checkpoint_after_one_that_failed_past_the_snapshot_delete_keeps_the_state(tmp_path, where):
    """A checkpoint fails after it deleted the snapshot: its .partial alone holds the
    state. The next checkpoint must not truncate that .partial before a snapshot is
    back in place (a crash there used to leave no snapshot and an empty .partial)."""
    directory = str(tmp_path / "wal")
    storage = FaultyStorage(UnbufferedLocalStorage())
    wal = open_wal(storage, directory)
    wal.recover()
    fill(wal, range(3))
    wal.checkpoint()
    fill(wal, [3])
    expected = dict(wal.records)
    storage.arm(where)
    with pytest.raises(CheckpointError):
        wal.checkpoint()
    assert not os.path.exists(os.path.join(directory, "snapshot"))
    storage.arm(Fault("create", "after", path="snapshot.partial", crash=True))
    with pytest.raises(StorageCrash):
        wal.checkpoint()
    storage.restart()
    again = open_wal(storage, directory)
    assert again.recover() == expected
    again.close()


def journal_generations(directory: str) -> dict[str, int]:
    """Each journal file's name and its header's generation."""
    return {
        name: fmt.unpack_journal_header(open(os.path.join(directory, name), "rb").read()).generation
        for name in sorted(os.listdir(directory))
        if name.startswith("journal-")
    }


def test_a_checkpoint_writes_the_next_journals_beside_its_snapshot_and_renames_them_into_place(tmp_path):
    directory = str(tmp_path / "wal")
    seen = []

    class Watch(WalHooks):
        def checkpoint_partial_written(self, path):
            seen.append(journal_generations(directory))

    wal = open_wal(LocalStorage(), directory, hooks=Watch())
    wal.recover()  # a new WAL's first checkpoint: no journal yet, so no next one
    fill(wal, range(3))
    wal.checkpoint()
    # Beside the snapshot: each partition's next journal at the new generation, while
    # the journals in use still hold the transactions the old snapshot lacks.
    assert seen == [{}, {"journal-0": 0, "journal-0.partial": 1, "journal-1": 0, "journal-1.partial": 1}]
    assert journal_generations(directory) == {"journal-0": 1, "journal-1": 1}
    fill(wal, [3])
    wal.close()
    assert set(open_wal(LocalStorage(), directory).recover()) == {"ff-0", "ff-1", "ff-2", "ff-3"}


@pytest.mark.parametrize("operation", ["sync", "rename"])
def test_a_next_journal_that_fails_or_crashes_loses_nothing(tmp_path, operation):
    """A next journal's sync (before the snapshot is in place) or rename (after) fails:
    the checkpoint fails and nothing is acknowledged until one succeeds, which writes it
    again; a crash there instead leaves what recovery restores, and deletes."""
    directory = str(tmp_path / "wal")
    storage = FaultyStorage(UnbufferedLocalStorage())
    wal = open_wal(storage, directory)
    wal.recover()
    fill(wal, range(3))
    expected = dict(wal.records)
    storage.arm(Fault(operation, path="journal-1.partial"))
    with pytest.raises(CheckpointError):
        wal.checkpoint()
    with pytest.raises(WriteAheadLogPoisonedError):
        storage.arm(Fault("create", path="snapshot.partial"))  # the roll tried first fails too
        fill(wal, [99])
    wal.checkpoint()
    assert journal_generations(directory) == {"journal-0": 1, "journal-1": 1}
    fill(wal, [3])
    expected = dict(wal.records)
    storage.arm(Fault(operation, path="journal-1.partial", crash=True))
    with pytest.raises(StorageCrash):
        wal.checkpoint()
    storage.restart()
    again = open_wal(storage, directory)
    assert again.recover() == expected
    assert set(journal_generations(directory)) == {"journal-0", "journal-1"}
    again.close()


def test_a_failed_sync_rolls_the_transaction_into_a_new_snapshot(storage, directory):
    class FailSync(WalHooks):
        fail = False

        def before_sync(self, path):
            if self.fail:
                self.fail = False
                raise OSError("disk went away")

    hooks = FailSync()
    wal = open_wal(storage, directory, partitions=1, hooks=hooks)
    wal.recover()
    fill(wal, [1])
    hooks.fail = True
    fill(wal, [2])  # the roll made it durable: acknowledged
    assert set(wal.records) == {"ff-1", "ff-2"} and wal.unsettled == ()
    header_only = fmt.pack_journal_header(0, FlowFileSerDe().name, FlowFileSerDe().version, 2, 1)
    assert open(os.path.join(directory, "journal-0"), "rb").read() == header_only  # a fresh journal
    fill(wal, [3])
    wal.close()
    assert set(open_wal(storage, directory).recover()) == {"ff-1", "ff-2", "ff-3"}


def test_a_failed_sync_and_a_failed_roll_leave_the_outcome_unknown_until_a_roll_succeeds(storage, directory):
    class Failing(WalHooks):
        sync = roll = False

        def before_sync(self, path):
            if self.sync:
                self.sync = False
                raise OSError("disk went away")

        def checkpoint_started(self, path):
            if self.roll:
                raise OSError("still away")

    hooks = Failing()
    wal = open_wal(storage, directory, partitions=2, hooks=hooks)
    wal.recover()
    fill(wal, [1])
    hooks.sync = hooks.roll = True
    with pytest.raises(OutcomeUnknownError, match="transaction 2 .* may still replay it") as raised:
        fill(wal, [2])
    assert raised.value.txid == 2 and wal.unsettled == (2,)
    assert str(raised.value.__cause__.__cause__) == "disk went away"  # the journal's error, then the storage's
    assert set(wal.records) == {"ff-1"}  # never in memory
    released = []
    wal.when_settled(lambda: released.append("claims of transaction 2"))
    for attempt in range(3):  # every partition refuses, and writes nothing
        with pytest.raises(WriteAheadLogPoisonedError, match="wrote nothing of it"):
            fill(wal, [10 + attempt])
    assert released == [] and set(wal.records) == {"ff-1"}
    hooks.roll = False
    fill(wal, [3])  # rolls first (without transaction 2), then writes
    assert released == ["claims of transaction 2"] and wal.unsettled == ()
    wal.when_settled(lambda: released.append("at once"))
    assert released[-1] == "at once"
    wal.close()
    assert set(open_wal(storage, directory).recover()) == {"ff-1", "ff-3"}


def test_no_transaction_is_acknowledged_while_a_failed_one_can_still_be_replayed(tmp_path):
    """A write whose sync failed after its bytes reached the storage, on one partition;
    then transactions on the others. Whatever each update() answered, a crash must
    never bring back a transaction that raised once a later one was acknowledged (the
    caller of the failed one has rolled it back and moved on)."""
    storage = FaultyStorage(UnbufferedLocalStorage())
    directory = str(tmp_path / "wal")
    wal = open_wal(storage, directory, partitions=3)
    wal.recover()
    fill(wal, [0])
    storage.arm(Fault("sync", "after", path="journal"))  # the next one: its bytes are on disk
    storage.arm(Fault("create", "before", path="snapshot.partial", times=2))  # and two checkpoints fail
    answers = {}
    for n in (1, 2, 3, 4):  # round-robin: they land on every partition
        try:
            fill(wal, [n])
            answers[n] = "acknowledged"
        except Exception as error:  # noqa: BLE001 - any failure, whatever its class
            answers[n] = type(error).__name__
    assert "acknowledged" in answers.values()
    storage.restart(1.0)  # crash: every byte written stays
    recovered = set(open_wal(storage, directory).recover())
    acknowledged = [n for n, answer in answers.items() if answer == "acknowledged"]
    assert {f"ff-{n}" for n in acknowledged} <= recovered, answers
    failed_before_an_acknowledged = [
        n for n, answer in answers.items() if answer != "acknowledged" and n < max(acknowledged)
    ]
    assert not {f"ff-{n}" for n in failed_before_an_acknowledged} & recovered, (answers, recovered)


def test_concurrent_writers_through_a_failed_group_sync_and_a_failed_roll(tmp_path):
    """Writers on every partition while a group sync fails after its bytes reached the
    disk and the roll after it fails: each transaction is acknowledged (durable), of
    unknown outcome, or refused with nothing written; once a later roll settled the
    unknown ones, a crash brings back exactly the acknowledged ones."""
    storage = FaultyStorage(UnbufferedLocalStorage())
    directory = str(tmp_path / "wal")
    wal = open_wal(storage, directory, partitions=2)
    wal.recover()
    storage.arm(Fault("sync", "after", path="journal", skip=6))
    storage.arm(Fault("create", "before", path="snapshot.partial", times=2))
    answers: dict = {}

    def writer(first):
        for n in range(first, first + 40, 4):
            try:
                fill(wal, [n])
                answers[n] = "acknowledged"
            except OutcomeUnknownError:
                answers[n] = "unknown"
            except WriteAheadLogPoisonedError:
                answers[n] = "refused"

    threads = [threading.Thread(target=writer, args=(first,)) for first in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == 40 and "unknown" in answers.values(), answers
    fill(wal, [99])  # rolls first if it must: every unknown outcome is settled now
    assert wal.unsettled == ()
    acknowledged = {f"ff-{n}" for n, answer in answers.items() if answer == "acknowledged"} | {"ff-99"}
    assert set(wal.records) == acknowledged
    storage.restart(1.0)  # crash: every byte written stays
    assert set(open_wal(storage, directory).recover()) == acknowledged


def test_group_commit_shares_syncs(storage, directory):
    # Hold the first sync until the other writers have queued their frames, then
    # check one sync covered them all. Waits on conditions with deadlines, not sleeps.
    writers = 4
    queued = threading.Barrier(writers + 1, timeout=10)
    release = threading.Event()

    class HoldFirstSync(WalHooks):
        held = False

        def before_sync(self, path):
            if not self.held:
                self.held = True
                assert release.wait(10)

    wal = open_wal(storage, directory, partitions=1, hooks=HoldFirstSync())
    wal.recover()
    syncs_before = wal.sync_count()
    results = []

    def writer(n):
        queued.wait()
        results.append(fill(wal, [n]))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    queued.wait()
    journal = wal._journals[0]
    deadline = threading.Event()
    for _ in range(1000):  # until every writer appended its frame (bounded)
        if journal._appended >= writers or deadline.wait(0.01):
            break
    release.set()
    for thread in threads:
        thread.join(10)
    assert sorted(results) == [1, 2, 3, 4]
    assert wal.sync_count() - syncs_before <= 2  # the held sync, plus at most one for stragglers
    wal.close()


def test_periodic_checkpoint_uses_the_injected_clock(storage, directory):
    now = [0.0]
    wal = open_wal(storage, directory, checkpoint_interval=60.0, clock=lambda: now[0])
    wal._start_checkpoint_thread = lambda: None  # the test drives maybe_checkpoint itself
    wal.recover()
    fill(wal, [1])
    now[0] = 59.0
    assert not wal.maybe_checkpoint()
    now[0] = 61.0
    assert wal.maybe_checkpoint()
    assert open(os.path.join(directory, "journal-0"), "rb").read()[-4:] != b""  # header only
    wal.close()


def test_non_wal_directory_is_refused_and_untouched(storage, tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(NotAWriteAheadLogError, match="notes.txt"):
        open_wal(storage, str(tmp_path)).recover()
    (tmp_path / "notes.txt").unlink()
    (tmp_path / "journal-0").write_bytes(b"PK\x03\x04 a zip file, not a journal")
    with pytest.raises(NotAWriteAheadLogError, match="journal-0 at offset 0"):
        open_wal(storage, str(tmp_path)).recover()
    assert (tmp_path / "journal-0").read_bytes().startswith(b"PK")


def test_unknown_serde_is_refused(storage, directory):
    class OtherSerDe(FlowFileSerDe):
        name = "someone.else"

    wal = open_wal(storage, directory, serde=OtherSerDe())
    wal.recover()
    fill(wal, [1])
    wal.close()
    with pytest.raises(UnknownSerDeError, match="someone.else"):
        open_wal(storage, directory).recover()


def test_journal_of_an_older_serde_version_restores(storage, directory):
    wal = open_wal(storage, directory, serde=FlowFileSerDe(version=1))
    wal.recover()
    fill(wal, range(4))
    wal.close()
    again = open_wal(storage, directory)
    records = again.recover()
    assert set(records) == {f"ff-{n}" for n in range(4)}
    assert any("SerDe version 1" in reason for reason in again.last_recovery.checkpoint_reasons)
    again.close()


def test_corrupt_snapshot_names_file_and_offset_and_deletes_nothing(storage, directory):
    wal = open_wal(storage, directory)
    wal.recover()
    fill(wal, range(5))
    wal.checkpoint()
    wal.close()
    path = os.path.join(directory, "snapshot")
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0x10
    open(path, "wb").write(data)
    before = sorted(os.listdir(directory))
    with pytest.raises(CorruptSnapshotError, match=r"snapshot .* at offset \d+"):
        open_wal(storage, directory).recover()
    assert sorted(os.listdir(directory)) == before


def test_newer_epoch_fences_an_older_owner(storage, directory):
    wal = open_wal(storage, directory, epoch=5)
    wal.recover()
    fill(wal, [1])
    wal.close()
    with pytest.raises(StaleEpochError, match="epoch 5"):
        open_wal(storage, directory, epoch=4).recover()
    adopter = open_wal(storage, directory, epoch=6)
    assert set(adopter.recover()) == {"ff-1"}
    assert any("adopting" in reason for reason in adopter.last_recovery.checkpoint_reasons)
    adopter.close()
    with open(os.path.join(directory, "journal-0"), "rb") as handle:
        assert b"CUSTWALJ" in handle.read(8)


def test_torn_tail_is_cut_saved_and_checkpointed(storage, directory):
    wal = open_wal(storage, directory, partitions=1)
    wal.recover()
    fill(wal, [1])
    fill(wal, [2])
    wal.close()
    path = os.path.join(directory, "journal-0")
    size = os.path.getsize(path)
    os.truncate(path, size - 3)
    tail = open(path, "rb").read()
    again = open_wal(storage, directory, partitions=1)
    assert set(again.recover()) == {"ff-1"}
    report = again.last_recovery
    assert len(report.cuts) == 1 and report.cuts[0].explained and report.cuts[0].txid == 2
    saved = open(report.saved_cuts[0], "rb").read()
    assert saved == tail[report.cuts[0].offset :]
    fill(again, [3])
    again.close()
    assert set(open_wal(storage, directory, partitions=1).recover()) == {"ff-1", "ff-3"}


def test_storage_errors_pass_through_as_storage_errors(storage, tmp_path):
    with pytest.raises(StorageError):
        open_wal(storage, str(tmp_path / "missing" / "wal")).recover()


def test_a_checkpoint_makes_its_journals_side_by_side(tmp_path):
    """Each journal's create waits until every journal of the set is being created:
    the new WAL's journals and each checkpoint's reset can only finish if the
    journals are made at the same time (one after another, the first create waits
    out the barrier and fails)."""
    partitions = 4
    barrier = threading.Barrier(partitions, timeout=10.0)
    inner = LocalStorage()

    class JournalsMeet:
        def __getattr__(self, name):
            return getattr(inner, name)

        def create(self, path, *, overwrite=False):
            if os.path.basename(path).startswith("journal-"):
                barrier.wait()
            return inner.create(path, overwrite=overwrite)

    directory = str(tmp_path / "wal")
    wal = open_wal(JournalsMeet(), directory, partitions=partitions)
    wal.recover()
    fill(wal, range(8))
    wal.checkpoint()
    fill(wal, [8])
    expected = dict(wal.records)
    wal.close()
    again = open_wal(inner, directory, partitions=partitions)
    assert again.recover() == expected
    assert not again.last_recovery.damage
    again.close()
