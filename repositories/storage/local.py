"""Local-disk backend of the storage protocol.

Durability: `sync()` is fdatasync of the file, and, the first time after the file
was created, an fsync of its directory so that the new name survives a power cut.
`sync_data()` is the fdatasync alone, for a caller that fsyncs each directory once
for many new files (`unsynced_directory()`, then `directory_synced()`).
`rename` and `delete` fsync the directories they change before returning.
A rename that must not replace its target uses renameat2(RENAME_NOREPLACE), so
"does not exist yet" and "now exists" are one atomic step.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from typing import BinaryIO

from .errors import (
    StorageError,
    StorageFileExists,
    StorageFileNotFound,
    StorageFull,
)
from .protocol import FileStatus, parent

# What the repositories create is the node's alone: content, WAL, swap and provenance
# hold the flow's data. Files 0600, directories 0700 (less the process's umask).
FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


def make_private_directories(path: str) -> None:
    """`path` and each missing parent, created DIRECTORY_MODE (os.makedirs gives its mode
    to the last directory only); an existing directory is left as it is."""
    if os.path.isdir(path):
        return
    above = os.path.dirname(os.path.normpath(path))
    if above and above != path:
        make_private_directories(above)
    try:
        os.mkdir(path, DIRECTORY_MODE)
    except FileExistsError:
        if not os.path.isdir(path):
            raise


def translate_os_error(error: OSError, path: str, action: str) -> StorageError:
    """Turn an OSError into the storage error an operator can act on."""
    if isinstance(error, StorageError):
        return error
    if error.errno == errno.ENOENT:
        return StorageFileNotFound(
            f"cannot {action} {path}: it or its parent directory does not exist (parents are never created implicitly)",
            path,
        )
    if error.errno == errno.EEXIST:
        return StorageFileExists(f"cannot {action} {path}: it already exists", path)
    if error.errno in _NO_SPACE:
        return StorageFull(
            f"cannot {action} {path}: no space left on the device; free space or add "
            "a disk, then retry (nothing already synced was lost)",
            path,
        )
    return StorageError(f"cannot {action} {path}: {error.strerror or error}", path)


def fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalWritableFile:
    """An append-only file on local disk.

    Writes shorter than `buffer_size` wait in a user-space buffer until `sync` (or until
    the buffer fills); longer ones, and every write when `buffer_size` is 0, go to the
    kernel at once."""

    def __init__(self, path: str, fd: int, *, created: bool, buffer_size: int = 1 << 20):
        self.path = path
        self._fd = fd
        self._buffer = bytearray()
        self._buffer_size = buffer_size
        self._position = os.lseek(fd, 0, os.SEEK_END)
        # The directory whose fsync makes a new file's name durable; None once done.
        self._unsynced_directory: str | None = parent(path) if created else None
        self._closed = False

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._closed:
            raise StorageError(f"write to closed file {self.path}", self.path)
        size = len(data)
        self._position += size
        if self._buffer or size < self._buffer_size:
            self._buffer += data
            if len(self._buffer) >= self._buffer_size:
                self._drain()
        else:
            self._write_all(data)
        return size

    def _drain(self) -> None:
        data, self._buffer = self._buffer, bytearray()
        self._write_all(data)

    def _write_all(self, data) -> None:
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as error:
            # Keep what did not reach the kernel out of the file position: the caller's
            # transaction failed and must be retried in full after a checkpoint.
            self._position -= len(view)
            raise translate_os_error(error, self.path, "write") from error
        finally:
            view.release()

    def sync(self) -> None:
        self.sync_data()
        if self._unsynced_directory is not None:
            # The first sync also makes the new name durable: bytes that survive a
            # power cut in a file nobody can find would be no better than lost.
            try:
                fsync_directory(self._unsynced_directory)
            except OSError as error:
                raise translate_os_error(error, self.path, "sync") from error
            self._unsynced_directory = None

    def sync_data(self) -> None:
        self._drain()
        try:
            os.fdatasync(self._fd)
        except OSError as error:
            raise translate_os_error(error, self.path, "sync") from error

    def unsynced_directory(self) -> str | None:
        return self._unsynced_directory

    def directory_synced(self) -> None:
        self._unsynced_directory = None

    def moved(self, path: str) -> None:
        self.path = path  # the rename synced the directory (`LocalStorage.rename`)
        self._unsynced_directory = None

    def tell(self) -> int:
        return self._position

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._drain()
        finally:
            self._closed = True
            os.close(self._fd)

    def __enter__(self) -> LocalWritableFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalAddress:
    """What another process on this machine needs to reach local storage (see
    `replication.hdfs_storage.HdfsAddress`): nothing; `open()` gives a `LocalStorage`."""

    def open(self) -> LocalStorage:
        return LocalStorage()

    def __eq__(self, other) -> bool:
        return isinstance(other, LocalAddress)

    def __hash__(self) -> int:
        return hash(LocalAddress)


class LocalStorage:
    scheme = "file"
    reopens_for_append = True

    @property
    def address(self) -> LocalAddress:
        return LocalAddress()

    def create(self, path: str, *, overwrite: bool = False) -> LocalWritableFile:
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
        flags |= os.O_TRUNC if overwrite else os.O_EXCL
        try:
            fd = os.open(path, flags, FILE_MODE)
        except OSError as error:
            raise translate_os_error(error, path, "create") from error
        return LocalWritableFile(path, fd, created=True)

    def append(self, path: str) -> LocalWritableFile:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError as error:
            raise translate_os_error(error, path, "append to") from error
        return LocalWritableFile(path, fd, created=False)

    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        try:
            with open(path, "rb") as handle:
                if offset:
                    handle.seek(offset)
                return handle.read() if length is None else handle.read(length)
        except OSError as error:
            raise translate_os_error(error, path, "read") from error

    def open_read(self, path: str) -> BinaryIO:
        try:
            return open(path, "rb")
        except OSError as error:
            raise translate_os_error(error, path, "open") from error

    def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        try:
            if overwrite:
                os.rename(src, dst)
            else:
                _rename_no_replace(src, dst)
            fsync_directory(parent(dst))
            if parent(src) != parent(dst):
                fsync_directory(parent(src))
        except OSError as error:
            raise translate_os_error(error, f"{src} -> {dst}", "rename") from error

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                if recursive:
                    shutil.rmtree(path)
                else:
                    os.rmdir(path)
            else:
                os.unlink(path)
            fsync_directory(parent(path))
            return True
        except FileNotFoundError:
            return False
        except OSError as error:
            raise translate_os_error(error, path, "delete") from error

    def list(self, path: str) -> list[FileStatus]:
        try:
            with os.scandir(path) as entries:
                found = [_status_of(entry.path, entry.stat(follow_symlinks=False)) for entry in entries]
        except OSError as error:
            raise translate_os_error(error, path, "list") from error
        return sorted(found, key=lambda status: status.path)

    def status(self, path: str) -> FileStatus:
        try:
            return _status_of(path, os.stat(path, follow_symlinks=False))
        except OSError as error:
            raise translate_os_error(error, path, "stat") from error

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False) -> None:
        try:
            if parents:
                if not exist_ok and os.path.lexists(path):
                    raise FileExistsError(errno.EEXIST, "File exists", path)
                make_private_directories(path)
            else:
                try:
                    os.mkdir(path, DIRECTORY_MODE)
                except FileExistsError:
                    if not (exist_ok and os.path.isdir(path)):
                        raise
                    return
            fsync_directory(parent(path))
        except OSError as error:
            raise translate_os_error(error, path, "make directory") from error

    def sync_directory(self, path: str) -> None:
        try:
            fsync_directory(path)
        except OSError as error:
            raise translate_os_error(error, path, "sync directory") from error

    def recover_lease(self, path: str) -> bool:
        # Local files have no leases: a second process can always open them.
        if not os.path.lexists(path):
            raise StorageFileNotFound(f"cannot recover the lease of {path}: it does not exist", path)
        return True

    def arrow_filesystem(self):
        import pyarrow.fs

        return pyarrow.fs.LocalFileSystem()

    def close(self) -> None:
        pass


def _status_of(path: str, stat: os.stat_result) -> FileStatus:
    import stat as stat_module

    return FileStatus(
        path=path,
        length=stat.st_size,
        is_dir=stat_module.S_ISDIR(stat.st_mode),
        modified=stat.st_mtime,
    )


def _rename_no_replace(src: str, dst: str) -> None:
    if _renameat2 is not None:
        result = _renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE)
        if result == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err), src)
    # The filesystem does not support RENAME_NOREPLACE: link then unlink gives the same
    # "fail if the target exists" for files; directories cannot be hard-linked.
    if os.path.isdir(src):
        if os.path.lexists(dst):
            raise OSError(errno.EEXIST, os.strerror(errno.EEXIST), dst)
        os.rename(src, dst)
        return
    os.link(src, dst)
    os.unlink(src)
