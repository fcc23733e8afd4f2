"""A new HDFS file whose first pipeline fails before its first sync is made again on
another, and whose first sync that does not answer is hedged (`replication.new_files`):
what was written is written again, once; a hedge that answers first is renamed over the
file and every other attempt is abandoned and deleted; a file already synced, fenced, or
abandoned is never made again; the first sync of a new pipeline waits until it has
settled. The race's decisions (`race_step`) are pure; the file is tried with a storage
of fakes (the real thing: tests/integration/test_hdfs_datanode_death.py and
tests/integration/test_hdfs_new_file_hedges.py)."""

from __future__ import annotations

import threading
import time

import pytest

from cluster.services.process import wait_until
from replication import new_files
from replication.deadline import DeadlineRunner, NoWorkerFree
from replication.hedged_reads import HedgeCounts
from replication.new_files import (
    NEW_FILE_ATTEMPTS,
    NEW_FILE_PAUSE_S,
    NEW_FILE_REPLAY_LIMIT,
    Attempt,
    Failed,
    NewFile,
    Start,
    Wait,
    Won,
    hedge_name,
    is_hedge,
    race_step,
)
from replication.pipeline_suspicion import HEDGE_TYPICAL_FACTOR, RECENT_HSYNCS, PipelineSuspicion
from repositories.storage import LeaseLost, StorageAbandoned, StorageError, StorageFileNotFound, StorageUnavailable

PATH = "/c1/shards/n1-7/wal/journal-0"
DEADLINE = 5.0  # the longest a test waits for a thread it started
REAL_SLEEP = time.sleep
UNTIMED = 3600.0  # a hedge delay or budget that no test reaches


class FakeFile:
    """A file of `FakeStorage`: `fail` maps an operation to the error it raises (once)."""

    def __init__(self, storage: FakeStorage, number: int, path: str):
        self.storage, self.number, self.path = storage, number, path
        self.data, self.synced, self.closed, self.abandoned_with = b"", False, False, None
        self.fail: dict[str, Exception] = storage.failures.pop(0) if storage.failures else {}
        # Set: its hsync and close wait until it is (a frozen pipeline), then fail past the deadline.
        self.frozen: threading.Event | None = storage.frozen.pop(0) if storage.frozen else None
        # Set: its hsync waits until it is, then answers (a slow pipeline).
        self.held: threading.Event | None = storage.held.pop(0) if storage.held else None
        self.called = threading.Event()  # its hsync or close was called

    def _maybe_fail(self, operation: str) -> None:
        if self.abandoned_with is not None:
            raise StorageAbandoned(f"cannot {operation} hdfs:{PATH}: it was abandoned ({self.abandoned_with})", PATH)
        error = self.fail.pop(operation, None)
        if error is not None:
            raise error

    def write(self, data: bytes) -> int:
        self._maybe_fail("write")
        self.data += data
        return len(data)

    def _finish(self, operation: str) -> None:
        self.called.set()
        self._maybe_fail(operation)
        if self.frozen is not None:
            assert self.frozen.wait(DEADLINE)
            self._maybe_fail(operation)
            raise past_deadline()

    def sync(self) -> None:
        if self.held is not None:
            assert self.held.wait(DEADLINE)
        self._finish("hsync")
        self.synced = True

    def close(self) -> None:
        self._finish("close")
        self.closed = True

    def abandon(self, reason: str = "its writer stopped at once") -> None:
        self.abandoned_with = reason

    def tell(self) -> int:
        return len(self.data)

    def moved(self, path: str) -> None:
        self.path = path

    def unsynced_directory(self):
        return None

    def directory_synced(self) -> None:
        pass


class FakeStorage:
    """`_create_file`, `delete` and `rename`, all `NewFile` uses; `failures`: for each
    file made in turn, what its operations raise; `frozen`: for each, the event its
    sync or close waits for (None: answers at once); `held`: for each, the event its
    sync waits for before it answers."""

    retry_budget = 1.5  # the storage's I/O deadline

    def __init__(self, failures=(), create_error: Exception | None = None, frozen=(), held=()):
        self.failures = [dict(f) for f in failures]
        self.frozen: list[threading.Event | None] = list(frozen)
        self.held: list[threading.Event | None] = list(held)
        self.files: list[FakeFile] = []
        self.deleted: list[str] = []
        self.left_open: list[str] = []  # deleted once closed
        self.renamed: list[tuple[str, str]] = []
        self.create_error = create_error
        self.counts = HedgeCounts()
        self.made = threading.Condition()
        self.created_at: list[float] = []  # each file's, in the order made
        self.pipeline_suspicion = PipelineSuspicion()

    def _create_file(self, path: str, *, overwrite: bool = False, hedge: bool = False) -> FakeFile:
        assert hedge == (path != PATH)
        if self.files and self.create_error is not None:
            raise self.create_error
        with self.made:
            file = FakeFile(self, len(self.files), path)
            self.files.append(file)
            self.created_at.append(time.monotonic())
            self.made.notify_all()
        return file

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        self.deleted.append(path)
        return True

    def delete_once_closed(self, path: str) -> None:
        """Given up open: deleted once HDFS closed it (recorded in both lists). The file
        itself is moved aside before a hedge takes its name, never after."""
        assert path != PATH or not self.renamed
        self.left_open.append(path)
        self.deleted.append(path)

    def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        assert overwrite and dst == PATH
        self.renamed.append((src, dst))

    def new_file(self, runner: DeadlineRunner | None = None) -> NewFile:
        runner = runner or DeadlineRunner("test-new-files")
        return NewFile(self, PATH, False, self._create_file(PATH), runner, self.counts)

    def wait_for_files(self, count: int) -> None:
        with self.made:
            assert self.made.wait_for(lambda: len(self.files) >= count, DEADLINE), len(self.files)


def refused():
    return StorageUnavailable(
        f"cannot write hdfs:{PATH}: HDFS is unavailable (Connection refused (os error 111))", PATH
    )


def no_worker_free():
    cause = NoWorkerFree("all 64 hdfs-hedge workers are still blocked in calls past their deadlines")
    error = StorageUnavailable(f"cannot write hdfs:{PATH}: {cause}", PATH)
    error.__cause__ = cause
    return error


def past_deadline():
    return StorageUnavailable(f"cannot hsync hdfs:{PATH}: HDFS did not answer within 1.5 s", PATH)


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    """The pauses between attempts and before a new pipeline's first sync, recorded; no
    hedge is started by the clock and no budget ends a race, unless a test says so (a
    loaded machine must not change which attempts a test sees)."""
    slept: list[float] = []
    monkeypatch.setattr(new_files.time, "sleep", slept.append)
    # As with hdfs-native's release, whichever build this process loaded.
    monkeypatch.setattr(new_files, "PIPELINE_SETTLE_S", new_files.NEW_PIPELINE_SETTLE_S)
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_AFTER_S", UNTIMED)
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_EVERY_S", UNTIMED)
    monkeypatch.setattr(FakeStorage, "retry_budget", UNTIMED)
    return slept


@pytest.fixture
def one_hedge_in_time(monkeypatch):
    """A hedge begins 0.05 s after the file's own sync, and no other by the clock."""
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_AFTER_S", 0.05)
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_WIDTH", 1)


def test_a_first_sync_that_fails_on_its_pipeline_is_made_again_with_what_was_written():
    storage = FakeStorage([{"hsync": past_deadline()}, {"hsync": refused()}])
    file = storage.new_file()
    file.write(b"header;")
    file.write(memoryview(b"record;"))
    file.sync()
    assert [f.data for f in storage.files] == [b"header;record;"] * 3
    assert [f.abandoned_with is not None for f in storage.files] == [True, True, False]
    # The file itself and the failed hedge, both open, are deleted once closed (the file
    # moved aside first, before the hedge takes its name).
    ((winner, to),) = storage.renamed
    (failed_hedge,) = set(storage.deleted) - {PATH}
    assert storage.left_open == storage.deleted and sorted(storage.deleted) == sorted([PATH, failed_hedge])
    assert is_hedge(failed_hedge.rsplit("/", 1)[-1]) and is_hedge(winner.rsplit("/", 1)[-1])
    assert failed_hedge != winner and to == PATH == storage.files[-1].path  # renamed: the writer goes on
    assert storage.files[-1].synced and file.tell() == len(b"header;record;")
    file.write(b"after;")  # straight to the third file from now on
    file.close()
    assert storage.files[-1].data == b"header;record;after;" and storage.files[-1].closed


def test_a_write_refused_at_the_pipeline_setup_fails_its_attempt_and_the_next_writes_it_all_once():
    storage = FakeStorage([{"write": refused()}, {"write": refused()}])
    file = storage.new_file()
    file.write(b"one;")
    file.write(b"two;")
    file.sync()
    assert storage.files[-1].data == b"one;two;" and len(storage.files) == 3 and storage.files[-1].synced


def test_after_its_first_sync_a_file_is_never_made_again():
    storage = FakeStorage()
    file = storage.new_file()
    file.write(b"a")
    file.sync()
    storage.files[0].fail["hsync"] = past_deadline()
    file.write(b"b")
    with pytest.raises(StorageUnavailable, match="did not answer"):
        file.sync()
    assert len(storage.files) == 1 and storage.deleted == []


@pytest.mark.parametrize(
    "error",
    [
        LeaseLost(f"cannot hsync hdfs:{PATH}: this writer can no longer write the file (No lease on {PATH})", PATH),
        StorageFileNotFound(f"cannot hsync hdfs:{PATH}: it or its parent directory does not exist", PATH),
        StorageError(f"cannot hsync hdfs:{PATH}: RuntimeError: checksum", PATH),
    ],
)
def test_a_file_that_is_gone_or_no_longer_ours_is_not_made_again(error):
    storage = FakeStorage([{"hsync": error}])
    file = storage.new_file()
    file.write(b"a")
    with pytest.raises(type(error)):
        file.sync()
    assert len(storage.files) == 1 and storage.deleted == []


def test_every_node_of_the_pipeline_failing_is_a_pipeline_failure():
    all_failed = LeaseLost(
        f"cannot hsync hdfs:{PATH}: this writer can no longer write the file (All nodes failed for write)", PATH
    )
    storage = FakeStorage([{"hsync": all_failed}])
    file = storage.new_file()
    file.write(b"a")
    file.sync()
    assert len(storage.files) == 2 and storage.files[-1].synced


def test_a_directory_fenced_meanwhile_fails_the_new_create():
    fenced = StorageFileNotFound(f"cannot create hdfs:{PATH}: it or its parent directory does not exist", PATH)
    storage = FakeStorage([{"hsync": refused()}], create_error=fenced)
    file = storage.new_file()
    file.write(b"a")
    with pytest.raises(StorageFileNotFound):
        file.sync()


def test_it_gives_up_after_so_many_files_and_then_retries_nothing(no_waiting):
    storage = FakeStorage([{"hsync": refused(), "close": refused()}] * (NEW_FILE_ATTEMPTS + 1))
    file = storage.new_file()
    file.write(b"a")
    with pytest.raises(StorageUnavailable, match="refused"):
        file.sync()
    assert len(storage.files) == NEW_FILE_ATTEMPTS
    assert no_waiting.count(NEW_FILE_PAUSE_S) == NEW_FILE_ATTEMPTS - 1
    assert set(storage.deleted) == {f.path for f in storage.files[1:]} and storage.renamed == []
    with pytest.raises(StorageUnavailable):
        file.close()  # its caller's clean-up: the last file's error, no new file
    assert len(storage.files) == NEW_FILE_ATTEMPTS


def test_a_first_sync_that_does_not_answer_is_hedged_and_the_hedge_takes_the_files_name(one_hedge_in_time):
    frozen = threading.Event()
    storage = FakeStorage(frozen=[frozen])
    file = storage.new_file()
    file.write(b"header;")
    file.sync()  # the file's own hsync hangs (a dead DataNode's address); the hedge answers
    primary, hedge = storage.files
    assert hedge.synced and hedge.data == b"header;" and primary.abandoned_with is not None
    ((renamed, to),) = storage.renamed
    assert is_hedge(renamed.rsplit("/", 1)[-1]) and to == PATH == hedge.path
    # The file itself, still open (its hsync hangs), is deleted once closed (moved aside first).
    assert storage.deleted == storage.left_open == [PATH]
    assert (storage.counts.hedged, storage.counts.won) == (1, 1)
    file.write(b"after;")
    file.sync()
    assert hedge.data == b"header;after;" and primary.data == b"header;"
    frozen.set()  # the file's own hsync fails at last: nothing changes
    file.close()
    assert hedge.closed and len(storage.files) == 2 and storage.renamed == [(renamed, PATH)]


def test_on_a_storage_whose_hsyncs_are_slow_everywhere_hedges_wait_for_longer(one_hedge_in_time):
    """The storage's hsyncs of late took 0.1 s: its hedges wait three times that, not
    0.05 s (on an HDFS slow everywhere a hedge is as slow as the file, and only adds
    work; `replication.pipeline_suspicion`)."""
    frozen = threading.Event()
    storage = FakeStorage(frozen=[frozen])
    for _ in range(RECENT_HSYNCS):
        storage.pipeline_suspicion.answered(0.1)
    file = storage.new_file()
    file.write(b"header;")
    began = time.monotonic()
    file.sync()  # the file's own hsync hangs; the hedge answers
    assert len(storage.files) == 2 and storage.files[1].synced
    assert storage.created_at[1] - began >= HEDGE_TYPICAL_FACTOR * 0.1
    frozen.set()


def test_the_file_answering_before_its_hedge_wins_and_the_hedge_is_deleted(one_hedge_in_time):
    primary_frozen, hedge_frozen = threading.Event(), threading.Event()
    storage = FakeStorage(frozen=[primary_frozen, hedge_frozen])
    file = storage.new_file()
    primary = storage.files[0]
    primary.frozen = None  # answers, but only once the hedge was made
    held = threading.Event()
    sync = primary.sync
    primary.sync = lambda: (held.wait(DEADLINE), sync())[1]
    synced = threading.Thread(target=file.sync, daemon=True)
    synced.start()
    storage.wait_for_files(2)
    assert storage.files[1].called.wait(DEADLINE)
    held.set()
    synced.join(DEADLINE)
    assert not synced.is_alive() and primary.synced and storage.renamed == []
    hedge = storage.files[1]
    assert (storage.counts.hedged, storage.counts.won) == (1, 0)
    # The hedge, still in its frozen sync, drops itself once that fails: abandoned, and
    # deleted once HDFS has closed it (deleted open, its block would stay counted).
    assert storage.deleted == []
    hedge_frozen.set()
    wait_until(lambda: storage.deleted == [hedge.path], DEADLINE, "the hedge to be deleted")
    assert hedge.abandoned_with is not None and not hedge.closed and storage.left_open == [hedge.path]


def test_a_hedge_whose_sync_answers_after_the_file_won_is_closed_before_it_is_deleted(one_hedge_in_time):
    file_held, hedge_held = threading.Event(), threading.Event()
    storage = FakeStorage(held=[file_held, hedge_held])
    file = storage.new_file()
    synced = threading.Thread(target=file.sync, daemon=True)
    synced.start()
    storage.wait_for_files(2)  # the file's sync is slow: hedged
    file_held.set()
    synced.join(DEADLINE)
    primary, hedge = storage.files
    assert not synced.is_alive() and primary.synced and storage.deleted == [] and not hedge.synced
    hedge_held.set()  # the hedge's sync answers, too late
    wait_until(lambda: storage.deleted == [hedge.path], DEADLINE, "the hedge to be deleted")
    # Closed: its block is finished, and the NameNode no longer counts it against its DataNodes.
    assert hedge.synced and hedge.closed and hedge.abandoned_with is None and storage.left_open == []
    assert (storage.counts.hedged, storage.counts.won) == (1, 0)


def test_attempts_begin_only_within_the_budget_and_every_hedge_that_failed_is_deleted(monkeypatch):
    """Frozen DataNodes fail each new pipeline at the deadline: once twice the budget
    has passed since the race began, no attempt begins, whatever the limit."""
    monkeypatch.setattr(new_files.time, "sleep", REAL_SLEEP)  # the pauses after failures take their time
    storage = FakeStorage([{"hsync": past_deadline()}] * NEW_FILE_ATTEMPTS)
    storage.retry_budget = 0.03  # attempts begin within 0.06 s, 0.025 s apart: at most 3
    file = storage.new_file()
    file.write(b"a")
    with pytest.raises(StorageUnavailable, match="did not answer"):
        file.sync()
    assert 1 <= len(storage.files) < NEW_FILE_ATTEMPTS  # the budget ended the race, not the limit
    assert set(storage.deleted) == {f.path for f in storage.files[1:]} and storage.renamed == []


def test_a_file_abandoned_during_its_hedged_sync_abandons_every_attempt(one_hedge_in_time):
    frozen = threading.Event()
    storage = FakeStorage(frozen=[frozen, frozen])
    file = storage.new_file()
    file.write(b"a")
    failed: list[BaseException] = []

    def sync() -> None:
        try:
            file.sync()
        except StorageError as error:
            failed.append(error)

    synced = threading.Thread(target=sync, daemon=True)
    synced.start()
    storage.wait_for_files(2)
    assert storage.files[1].called.wait(DEADLINE)
    file.abandon("incarnation n1-7 is dead")
    frozen.set()
    synced.join(DEADLINE)
    assert not synced.is_alive() and isinstance(failed[0], StorageAbandoned) and file.abandoned
    assert all(f.abandoned_with is not None for f in storage.files) and storage.renamed == []


def test_the_race_waits_for_its_attempts_and_hedges_them_in_time():
    began = [Attempt(10.0)]
    timing = {"budget": 1.5, "hedge_after": 0.3, "hedge_every": 0.1, "hedge_width": 2}
    assert race_step(began, 10.1, **timing) == Wait(pytest.approx(0.2))
    assert race_step(began, 10.3, **timing) == Start(0.0, 2)  # two side by side
    three = [Attempt(10.0), Attempt(10.3), Attempt(10.3)]
    assert race_step(three, 10.35, **timing) == Wait(pytest.approx(0.05))  # then two every 0.1 s
    assert race_step(three, 10.4, **timing) == Start(0.0, 2)
    nearly = [Attempt(10.0)] * (NEW_FILE_ATTEMPTS - 1)
    assert race_step(nearly, 10.4, **timing) == Start(0.0, 1)  # never past the limit
    late = [Attempt(10.0), Attempt(11.45)]
    assert race_step(late, 11.6, **timing) == Wait(None)  # past the budget: no more hedges


def test_a_hedge_refused_for_want_of_a_worker_is_tried_again_when_the_next_is_due():
    timing = {"budget": 1.5, "hedge_after": 0.3, "hedge_every": 0.1, "hedge_width": 2}
    began = [Attempt(10.0)]
    assert race_step(began, 10.3, **timing, refused_at=10.3) == Wait(pytest.approx(0.1))
    assert race_step(began, 10.4, **timing, refused_at=10.3) == Start(0.0, 2)
    many = [Attempt(10.0)] * (NEW_FILE_ATTEMPTS - 1)  # refusals made none of these
    assert race_step(many, 10.5, **timing, refused_at=10.3) == Start(0.0, 1)


class CountingRunner(DeadlineRunner):
    """A capped runner that counts the starts it refused (every worker busy)."""

    def __init__(self, max_workers: int):
        super().__init__("counting-new-files", max_workers=max_workers)
        self.refusals = 0
        self.refused = threading.Condition()
        self.waiting = threading.Event()  # a start may wait for a worker

    def start(self, function, on_done=None, *, wait=0.0):
        if wait:
            self.waiting.set()
        try:
            return super().start(function, on_done, wait=wait)
        except new_files.DeadlineExceeded:
            with self.refused:
                self.refusals += 1
                self.refused.notify_all()
            raise

    def wait_for_refusals(self, count: int) -> None:
        with self.refused:
            assert self.refused.wait_for(lambda: self.refusals >= count, DEADLINE), self.refusals


def test_hedges_refused_while_every_worker_is_busy_are_not_attempts(monkeypatch):
    """Other files' races hold every worker (a DataNode froze under many new files): the
    hedges this file could not start do not use up its attempts, and once a worker is
    free a hedge starts and answers."""
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_AFTER_S", 0.01)
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_EVERY_S", 0.01)
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_WIDTH", 1)
    frozen, busy = threading.Event(), threading.Event()
    storage = FakeStorage(frozen=[frozen])
    runner = CountingRunner(max_workers=2)
    runner.start(lambda: busy.wait(DEADLINE))  # another file's attempt
    file = storage.new_file(runner)
    file.write(b"header;")
    synced = threading.Thread(target=file.sync, daemon=True)
    synced.start()
    runner.wait_for_refusals(NEW_FILE_ATTEMPTS)  # more hedges refused than a race may make
    busy.set()
    synced.join(DEADLINE)
    frozen.set()
    assert not synced.is_alive()
    primary, hedge = storage.files
    assert hedge.synced and hedge.data == b"header;" and storage.renamed == [(storage.renamed[0][0], PATH)]
    assert (storage.counts.hedged, storage.counts.won) == (1, 1)


def test_hedges_whose_writes_found_no_worker_free_are_not_attempts(monkeypatch):
    """The hedges' own write workers are all held (hsyncs a frozen DataNode keeps until
    the socket timeout): a hedge refused there never reached a pipeline, is deleted, and
    does not use up the race's attempts; the first that finds a worker answers."""
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_AFTER_S", 0.01)
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_EVERY_S", 0.01)
    monkeypatch.setattr(new_files, "NEW_FILE_HEDGE_WIDTH", 1)
    frozen = threading.Event()
    refused_hedges = NEW_FILE_ATTEMPTS + 1
    storage = FakeStorage([{}] + [{"write": no_worker_free()}] * refused_hedges, frozen=[frozen])
    file = storage.new_file()
    file.write(b"header;")
    synced = threading.Thread(target=file.sync, daemon=True)
    synced.start()
    synced.join(DEADLINE)
    frozen.set()
    assert not synced.is_alive() and len(storage.files) == refused_hedges + 2
    winner = storage.files[-1]
    assert winner.synced and winner.data == b"header;" and storage.renamed == [(storage.renamed[0][0], PATH)]
    assert {f.path for f in storage.files[1:-1]} <= set(storage.deleted)


def test_an_attempt_that_must_start_waits_for_a_worker_within_the_budget(monkeypatch):
    """The file's own first attempt finds every worker busy: it waits for one (not
    refused at once), and if none is free within the budget the first sync fails saying so."""
    storage = FakeStorage()
    runner = CountingRunner(max_workers=1)
    busy = threading.Event()
    runner.start(lambda: busy.wait(DEADLINE))
    file = storage.new_file(runner)
    file.write(b"a")
    synced = threading.Thread(target=file.sync, daemon=True)
    synced.start()
    assert runner.waiting.wait(DEADLINE)
    busy.set()  # freed while it waits
    synced.join(DEADLINE)
    assert not synced.is_alive() and storage.files[0].synced and runner.refusals == 0

    storage = FakeStorage()
    storage.retry_budget = 0.05  # attempts start within 0.1 s
    blocked = threading.Event()
    runner = CountingRunner(max_workers=1)
    runner.start(lambda: blocked.wait(DEADLINE))
    file = storage.new_file(runner)
    file.write(b"a")
    with pytest.raises(StorageUnavailable, match="no HDFS worker came free within 0.10 s"):
        file.sync()
    blocked.set()
    assert runner.refusals == 1 and not storage.files[0].synced


def test_the_race_is_won_by_the_attempt_that_answered():
    attempts = [Attempt(10.0, True, past_deadline()), Attempt(10.3), Attempt(10.6, True)]
    assert race_step(attempts, 11.0, budget=1.5) == Won(2)


def test_an_attempt_that_failed_on_its_pipeline_is_followed_at_once():
    failed = [Attempt(10.0, True, refused())]
    assert race_step(failed, 10.01, budget=1.5) == Start(NEW_FILE_PAUSE_S)
    over = [Attempt(10.0, True, refused()), Attempt(11.6, True, past_deadline())]
    assert race_step(over, 11.7, budget=1.5) == Failed(over[-1].error)
    many = [Attempt(10.0, True, refused())] * NEW_FILE_ATTEMPTS
    assert race_step(many, 10.1, budget=1.5) == Failed(many[-1].error)


def test_an_error_that_is_not_the_pipelines_ends_the_race_at_once():
    fenced = StorageFileNotFound(f"cannot create hdfs:{PATH}: it or its parent directory does not exist", PATH)
    attempts = [Attempt(10.0), Attempt(10.3, True, fenced)]
    assert race_step(attempts, 10.4, budget=1.5) == Failed(fenced)


def test_hedges_are_hidden_names_in_the_files_directory():
    path = hedge_name(PATH, "ab12-3")
    assert path == "/c1/shards/n1-7/wal/.journal-0.ab12-3.hedge"
    assert is_hedge(path.rsplit("/", 1)[-1]) and not is_hedge("journal-0") and not is_hedge("a.hedge")


def test_more_than_it_keeps_is_never_made_again():
    storage = FakeStorage([{"hsync": refused()}])
    file = storage.new_file()
    file.write(b"x" * (NEW_FILE_REPLAY_LIMIT + 1))
    with pytest.raises(StorageUnavailable):
        file.sync()
    assert len(storage.files) == 1


def test_an_abandoned_file_is_not_made_again():
    storage = FakeStorage([{"hsync": refused()}])
    file = storage.new_file()
    file.write(b"a")
    file.abandon("incarnation n1-7 is dead")
    with pytest.raises(StorageAbandoned, match="n1-7 is dead"):
        file.sync()
    assert len(storage.files) == 1 and file.abandoned


def test_a_file_abandoned_while_it_is_made_again_abandons_the_new_one_too():
    storage = FakeStorage([{"hsync": refused()}])
    file = storage.new_file()
    file.write(b"a")
    create = storage._create_file

    def create_then_abandon(path, overwrite=False, hedge=False):  # another thread abandons it meanwhile
        made = create(path, overwrite=overwrite, hedge=hedge)
        file.abandon("incarnation n1-7 is dead")
        return made

    storage._create_file = create_then_abandon
    with pytest.raises(StorageAbandoned):
        file.sync()
    assert all(f.abandoned_with is not None for f in storage.files) and len(storage.files) == 2
    assert storage.deleted == [storage.files[1].path]


def test_a_new_pipelines_first_sync_waits_until_it_has_settled(monkeypatch, no_waiting):
    now = [100.0]
    monkeypatch.setattr(new_files.time, "monotonic", lambda: now[0])
    storage = FakeStorage()
    file = storage.new_file()
    file.write(b"a")  # kept: nothing reaches HDFS before the first sync
    assert storage.files[0].data == b"" and file.tell() == 1
    file.sync()  # written then (the pipeline is set up at 100.0), synced 0.05 s after
    assert no_waiting == [pytest.approx(new_files.NEW_PIPELINE_SETTLE_S)] and storage.files[0].data == b"a"
    file.write(b"b")
    file.sync()  # synced before: no wait
    assert len(no_waiting) == 1 and storage.files[0].data == b"ab"


def test_with_the_fixed_client_a_new_pipelines_first_sync_goes_out_at_once(monkeypatch, no_waiting):
    assert new_files.pipeline_settle_for("0.14.7+custody.1") == 0.0
    assert new_files.pipeline_settle_for("0.14.7") == new_files.NEW_PIPELINE_SETTLE_S
    assert new_files.pipeline_settle_for(None) == new_files.NEW_PIPELINE_SETTLE_S
    monkeypatch.setattr(new_files, "PIPELINE_SETTLE_S", 0.0)
    storage = FakeStorage()
    file = storage.new_file()
    file.write(b"a")
    file.sync()
    assert no_waiting == [] and storage.files[0].data == b"a"


def test_a_new_file_follows_a_rename_only_once_its_first_sync_is_decided(no_waiting):
    """A WAL checkpoint renames its next journals, open, over the journals: the file
    and the attempt that won its first sync then go by the new name. Before that sync a
    winning hedge would still be renamed over the old name, so the rename is refused."""
    storage = FakeStorage()
    file = storage.new_file()
    file.write(b"header")
    renamed = PATH.replace("journal-0", "journal-0.next")
    with pytest.raises(StorageError, match="never synced"):
        file.moved(renamed)
    assert file.path == PATH
    file.sync()
    file.moved(renamed)
    assert file.path == renamed and storage.files[0].path == renamed and storage.files[0].data == b"header"


def test_a_file_with_nothing_written_has_no_pipeline_to_wait_for(no_waiting):
    storage = FakeStorage()
    file = storage.new_file()
    file.sync()
    file.close()
    assert no_waiting == [] and storage.files[0].closed
