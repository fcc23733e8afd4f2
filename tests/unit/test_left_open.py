"""Files given up open are deleted once HDFS has closed them (`replication.left_open`),
with a storage that scripts how many recoveries each file needs, and a clock of the
test's own."""

from __future__ import annotations

import itertools
import threading

import pytest

from cluster.services.process import wait_until
from replication.left_open import LeftOpen
from repositories.storage import StorageFileNotFound, StorageUnavailable


class ScriptedStorage:
    """`open_for[path]`: how many more recoveries find `path` open; `broken`: recovery
    raises (HDFS unreachable)."""

    def __init__(self, open_for: dict[str, int]):
        self.open_for, self.broken = dict(open_for), False
        self.asked: list[str] = []
        self.deleted: list[str] = []

    def recover_lease(self, path: str) -> bool:
        self.asked.append(path)
        if self.broken:
            raise StorageUnavailable(f"cannot recover the lease of hdfs:{path}: HDFS is unavailable", path)
        if path not in self.open_for:
            raise StorageFileNotFound(f"hdfs:{path} does not exist", path)
        left = self.open_for[path]
        self.open_for[path] = max(left - 1, 0)
        return left == 0

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        self.deleted.append(path)
        return self.open_for.pop(path, None) is not None


@pytest.fixture
def clock():
    return [0.0]


def left_open(storage, clock) -> LeftOpen:
    return LeftOpen(storage, patience=60.0, clock=lambda: clock[0])


def test_a_file_is_deleted_only_once_its_lease_is_recovered(clock):
    storage = ScriptedStorage({"/d/.a.hedge": 2, "/d/.b.hedge": 0})
    files = left_open(storage, clock)
    files.add("/d/.a.hedge", start=False)
    files.add("/d/.b.hedge", start=False)
    assert files.settle() == 1
    assert storage.deleted == ["/d/.b.hedge"] and files.waiting == ["/d/.a.hedge"]
    clock[0] = 0.5
    assert files.settle() == 1 and storage.deleted == ["/d/.b.hedge"]
    clock[0] = 1.5
    assert files.settle() == 0
    assert storage.deleted == ["/d/.b.hedge", "/d/.a.hedge"] and files.waiting == []
    assert storage.asked.count("/d/.a.hedge") == 3 and storage.asked.count("/d/.b.hedge") == 1


def test_a_file_that_never_closes_is_deleted_after_the_patience(clock, caplog):
    storage = ScriptedStorage({"/d/.stuck.hedge": 10**6})
    files = left_open(storage, clock)
    files.add("/d/.stuck.hedge", start=False)
    clock[0] = 59.9
    assert files.settle() == 1 and storage.deleted == []
    clock[0] = 60.0
    with caplog.at_level("INFO", logger="replication.left_open"):
        assert files.settle() == 0
    assert storage.deleted == ["/d/.stuck.hedge"]
    assert "still open 60 s after it was given up" in caplog.records[-1].getMessage()


def test_a_file_gone_meanwhile_is_forgotten(clock):
    storage = ScriptedStorage({})
    files = left_open(storage, clock)
    files.add("/d/.gone.hedge", start=False)
    assert files.settle() == 0 and files.waiting == []


def test_an_unreachable_hdfs_is_asked_again_and_given_up_after_the_patience(clock, caplog):
    storage = ScriptedStorage({"/d/.a.hedge": 0})
    storage.broken = True
    files = left_open(storage, clock)
    files.add("/d/.a.hedge", start=False)
    assert files.settle() == 1 and files.waiting == ["/d/.a.hedge"]
    clock[0] = 61.0
    with caplog.at_level("INFO", logger="replication.left_open"):
        assert files.settle() == 0
    assert "it stays hidden" in caplog.records[-1].getMessage() and files.waiting == []


def test_a_file_given_up_twice_keeps_its_first_moment(clock):
    storage = ScriptedStorage({"/d/.a.hedge": 10**6})
    files = left_open(storage, clock)
    files.add("/d/.a.hedge", start=False)
    clock[0] = 50.0
    files.add("/d/.a.hedge", start=False)
    clock[0] = 60.0
    assert files.settle() == 0 and storage.deleted == ["/d/.a.hedge"]


def test_the_thread_deletes_what_it_is_given_and_ends_when_nothing_is_left():
    storage = ScriptedStorage({"/d/.a.hedge": 1})
    files = LeftOpen(storage, name="left-open-under-test", poll=0.01)
    files.add("/d/.a.hedge")

    def ended() -> bool:
        return not any(thread.name == "left-open-under-test" for thread in threading.enumerate())

    wait_until(ended, 10, "the thread to end")
    assert storage.deleted == ["/d/.a.hedge"] and files.waiting == []


def test_a_file_still_open_is_asked_again_ever_further_apart(clock):
    """A recovery the NameNode handed to a DataNode that died is retried only after its
    own timeout (about 30 s): asks until then are refused, so they thin out."""
    storage = ScriptedStorage({"/d/.a.hedge": 10**6})
    files = left_open(storage, clock)
    files.add("/d/.a.hedge", start=False)
    asked_at = []
    for tenth in range(0, 595):
        clock[0] = tenth / 10
        before = len(storage.asked)
        files.settle()
        if len(storage.asked) > before:
            asked_at.append(clock[0])
    assert asked_at[:6] == [0.0, 0.5, 1.5, 3.5, 7.5, 15.5]
    assert [round(b - a, 1) for a, b in itertools.pairwise(asked_at)][4:] == [8.0] * (len(asked_at) - 5)
    assert len(asked_at) == 11 and storage.deleted == []  # against 119 asks at one every 0.5 s
