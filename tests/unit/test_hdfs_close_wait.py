"""`HdfsStorage`'s wait after a close, until readers see the whole file (the logic alone,
over a fake NameNode client; tests/integration/test_hdfs_close.py runs it on HDFS)."""

from __future__ import annotations

import pytest

from replication.hdfs_storage import HdfsStorage
from repositories.storage import StorageUnavailable


class Lengths:
    """A NameNode client whose readers see the given lengths, one per call."""

    def __init__(self, *seen):
        self.seen, self.calls = list(seen), 0

    def read(self, path):
        self.calls += 1
        seen = self.seen.pop(0) if len(self.seen) > 1 else self.seen[0]
        if isinstance(seen, BaseException):
            raise seen
        return b"x" * seen


def storage_over(client, io_timeout=2.0) -> HdfsStorage:
    storage = object.__new__(HdfsStorage)  # no connection: only the wait is exercised
    storage.io_timeout, storage._client = io_timeout, client
    return storage


def test_a_close_waits_until_readers_see_every_byte():
    client = Lengths(0, 0, 100)
    storage_over(client)._wait_readable("/f", 100)
    assert client.calls == 3


def test_a_file_moved_or_deleted_meanwhile_is_not_waited_for():
    client = Lengths(FileNotFoundError("/f"))
    storage_over(client)._wait_readable("/f", 100)
    assert client.calls == 1


def test_a_last_block_never_reported_is_one_clear_error_within_the_deadline():
    with pytest.raises(StorageUnavailable, match=r"closed at 100 bytes, but readers still see 40"):
        storage_over(Lengths(40), io_timeout=0.05)._wait_readable("/f", 100)
