"""How hdfs-native's errors become the storage protocol's: pure, no HDFS."""

import pytest

from replication.hdfs_storage import _translate
from repositories.storage import LeaseLost, StorageError, StorageFileNotFound, StorageFull, StorageUnavailable


@pytest.mark.parametrize("text, kind", [
    ('RPCError("org.apache.hadoop.hdfs.server.namenode.SafeModeException", "Cannot create directory /x. '
     'Name node is in safe mode.\\nThe reported blocks 0 needs additional 12 blocks")', StorageUnavailable),
    ("OSError: RPC listener disconnected", StorageUnavailable),
    ("Connection refused (os error 111)", StorageUnavailable),
    ('RPCError("org.apache.hadoop.hdfs.protocol.DSQuotaExceededException", "quota")', StorageFull),
    ('RPCError("java.io.FileNotFoundException", "File does not exist: /x")', StorageFileNotFound),
    ('RPCError("java.lang.IllegalArgumentException", "bad")', StorageError),
])
def test_errors_are_translated_by_what_the_caller_can_do(text, kind):
    translated = _translate(RuntimeError(text), "/x", "write")
    assert type(translated) is kind
    assert "hdfs:/x" in str(translated) and "\\n" not in str(translated) and "\n" not in str(translated)


def test_a_lost_lease_is_only_a_writers_error():
    error = RuntimeError('RPCError("org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException", "no lease")')
    assert isinstance(_translate(error, "/x", "hsync", writing=True), LeaseLost)
    assert not isinstance(_translate(error, "/x", "read"), LeaseLost)
