"""The storage protocol every durable store writes through.

Two backends implement it: `repositories.storage.LocalStorage` (plain files, fsync
of files and directories) and `replication.hdfs_storage.HdfsStorage` (hdfs-native,
hsync and lease recovery). Both pass the contract suite in
`tests/integration/test_storage_contract.py`.

The contract:

* Paths are absolute, '/'-separated strings inside the backend's namespace.
* `create` and `mkdir` never create missing parent directories: a fenced or
  deleted directory must stay gone, whatever a late writer does.
* `WritableFile.sync()` returns only when every byte written so far is durable
  (fdatasync on disk, hsync on HDFS) and readable by another client. On local disk
  the first sync after `create` also makes the new directory entry durable.
* `WritableFile.sync_data()` makes the bytes durable but may leave a new file's name
  to the caller, who syncs `unsynced_directory()` (once for many files) and says so
  with `directory_synced()`. Every backend has the three methods; where a name needs
  no sync of its own (HDFS) they are `sync`, None and nothing.
* `rename` is atomic, and durable when it returns. With `overwrite=False` it
  fails with `StorageFileExists` instead of replacing the target.
* `delete` is durable when it returns and reports whether anything was deleted.
* `read(path, offset, length)` returns at most `length` bytes; fewer at end of file.
* `recover_lease(path)` asks the backend to close a file someone else may still be
  writing. It returns True once the file is closed; the caller polls with backoff.
  Afterwards a write + sync by the previous writer fails with `LeaseLost`.
* `discard(storage, path)` deletes a file whose writer failed or was given up, which
  may still be open: where the storage has `delete_once_closed` (HDFS) the file leaves
  the directory's listing at once and is deleted once its lease is recovered (HDFS
  deleting an open file leaves its last block counted against its DataNodes' free
  space for good: `replication.left_open`); elsewhere it is deleted. A file that does
  not exist is no error.
* `WritableFile.abandon()` is optional: a backend whose sync or close can hang (HDFS)
  lets its owner drop the file at once, unsynced and open, when that owner dies
  (`abandon`): never blocking, and with every later write, sync or close refused
  (`StorageAbandoned`; close does nothing). Whoever takes the data over recovers the
  file's lease.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow.fs


@dataclass(frozen=True, slots=True)
class FileStatus:
    path: str
    length: int
    is_dir: bool
    modified: float  # seconds since the epoch

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]


@runtime_checkable
class WritableFile(Protocol):
    """A file open for appending. Not safe for concurrent use: callers serialise writes."""

    path: str

    def write(self, data: bytes | bytearray | memoryview) -> int: ...

    def sync(self) -> None: ...

    def sync_data(self) -> None:
        """Make the bytes written so far durable; a new file's name may not be yet (see
        `unsynced_directory`). Backends whose names need no sync do what `sync` does."""
        ...

    def unsynced_directory(self) -> str | None:
        """The directory whose `Storage.sync_directory` makes this newly created file's
        name durable, until a `sync()` or `directory_synced()` did it; None when nothing
        is left to do (always on HDFS: the NameNode logs a create before it answers)."""
        ...

    def directory_synced(self) -> None:
        """The caller synced `unsynced_directory()`: the name is durable, `sync` skips it."""
        ...

    def moved(self, path: str) -> None:
        """The caller renamed this file, open and synced at least once, to `path`
        (`Storage.rename`, in the same directory): writes go on into it, and later
        calls and messages name `path`. Both backends keep writing to a renamed open
        file (a file descriptor; HDFS finds an open file's writer by its inode)."""
        ...

    def tell(self) -> int: ...

    def close(self) -> None: ...

    def __enter__(self) -> WritableFile: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class Storage(Protocol):
    scheme: str  # "file" or "hdfs"
    # Whether `append` reopens a closed file (local disk). Where it does not (HDFS,
    # whose client appends under a block's old generation stamp: the HDFS storage's
    # module says why that is unsafe), `append` refuses and writers write new files
    # (the FlowFile WAL writes new journals when it recovers).
    reopens_for_append: bool

    def create(self, path: str, *, overwrite: bool = False) -> WritableFile: ...

    def append(self, path: str) -> WritableFile: ...

    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes: ...

    def open_read(self, path: str) -> BinaryIO: ...

    def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None: ...

    def delete(self, path: str, *, recursive: bool = False) -> bool: ...

    def list(self, path: str) -> list[FileStatus]: ...

    def status(self, path: str) -> FileStatus: ...

    def exists(self, path: str) -> bool: ...

    def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False) -> None: ...

    def sync_directory(self, path: str) -> None: ...

    def recover_lease(self, path: str) -> bool: ...

    def arrow_filesystem(self) -> pyarrow.fs.FileSystem: ...

    def close(self) -> None: ...


def join(*parts: str) -> str:
    """Join storage path parts with '/', whatever the host OS."""
    head, *rest = parts
    out = head.rstrip("/") or "/"
    for part in rest:
        part = part.strip("/")
        if part:
            out = f"{out}/{part}" if out != "/" else f"/{part}"
    return out


def parent(path: str) -> str:
    head = path.rstrip("/").rsplit("/", 1)[0]
    return head or "/"


def files_under(storage: Storage, directory: str) -> list[str]:
    """Every file below `directory`, at any depth (paths, in listing order)."""
    files = []
    for entry in storage.list(directory):
        if entry.is_dir:
            files.extend(files_under(storage, entry.path))
        else:
            files.append(entry.path)
    return files


def discard(storage: Storage, path: str) -> None:
    """Delete `path`, a file whose writer failed or was given up and may have left it
    open (see the module docstring): once closed where the storage can tell."""
    once_closed = getattr(storage, "delete_once_closed", None)
    if once_closed is not None:
        once_closed(path)
    else:
        storage.delete(path)
