"""How hdfs-native's errors become the storage protocol's, and how a slow call is reported: pure, no HDFS."""

import pytest

from replication.hdfs_storage import _translate
from repositories.storage import LeaseLost, StorageError, StorageFileNotFound, StorageFull, StorageUnavailable


@pytest.mark.parametrize(
    "text, kind",
    [
        (
            'RPCError("org.apache.hadoop.hdfs.server.namenode.SafeModeException", "Cannot create directory /x. '
            'Name node is in safe mode.\\nThe reported blocks 0 needs additional 12 blocks")',
            StorageUnavailable,
        ),
        ("OSError: RPC listener disconnected", StorageUnavailable),
        ("Connection refused (os error 111)", StorageUnavailable),
        ('RPCError("org.apache.hadoop.hdfs.protocol.DSQuotaExceededException", "quota")', StorageFull),
        ('RPCError("java.io.FileNotFoundException", "File does not exist: /x")', StorageFileNotFound),
        ('RPCError("java.lang.IllegalArgumentException", "bad")', StorageError),
    ],
)
def test_errors_are_translated_by_what_the_caller_can_do(text, kind):
    translated = _translate(RuntimeError(text), "/x", "write")
    assert type(translated) is kind
    assert "hdfs:/x" in str(translated) and "\\n" not in str(translated) and "\n" not in str(translated)


def test_a_lost_lease_is_only_a_writers_error():
    error = RuntimeError('RPCError("org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException", "no lease")')
    assert isinstance(_translate(error, "/x", "hsync", writing=True), LeaseLost)
    assert not isinstance(_translate(error, "/x", "read"), LeaseLost)


class _Clock:
    """`time.monotonic` for the module under test: each call moves on `step` seconds."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now


class _Client:
    def get_file_info(self, path):
        return object()


@pytest.mark.parametrize("step, logged", [(3.0, True), (0.5, False)])
def test_a_slow_call_is_logged_once_with_its_path(monkeypatch, caplog, step, logged):
    from replication import hdfs_storage

    storage = hdfs_storage.HdfsStorage("hdfs://127.0.0.1:9")  # no connection is made
    storage._client = _Client()
    monkeypatch.setattr(hdfs_storage, "time", _Clock(step))
    with caplog.at_level("WARNING", logger="replication.hdfs_storage"):
        assert storage.exists("/shards/n1-7/wal/journal-0")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ([f"hdfs: stat /shards/n1-7/wal/journal-0 took {step:.1f}s"] if logged else [])


def test_a_permission_denial_names_the_user_the_inode_and_the_fix():
    from repositories.storage import StoragePermissionDenied

    error = RuntimeError(
        'RPCError("org.apache.hadoop.security.AccessControlException", "Permission denied: '
        'user=stranger, access=EXECUTE, inode=\\"/custody\\":custody:custody:drwx------\\n\\tat '
        'org.apache.hadoop.hdfs.server.namenode.FSPermissionChecker.check")'
    )
    translated = _translate(error, "/custody/main/shards", "stat")
    assert isinstance(translated, StoragePermissionDenied) and isinstance(translated, PermissionError)
    assert (
        "HDFS refuses it (Permission denied: user=stranger, access=EXECUTE, "
        "inode='/custody':custody:custody:drwx------)"
    ) in str(translated)
    assert "hdfs dfs -chown" in str(translated) and "FSPermissionChecker" not in str(translated)
