"""Local-disk specifics the shared contract suite cannot express."""

import errno
import os

import pytest

from repositories.storage import LocalStorage, StorageFileExists, StorageFileNotFound, StorageFull
from repositories.storage.local import translate_os_error


def test_error_names_path_and_says_parents_are_not_created(tmp_path):
    storage = LocalStorage()
    missing = str(tmp_path / "absent" / "journal")
    with pytest.raises(StorageFileNotFound) as caught:
        storage.create(missing)
    assert missing in str(caught.value)
    assert "never created implicitly" in str(caught.value)
    assert not (tmp_path / "absent").exists()


def test_enospc_becomes_storage_full_with_advice():
    error = translate_os_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "/data/x", "write")
    assert isinstance(error, StorageFull)
    assert "/data/x" in str(error) and "free space" in str(error)


def test_rename_without_overwrite_keeps_target(tmp_path):
    storage = LocalStorage()
    src, dst = str(tmp_path / "a"), str(tmp_path / "b")
    for path, body in ((src, b"new"), (dst, b"old")):
        with storage.create(path) as handle:
            handle.write(body)
            handle.sync()
    with pytest.raises(StorageFileExists):
        storage.rename(src, dst)
    assert storage.read(dst) == b"old" and storage.read(src) == b"new"
