"""`WriteAheadLog.abandon`: the stop of an owner that died. It returns at once whatever
the storage does (a sync or a checkpoint stuck in it is not waited for), syncs and
closes nothing (each journal's file is abandoned), and from then on nothing is written
or acknowledged: a transaction in flight raises `AbandonedInFlightError` even if its
sync succeeds, a new one is refused before anything is written."""

from __future__ import annotations

import os
import threading
import time

import pytest

from cluster.services.process import wait_until
from repositories.flowfile import (
    AbandonedInFlightError,
    CheckpointError,
    FlowFileRecord,
    OutcomeUnknownError,
    Put,
    WriteAheadLog,
    WriteAheadLogAbandonedError,
)
from repositories.storage import LocalStorage
from tests.stalled_storage import StalledStorage

AT_ONCE = 0.5  # seconds: "at once", with room for a loaded machine; the stalls last 30 s


def record(number: int) -> FlowFileRecord:
    return FlowFileRecord(f"ff-{number}", {"n": str(number)}, None, "q", 1, number, number)


def in_thread(function):
    """Run `function` on a thread; the returned dict gets its "result" or "error"."""
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = function()
        except BaseException as error:  # noqa: BLE001 - the test looks at it
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    outcome["thread"] = thread
    return outcome


def timed(function):
    started = time.monotonic()
    function()
    return time.monotonic() - started


@pytest.fixture
def wal(tmp_path):
    storage = StalledStorage()
    log = WriteAheadLog(storage, str(tmp_path / "wal"), partitions=1, checkpoint_interval=None)
    log.recover()
    log.update([Put(record(1))])
    yield log
    storage.release_all()


def journal_length(wal) -> int:
    return os.path.getsize(os.path.join(wal.directory, "journal-0"))


@pytest.mark.parametrize("sync_succeeds", [True, False])
def test_a_transaction_in_flight_at_the_abandon_is_never_acknowledged(wal, sync_succeeds):
    closed = list(wal.storage.closed)
    stall = wal.storage.stall("sync", "journal")
    committing = in_thread(lambda: wal.update([Put(record(2))]))
    assert stall.entered.wait(5)
    assert timed(lambda: wal.abandon("the incarnation is dead")) < AT_ONCE  # the sync still hangs
    assert wal.abandoned and wal.storage.abandoned == [os.path.join(wal.directory, "journal-0")]
    stall.release(fail=not sync_succeeds)
    committing["thread"].join(5)
    error = committing.get("error")
    assert isinstance(error, AbandonedInFlightError) and isinstance(error, OutcomeUnknownError), committing
    assert "was in flight when the WAL was abandoned (the incarnation is dead)" in str(error)
    assert wal.storage.closed == closed  # nothing closed since: abandoned
    # Whatever its sync did, a recovery finds the transaction whole or not at all.
    recovered = WriteAheadLog(LocalStorage(), wal.directory, partitions=1, checkpoint_interval=None).recover()
    assert set(recovered) in ({"ff-1", "ff-2"}, {"ff-1"})
    if sync_succeeds:
        assert set(recovered) == {"ff-1", "ff-2"}


def test_after_the_abandon_nothing_is_written_and_nothing_waits(wal):
    stall = wal.storage.stall("sync", "journal")
    committing = in_thread(lambda: wal.update([Put(record(2))]))
    assert stall.entered.wait(5)
    wal.abandon("dead")
    length = journal_length(wal)
    for attempt in (
        lambda: wal.update([Put(record(3))]),
        lambda: wal.update([Put(record(4))], sync=False),
        wal.checkpoint,
    ):
        began = time.monotonic()
        with pytest.raises(WriteAheadLogAbandonedError, match="abandoned \\(dead\\).*nothing of this transaction"):
            attempt()
        assert time.monotonic() - began < AT_ONCE
    assert timed(wal.close) < AT_ONCE  # closes nothing, waits for nobody
    assert not wal.maybe_checkpoint()
    wal.abandon("again")  # idempotent
    assert journal_length(wal) == length
    stall.release()
    committing["thread"].join(5)
    # Only the call in flight at the abandon lands (it was begun before): none after it.
    assert set(WriteAheadLog(LocalStorage(), wal.directory, partitions=1, checkpoint_interval=None).recover()) == {
        "ff-1",
        "ff-2",
    }


def test_the_abandon_does_not_wait_for_a_checkpoint_stuck_in_storage(wal):
    # The checkpoint creates its snapshot and its next journal side by side: both stuck.
    stalls = [wal.storage.stall("create", "snapshot.partial"), wal.storage.stall("create", "journal-0.partial")]
    checkpointing = in_thread(wal.checkpoint)
    assert all(stall.entered.wait(5) for stall in stalls)
    assert timed(lambda: wal.abandon("dead")) < AT_ONCE
    began = time.monotonic()
    with pytest.raises(WriteAheadLogAbandonedError):
        wal.update([Put(record(2))])  # refused before it waits for the checkpoint's lock
    assert time.monotonic() - began < AT_ONCE
    created = len(wal.storage.created)
    for stall in stalls:
        stall.release()
    checkpointing["thread"].join(5)
    assert isinstance(checkpointing.get("error"), CheckpointError), checkpointing
    # The checkpoint went no further than the calls it was in: the snapshot and the next
    # journal it was creating are made, but nothing is written into them, and no journal
    # takes its partition's name after them.
    partials = [os.path.join(wal.directory, name) for name in ("snapshot.partial", "journal-0.partial")]
    assert sorted(wal.storage.created[created:]) == sorted(partials)
    assert all(os.path.getsize(path) == 0 and path in wal.storage.abandoned for path in partials)


def test_a_wal_whose_files_cannot_be_abandoned_closes_them_once_the_writer_lets_go(tmp_path):
    log = WriteAheadLog(LocalStorage(), str(tmp_path / "wal"), partitions=2, checkpoint_interval=None)
    log.recover()
    log.update([Put(record(1))])
    journals = list(log._journals)
    log.abandon("dead")

    def all_closed():
        return all(journal._file._closed for journal in journals)

    wait_until(all_closed, 5, "every journal to close", interval=0.01)
    assert all_closed()
    assert set(WriteAheadLog(LocalStorage(), log.directory, partitions=2, checkpoint_interval=None).recover()) == {
        "ff-1"
    }
