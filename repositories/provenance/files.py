"""The few places where the provenance repository touches the file system.

Local disk only (plain files, fsync of files and of directories after renames): the
provenance repository is node-local, and its event files are copied elsewhere whole.
"""

from __future__ import annotations

import os
import shutil

from repositories.storage.local import FILE_MODE, make_private_directories
from repositories.storage.local import fsync_directory as fsync_directory  # callers use files.fsync_directory


def write_new(path: str, chunks, *, sync: bool = True) -> int:
    """Create `path` (which must not exist), write the chunks, fsync; returns the length."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        total = 0
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                written = os.write(fd, view)
                view = view[written:]
                total += written
        if sync:
            os.fsync(fd)
        return total
    finally:
        os.close(fd)


def rename(src: str, dst: str) -> None:
    """Atomic rename, durable once the directory is fsynced (the caller batches that)."""
    os.replace(src, dst)


def read_all(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def read_at(fd: int, offset: int, length: int) -> bytes:
    return os.pread(fd, length, offset)


def delete(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


def delete_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def size_of(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def tree_size(path: str) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            total += size_of(os.path.join(root, name))
    return total


def list_names(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []


def ensure_directory(path: str) -> None:
    make_private_directories(path)
