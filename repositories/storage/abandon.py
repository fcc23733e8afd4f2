"""Abandoning writes at once: what an owner that died does to its files.

A writer that must stop *now*, whatever the storage does (an incarnation its session
guard declared dead: its shards are being fenced and adopted elsewhere), cannot sync
or close anything: on HDFS each hsync or close of a frozen pipeline waits out the
storage's I/O deadline, and a dead incarnation has no business making its bytes
durable any more. It *abandons* its files instead: each is let go as it is, unsynced
and open, and whoever adopts the data recovers the file's lease (which closes it at
its last synced length). After `abandon()` nothing written through the file reaches
the storage: every write, sync or close fails with `StorageAbandoned` (close is a
silent no-op), and a call that was already in flight is the storage's to finish.

* `WritableFile.abandon()` (optional in the storage protocol): the HDFS backend's
  (`replication.hdfs_storage.HdfsWritableFile`) drops hdfs-native's writer without
  hsync or close, never blocking. A backend without it (local disk) has nothing that
  can hang: its owner closes it normally, or leaves it.
* `AbandonableStorage(storage)`: the storage protocol over `storage`, for one owner
  (an incarnation). `abandon(reason)` refuses, from then on, every call that changes
  the storage (create, append, rename, delete, delete_once_closed, mkdir,
  recover_lease) and abandons
  every file it handed out that is still open: a checkpoint, a swap file or a content
  file that some thread of the dead owner is still writing, or is about to create,
  never writes again. Reads go on (they change nothing).

Lock plan (`AbandonableStorage`): `_lock` guards `_files` (the open files) and
`_reason`; it is held for a few operations, never across a call into the storage.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, BinaryIO

from .errors import StorageUnavailable
from .protocol import FileStatus, discard

if TYPE_CHECKING:
    from .protocol import Storage


class StorageAbandoned(StorageUnavailable):
    """The file (or the whole storage of its owner) was abandoned: its owner stopped at
    once (its incarnation is dead) and never writes again. Its unsynced bytes are lost;
    whoever adopts the data recovers the file's lease."""


def abandoned_error(path: str | None, reason: str) -> StorageAbandoned:
    where = path if path else "the storage"
    return StorageAbandoned(
        f"cannot write {where}: it was abandoned ({reason}); this writer never writes again. "
        "Its unsynced bytes are lost, and whoever adopts it recovers its lease",
        path,
    )


def abandon_file(file) -> bool:
    """Abandon `file` if its backend can (`WritableFile.abandon`); True if it did."""
    abandon = getattr(file, "abandon", None)
    if abandon is None:
        return False
    abandon()
    return True


class _OwnedFile:
    """A file `AbandonableStorage` handed out: the storage's own file, refused once
    its owner abandoned the storage."""

    def __init__(self, owner: AbandonableStorage, inner):
        self._owner, self._inner = owner, inner
        self.path = inner.path
        self._abandoned = False

    def _check(self) -> None:
        if self._abandoned:
            raise abandoned_error(self.path, self._owner.reason or "abandoned")

    def write(self, data) -> int:
        self._check()
        return self._inner.write(data)

    def sync(self) -> None:
        self._check()
        self._inner.sync()

    def sync_data(self) -> None:
        self._check()
        self._inner.sync_data()

    def unsynced_directory(self) -> str | None:
        return None if self._abandoned else self._inner.unsynced_directory()

    def directory_synced(self) -> None:
        self._inner.directory_synced()

    def moved(self, path: str) -> None:
        self._inner.moved(path)
        self.path = path

    def tell(self) -> int:
        return self._inner.tell()

    def close(self) -> None:
        if self._abandoned:
            return
        try:
            self._inner.close()
        finally:
            self._owner._forget(self)

    def abandon(self) -> None:
        self._abandoned = True
        abandon_file(self._inner)
        self._owner._forget(self)

    def __enter__(self) -> _OwnedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AbandonableStorage:
    """The storage protocol over `storage` for one owner, which `abandon` stops at once
    (see the module docstring). Anything it does not define (an HDFS storage's
    `address`, `uri`, `call_durations`, ...) is the inner storage's."""

    def __init__(self, storage: Storage, name: str = ""):
        self.inner = storage
        self.name = name
        self._lock = threading.Lock()
        self._files: weakref.WeakSet[_OwnedFile] = weakref.WeakSet()
        self._reason: str | None = None

    def __repr__(self) -> str:
        return f"AbandonableStorage({self.inner!r}{', ' + self.name if self.name else ''})"

    def __getattr__(self, name: str):
        if name == "inner":  # not set yet (a copy being made): not the inner storage's
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def scheme(self) -> str:
        return self.inner.scheme

    @property
    def reason(self) -> str | None:
        """Why it was abandoned; None while it is not."""
        return self._reason

    @property
    def abandoned(self) -> bool:
        return self._reason is not None

    def abandon(self, reason: str = "its owner stopped at once") -> int:
        """Refuse every change from now on and abandon every file still open; returns
        how many files were abandoned. Never waits on the storage; idempotent."""
        with self._lock:
            if self._reason is not None:
                return 0
            self._reason = reason
            files = list(self._files)
            self._files = weakref.WeakSet()
        for file in files:
            file.abandon()
        return len(files)

    def _refuse(self, path: str | None) -> None:
        if self._reason is not None:
            raise abandoned_error(path, self._reason)

    def _forget(self, file: _OwnedFile) -> None:
        with self._lock:
            self._files.discard(file)

    def _own(self, inner) -> _OwnedFile:
        file = _OwnedFile(self, inner)
        with self._lock:
            if self._reason is None:
                self._files.add(file)
                return file
        # Abandoned while it was being opened: it never writes.
        file.abandon()
        raise abandoned_error(file.path, self._reason)

    # -- changes: refused once abandoned ------------------------------------------------
    def create(self, path: str, *, overwrite: bool = False) -> _OwnedFile:
        self._refuse(path)
        return self._own(self.inner.create(path, overwrite=overwrite))

    def append(self, path: str) -> _OwnedFile:
        self._refuse(path)
        return self._own(self.inner.append(path))

    def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        self._refuse(f"{src} -> {dst}")
        self.inner.rename(src, dst, overwrite=overwrite)

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        self._refuse(path)
        return self.inner.delete(path, recursive=recursive)

    def delete_once_closed(self, path: str) -> None:
        self._refuse(path)
        discard(self.inner, path)

    def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False) -> None:
        self._refuse(path)
        self.inner.mkdir(path, parents=parents, exist_ok=exist_ok)

    def recover_lease(self, path: str) -> bool:
        self._refuse(path)
        return self.inner.recover_lease(path)

    # -- reads and durability of what is done: passed through ---------------------------
    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        return self.inner.read(path, offset, length)

    def open_read(self, path: str) -> BinaryIO:
        return self.inner.open_read(path)

    def list(self, path: str) -> list[FileStatus]:
        return self.inner.list(path)

    def status(self, path: str) -> FileStatus:
        return self.inner.status(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def sync_directory(self, path: str) -> None:
        self.inner.sync_directory(path)

    def arrow_filesystem(self):
        return self.inner.arrow_filesystem()

    def close(self) -> None:
        """The inner storage is not this owner's to close (others share it)."""
