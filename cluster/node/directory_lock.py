"""One node per data directory: the `node.lock` file, held with flock(2) while the node
(or a supervisor of worker processes) runs, and holding the holder's pid as text for
an operator to read. The kernel releases the lock when the process dies, even by
SIGKILL, so a crashed node never leaves its directory locked."""

from __future__ import annotations

import fcntl
import os
from typing import TextIO

from repositories.storage.local import FILE_MODE

from ..errors import ClusterError

LOCK_NAME = "node.lock"


class DirectoryLocked(ClusterError):
    """Another process holds the data directory's lock; the message says what to do."""


def take_directory_lock(data_dir: str) -> TextIO:
    """Hold `data_dir`'s lock and write this process's pid in it; the open lock file,
    for `release_directory_lock`. Raises `DirectoryLocked` when another process holds it."""
    path = os.path.join(data_dir, LOCK_NAME)
    handle = open(path, "a+", opener=lambda name, flags: os.open(name, flags, FILE_MODE))
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise DirectoryLocked(
            f"another custody node is running on {data_dir} (it holds {path}); stop it first or use another --data-dir"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def release_directory_lock(handle: TextIO | None) -> None:
    """Release a lock `take_directory_lock` took (None: nothing to release)."""
    if handle is not None:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
