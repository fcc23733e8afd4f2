"""Abandoning writes (`repositories.storage.abandon`): an incarnation's storage that
refuses every change once abandoned and lets its open files go unsynced; and the HDFS
writer's `abandon()`, which never calls into hdfs-native, never waits, and admits no
call after it (decided on the worker thread, right before hdfs-native is called)."""

from __future__ import annotations

import io
import threading
import time

import pytest

from cluster.services.process import wait_until
from replication.hdfs_storage import HdfsWritableFile
from repositories.instruments import ByLabel, LatencyHistogram
from repositories.storage import AbandonableStorage, LocalStorage, StorageAbandoned, StorageUnavailable
from tests.stalled_storage import StalledStorage


def test_an_abandoned_storage_refuses_every_change_and_still_reads(tmp_path):
    storage = AbandonableStorage(LocalStorage(), name="n1-7")
    with storage.create(f"{tmp_path}/kept") as file:
        file.write(b"kept")
        file.sync()
    assert storage.abandon("incarnation n1-7 is dead") == 0  # nothing was open
    for change in (
        lambda: storage.create(f"{tmp_path}/new"),
        lambda: storage.append(f"{tmp_path}/kept"),
        lambda: storage.rename(f"{tmp_path}/kept", f"{tmp_path}/moved"),
        lambda: storage.delete(f"{tmp_path}/kept"),
        lambda: storage.mkdir(f"{tmp_path}/d"),
        lambda: storage.recover_lease(f"{tmp_path}/kept"),
    ):
        with pytest.raises(StorageAbandoned, match="abandoned \\(incarnation n1-7 is dead\\)"):
            change()
    assert storage.read(f"{tmp_path}/kept") == b"kept" and storage.exists(f"{tmp_path}/kept")
    assert [entry.name for entry in storage.list(str(tmp_path))] == ["kept"]
    assert storage.abandoned and storage.abandon("again") == 0


def test_the_files_still_open_are_abandoned_unsynced_and_never_closed(tmp_path):
    inner = StalledStorage()
    storage = AbandonableStorage(inner)
    closed = storage.create(f"{tmp_path}/closed")
    closed.write(b"a")
    closed.close()
    open_file = storage.create(f"{tmp_path}/open")
    open_file.write(b"unsynced")
    assert storage.abandon("dead") == 1
    assert inner.abandoned == [f"{tmp_path}/open"] and inner.closed == [f"{tmp_path}/closed"]
    for call in (lambda: open_file.write(b"more"), open_file.sync, open_file.sync_data):
        with pytest.raises(StorageAbandoned):
            call()
    open_file.close()  # does nothing
    assert inner.closed == [f"{tmp_path}/closed"]


def test_a_file_being_opened_as_the_storage_is_abandoned_is_abandoned_too(tmp_path):
    inner = StalledStorage()
    storage = AbandonableStorage(inner)
    stall = inner.stall("create", "late")
    opened: dict = {}

    def create():
        try:
            opened["file"] = storage.create(f"{tmp_path}/late")
        except StorageAbandoned as error:
            opened["error"] = error

    thread = threading.Thread(target=create, daemon=True)
    thread.start()
    assert stall.entered.wait(5)
    storage.abandon("dead")
    stall.release()
    thread.join(5)
    assert "error" in opened and inner.abandoned == [f"{tmp_path}/late"]


# -- the HDFS writer ---------------------------------------------------------------------


class RawWriter:
    """hdfs-native's RawFileWriter as the test sees it: records each call; `hang` makes
    the next call wait until released."""

    def __init__(self):
        self.calls: list[str] = []
        self.hang = threading.Event()
        self.release = threading.Event()
        self.entered = threading.Event()

    def _call(self, name):
        if self.hang.is_set():
            self.entered.set()
            self.release.wait(30)
        self.calls.append(name)

    def write(self, data):
        self._call(f"write {bytes(data)!r}")

    def hsync(self):
        self._call("hsync")

    def close(self):
        self._call("close")


class FileWriter(io.RawIOBase):
    """hdfs-native's FileWriter: an io.RawIOBase whose close() would call the writer's."""

    def __init__(self, inner):
        self.inner = inner

    def close(self):
        if not self.closed:
            self.inner.close()
        super().close()


class HeldRunner:
    """A `DeadlineRunner` that holds every call back until `go` is set: the moment
    between a call being handed to a worker and the worker starting it."""

    def __init__(self):
        self.go = threading.Event()
        self.waiting = threading.Event()

    def run(self, function, timeout):
        self.waiting.set()
        self.go.wait(30)
        return function()


def writer_file(runner=None, raw=None):
    raw = raw or RawWriter()
    file = HdfsWritableFile(
        "/c1/shards/n1-7/wal/journal-0", FileWriter(raw), 0, runner or HeldRunner(), 20.0, ByLabel(LatencyHistogram)
    )
    return file, raw


def test_a_call_handed_to_a_worker_before_the_abandon_but_started_after_it_never_reaches_hdfs():
    runner = HeldRunner()
    file, raw = writer_file(runner)
    outcome: dict = {}

    def write():
        try:
            file.write(b"late")
        except StorageAbandoned as error:
            outcome["error"] = error

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    assert runner.waiting.wait(5)
    file.abandon("incarnation n1-7 is dead")
    runner.go.set()
    thread.join(5)
    assert "abandoned (incarnation n1-7 is dead)" in str(outcome.get("error")) and raw.calls == []


def test_abandon_never_waits_for_a_call_in_flight_and_refuses_every_call_after_it():
    class Immediate:
        def run(self, function, timeout):
            return function()

    raw = RawWriter()
    file, _ = writer_file(Immediate(), raw)
    file.write(b"a")
    file.sync()
    raw.hang.set()
    stuck = threading.Thread(target=file.sync, daemon=True)
    stuck.start()
    assert raw.entered.wait(5)
    began = time.monotonic()
    file.abandon("dead")
    assert time.monotonic() - began < 0.5 and file.abandoned
    for call in (lambda: file.write(b"b"), file.sync, file.sync_data):
        with pytest.raises(StorageAbandoned) as raised:
            call()
        assert isinstance(raised.value, StorageUnavailable)  # a caller that knows only outages rolls back
    file.close()  # does nothing: no close reaches HDFS
    raw.release.set()
    stuck.join(5)
    assert raw.calls == ["write b'a'", "hsync", "hsync"]  # the hsync in flight, nothing after it


def test_an_abandoned_writer_is_dropped_on_a_thread_of_its_own():
    import weakref

    dropped_on = []
    raw = RawWriter()
    weakref.finalize(raw, lambda: dropped_on.append(threading.current_thread().name))

    class Immediate:
        def run(self, function, timeout):
            return function()

    file = writer_file(Immediate(), raw)[0]
    del raw
    file.abandon("dead")
    wait_until(lambda: dropped_on, 5, "the abandoned writer to be dropped", interval=0.01)
    assert dropped_on == ["hdfs-abandoned-writers"]
