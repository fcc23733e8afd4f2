"""A new HDFS file whose first pipeline fails before its first sync is made again on
another (`replication.hdfs_storage._NewFile`): what was written is written again, once;
a file already synced, fenced, or abandoned is never made again; the first sync of a
new pipeline waits until it has settled. Pure logic, with a storage of fakes (the real
thing: tests/integration/test_hdfs_datanode_death.py)."""

from __future__ import annotations

import pytest

from replication import hdfs_storage
from replication.hdfs_storage import NEW_FILE_ATTEMPTS, NEW_FILE_REPLAY_LIMIT, _NewFile
from repositories.storage import LeaseLost, StorageAbandoned, StorageError, StorageFileNotFound, StorageUnavailable

PATH = "/c1/shards/n1-7/wal/journal-0"


class FakeFile:
    """A file of `FakeStorage`: `fail` maps an operation to the error it raises (once)."""

    def __init__(self, storage: FakeStorage, number: int):
        self.storage, self.number = storage, number
        self.data, self.synced, self.closed, self.abandoned_with = b"", False, False, None
        self.fail: dict[str, Exception] = storage.failures.pop(0) if storage.failures else {}

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

    def sync(self) -> None:
        self._maybe_fail("hsync")
        self.synced = True

    def close(self) -> None:
        self._maybe_fail("close")
        self.closed = True

    def abandon(self, reason: str = "its writer stopped at once") -> None:
        self.abandoned_with = reason

    def tell(self) -> int:
        return len(self.data)

    def unsynced_directory(self):
        return None

    def directory_synced(self) -> None:
        pass


class FakeStorage:
    """`_create_file` and `delete`, all `_NewFile` uses; `failures`: for each file made in
    turn, what its operations raise."""

    retry_budget = 1.5  # the storage's I/O deadline

    def __init__(self, failures=(), create_error: Exception | None = None):
        self.failures = [dict(f) for f in failures]
        self.files: list[FakeFile] = []
        self.deleted: list[str] = []
        self.create_error = create_error

    def _create_file(self, path: str, *, overwrite: bool = False) -> FakeFile:
        if self.files and self.create_error is not None:
            raise self.create_error
        file = FakeFile(self, len(self.files))
        self.files.append(file)
        return file

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        self.deleted.append(path)
        return True

    def new_file(self) -> _NewFile:
        return _NewFile(self, PATH, False, self._create_file(PATH))


def refused():
    return StorageUnavailable(
        f"cannot write hdfs:{PATH}: HDFS is unavailable (Connection refused (os error 111))", PATH
    )


def past_deadline():
    return StorageUnavailable(f"cannot hsync hdfs:{PATH}: HDFS did not answer within 1.5 s", PATH)


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    """The pauses between attempts and before a new pipeline's first sync, recorded."""
    slept: list[float] = []
    monkeypatch.setattr(hdfs_storage.time, "sleep", slept.append)
    return slept


def test_a_first_sync_that_fails_on_its_pipeline_is_made_again_with_what_was_written():
    storage = FakeStorage([{"hsync": past_deadline()}, {"hsync": refused()}])
    file = storage.new_file()
    file.write(b"header;")
    file.write(memoryview(b"record;"))
    file.sync()
    assert [f.data for f in storage.files] == [b"header;record;"] * 3
    assert [f.abandoned_with is not None for f in storage.files] == [True, True, False]
    assert storage.files[-1].synced and storage.deleted == [PATH, PATH]
    assert file.tell() == len(b"header;record;")
    file.write(b"after;")  # straight to the third file from now on
    file.close()
    assert storage.files[-1].data == b"header;record;after;" and storage.files[-1].closed


def test_a_write_refused_at_the_pipeline_setup_is_written_once_on_the_new_file():
    storage = FakeStorage([{}, {"write": refused()}])
    file = storage.new_file()
    file.write(b"one;")
    storage.files[0].fail["write"] = refused()  # the first file's next packet goes nowhere
    file.write(b"two;")
    file.sync()
    assert storage.files[-1].data == b"one;two;" and len(storage.files) == 3


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
    assert no_waiting.count(hdfs_storage.NEW_FILE_PAUSE_S) == NEW_FILE_ATTEMPTS - 1
    with pytest.raises(StorageUnavailable):
        file.close()  # its caller's clean-up: the last file's error, no new file
    assert len(storage.files) == NEW_FILE_ATTEMPTS


def test_it_makes_files_again_for_a_deadline_at_most_after_the_first_failure(monkeypatch):
    """Frozen DataNodes fail each new pipeline at the deadline: one more file is tried,
    not NEW_FILE_ATTEMPTS of them."""
    now = [0.0]
    monkeypatch.setattr(hdfs_storage.time, "monotonic", lambda: now[0])
    storage = FakeStorage([{"hsync": past_deadline()}] * 3)
    file = storage.new_file()
    file.write(b"a")

    def each_hsync_waits_its_deadline(f):
        sync = f.sync

        def waited():
            now[0] += storage.retry_budget
            sync()

        f.sync = waited

    for made in storage.files:
        each_hsync_waits_its_deadline(made)
    create = storage._create_file
    storage._create_file = lambda path, overwrite=False: (
        made := create(path, overwrite=overwrite),
        each_hsync_waits_its_deadline(made),
    )[0]
    with pytest.raises(StorageUnavailable, match="did not answer"):
        file.sync()
    assert len(storage.files) == 2


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
    delete = storage.delete

    def delete_then_abandon(path, recursive=False):  # another thread abandons it meanwhile
        file.abandon("incarnation n1-7 is dead")
        return delete(path, recursive=recursive)

    storage.delete = delete_then_abandon
    with pytest.raises(StorageAbandoned):
        file.sync()
    assert all(f.abandoned_with is not None for f in storage.files) and len(storage.files) == 2


def test_a_new_pipelines_first_sync_waits_until_it_has_settled(monkeypatch, no_waiting):
    now = [100.0]
    monkeypatch.setattr(hdfs_storage.time, "monotonic", lambda: now[0])
    storage = FakeStorage()
    file = storage.new_file()
    file.write(b"a")  # the pipeline is set up at 100.0
    now[0] = 100.01
    file.sync()
    assert no_waiting == [pytest.approx(hdfs_storage.NEW_PIPELINE_SETTLE_S - 0.01)]
    file.write(b"b")
    file.sync()  # synced before: no wait
    assert len(no_waiting) == 1


def test_a_file_with_nothing_written_has_no_pipeline_to_wait_for(no_waiting):
    storage = FakeStorage()
    file = storage.new_file()
    file.sync()
    file.close()
    assert no_waiting == [] and storage.files[0].closed
