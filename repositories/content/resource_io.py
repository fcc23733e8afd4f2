"""How the repository touches resource files: one small interface, two implementations.

`LocalResourceIO` works on local directories with raw `os` calls. It writes claims
straight through to the kernel (no user-space buffer shared between claims, so a
failed write of one claim can never take an earlier claim's bytes with it) and opens
every path component below the container with O_NOFOLLOW, so a symlink planted in a
section cannot lead a read or a write outside the container.

`StorageResourceIO` works through any `Storage` (HDFS): writes through the storage's
WritableFile (`sync()` is hsync), reads through the storage's pyarrow filesystem.

A resource is two files (see `format`): the resource file and its checksum file.
`create`, `open_read` and `truncate` touch the resource file, `create_checksums`,
`open_checksums` and `truncate_checksums` the checksum file; `archive` and `delete`
move or remove both, the resource file first, and `delete` looks for the checksum
file in the other place (live or archived) when it is not beside its resource file,
where a crash between the two steps of `archive` left it.

A read reports the bytes the handle can actually deliver, which on HDFS is less than
the NameNode's length for a file still open for writing: hdfs-native reads only up
to the last finished block. A node whose close failed after its claims were hsynced
leaves such a file behind. `finish_abandoned` closes it for a reader that may do so
(one reading a dead incarnation's content, `recover_open_files=True`) by recovering
its lease: the NameNode finishes the last block at the length its live replicas hold.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat as stat_module
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from repositories.claims import SECTIONS_PER_CONTAINER, ResourceClaim
from repositories.storage import StorageError, StorageFileNotFound, WritableFile, discard
from repositories.storage.leases import recover_leases
from repositories.storage.local import (
    DIRECTORY_MODE,
    FILE_MODE,
    LocalWritableFile,
    fsync_directory,
    make_private_directories,
    translate_os_error,
)
from repositories.storage.protocol import Storage, join

from .archive import Usage
from .errors import UnsafeContentPath
from .format import (
    ARCHIVE_DIRECTORY,
    archive_path,
    checksum_name,
    checksum_path,
    resource_id_of_checksum_file,
    resource_path,
    section_directory,
)
from .read_windows import ReadWindows, WindowedFile

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FoundResource:
    """One file met while scanning a container: a resource file, or (`checksums`) the
    checksum file of the resource `name`."""

    section: int
    name: str
    size: int
    modified: float
    archived: bool
    unsafe: bool  # a symlink or something else that is not a plain file
    checksums: bool = False


def _found(section: int, name: str, size: int, modified: float, archived: bool, unsafe: bool) -> FoundResource:
    resource_id = resource_id_of_checksum_file(name)
    if resource_id is None:
        return FoundResource(section, name, size, modified, archived, unsafe)
    return FoundResource(section, resource_id, size, modified, archived, unsafe, checksums=True)


def _path(root: str, resource: ResourceClaim, archived: bool, checksums: bool) -> str:
    if checksums:
        return checksum_path(root, resource, archived)
    return archive_path(root, resource) if archived else resource_path(root, resource)


class ResourceIO(Protocol):
    storage: Storage
    can_truncate: bool

    def prepare_container(self, root: str) -> None: ...

    def ensure_section(self, root: str, section: int) -> None: ...

    def create(self, root: str, resource: ResourceClaim) -> WritableFile: ...

    def create_checksums(self, root: str, resource: ResourceClaim) -> WritableFile: ...

    def open_read(self, root: str, resource: ResourceClaim, archived: bool) -> tuple[BinaryIO, int]: ...

    def open_checksums(self, root: str, resource: ResourceClaim, archived: bool) -> tuple[BinaryIO, int]: ...

    def archive(self, root: str, resource: ResourceClaim) -> None: ...

    def delete(self, root: str, resource: ResourceClaim, archived: bool) -> bool:
        """Delete the resource file and its checksum file; True if the resource file was there."""
        ...

    def truncate(self, root: str, resource: ResourceClaim, length: int) -> None: ...

    def truncate_checksums(self, root: str, resource: ResourceClaim, length: int) -> None: ...

    def finish_abandoned(self, root: str, resource: ResourceClaim) -> bool:
        """Close the resource file and its checksum file if their dead writer left them
        open; True if their readable lengths may have changed, so they are worth
        opening again."""
        ...

    def scan(self, root: str) -> list[FoundResource]: ...

    def usage(self, root: str) -> Usage | None: ...

    def close(self) -> None:
        """Release what the IO holds open (directory descriptors); nothing on HDFS."""
        ...


def _numeric_sections(names) -> list[int]:
    return sorted(int(name) for name in names if name.isdigit() and int(name) < SECTIONS_PER_CONTAINER)


# --------------------------------------------------------------------------- local


class LocalResourceIO:
    can_truncate = True

    def __init__(self) -> None:
        from repositories.storage import LocalStorage

        self.storage = LocalStorage()
        self._root_fds: dict[str, int] = {}

    def prepare_container(self, root: str) -> None:
        # 1024 mkdirs with one directory fsync at the end, not one per mkdir.
        try:
            make_private_directories(root)
            for section in range(SECTIONS_PER_CONTAINER):
                try:
                    os.mkdir(section_directory(root, section), DIRECTORY_MODE)
                except FileExistsError:
                    pass
            fsync_directory(root)
        except OSError as error:
            raise translate_os_error(error, root, "prepare content container") from error

    def ensure_section(self, root: str, section: int) -> None:
        pass  # all sections exist since prepare_container

    def _open_directory(self, root: str, section: int, archived: bool) -> int:
        """An fd of the section (or its archive) directory, refusing symlinks on the way."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(str(section), flags, dir_fd=self._root_fd(root))
        if archived:
            try:
                inner = os.open(ARCHIVE_DIRECTORY, flags, dir_fd=fd)
            finally:
                os.close(fd)
            return inner
        return fd

    def _root_fd(self, root: str) -> int:
        # The container root is configured by the operator and may itself be a symlink.
        fd = self._root_fds.get(root)
        if fd is None:
            fd = self._root_fds.setdefault(root, os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        return fd

    def _open_file(
        self, root: str, resource: ResourceClaim, archived: bool, flags: int, checksums: bool = False
    ) -> int:
        """An fd of the resource file (or its checksum file), opened from its section
        (or archive) directory with no symlink followed on the way. Raises OSError."""
        name = checksum_name(resource) if checksums else resource.id
        directory = self._open_directory(root, resource.section, archived)
        try:
            return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE, dir_fd=directory)
        finally:
            os.close(directory)

    def _unsafe(self, error: OSError, path: str, action: str = "open") -> Exception:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            return UnsafeContentPath(
                f"refusing {path}: a path component is a symlink or not a directory; "
                "a claim may never resolve outside its container",
                path=path,
            )
        return translate_os_error(error, path, action)

    def create(self, root: str, resource: ResourceClaim) -> LocalWritableFile:
        return self._create(root, resource, False)

    def create_checksums(self, root: str, resource: ResourceClaim) -> LocalWritableFile:
        return self._create(root, resource, True)

    def _create(self, root: str, resource: ResourceClaim, checksums: bool) -> LocalWritableFile:
        path = _path(root, resource, False, checksums)
        try:
            fd = self._open_file(root, resource, False, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, checksums)
        except OSError as error:
            raise self._unsafe(error, path, "create") from error
        # Unbuffered: each claim's bytes go to the kernel when written (see the module
        # docstring); the repository batches small claims (and checksum records) itself.
        return LocalWritableFile(path, fd, created=True, buffer_size=0)

    def open_read(self, root: str, resource: ResourceClaim, archived: bool) -> tuple[BinaryIO, int]:
        return self._open_read(root, resource, archived, False)

    def open_checksums(self, root: str, resource: ResourceClaim, archived: bool) -> tuple[BinaryIO, int]:
        return self._open_read(root, resource, archived, True)

    def _open_read(self, root: str, resource: ResourceClaim, archived: bool, checksums: bool) -> tuple[BinaryIO, int]:
        # The path is only for errors: a read of a small claim is a handful of syscalls,
        # and building strings it does not need would cost as much.
        try:
            fd = self._open_file(root, resource, archived, os.O_RDONLY, checksums)
        except FileNotFoundError as error:
            path = _path(root, resource, archived, checksums)
            raise StorageFileNotFound(f"{path} does not exist", path) from error
        except OSError as error:
            raise self._unsafe(error, _path(root, resource, archived, checksums)) from error
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode):
            os.close(fd)
            path = _path(root, resource, archived, checksums)
            raise UnsafeContentPath(f"refusing {path}: not a regular file", path=path)
        return os.fdopen(fd, "rb", buffering=0), info.st_size

    def archive(self, root: str, resource: ResourceClaim) -> None:
        directory = join(root, str(resource.section), ARCHIVE_DIRECTORY)
        try:
            try:
                os.mkdir(directory, DIRECTORY_MODE)
            except FileExistsError:
                pass
            section = self._open_directory(root, resource.section, False)
            try:
                for name in (resource.id, checksum_name(resource)):
                    try:
                        os.rename(name, os.path.join(ARCHIVE_DIRECTORY, name), src_dir_fd=section, dst_dir_fd=section)
                    except FileNotFoundError:
                        if name == resource.id:
                            raise
                        # No checksum file: a resource of format 0.
            finally:
                os.close(section)
            fsync_directory(directory)
            fsync_directory(section_directory(root, resource.section))
        except OSError as error:
            raise translate_os_error(error, resource_path(root, resource), "archive") from error

    def delete(self, root: str, resource: ResourceClaim, archived: bool) -> bool:
        deleted, checksums_deleted = self._unlink(root, resource, archived, (resource.id, checksum_name(resource)))
        if not checksums_deleted:  # left in the other place by a crash, or a resource of format 0
            self._unlink(root, resource, not archived, (checksum_name(resource),))
        return deleted

    def _unlink(self, root: str, resource: ResourceClaim, archived: bool, names: tuple[str, ...]) -> list[bool]:
        """Unlink `names` from the section (or archive) directory, with one fsync of it;
        for each, whether it was there."""
        try:
            directory = self._open_directory(root, resource.section, archived)
        except FileNotFoundError:
            return [False] * len(names)
        except OSError as error:
            raise self._unsafe(error, resource_path(root, resource)) from error
        try:
            done = []
            for name in names:
                try:
                    os.unlink(name, dir_fd=directory)
                    done.append(True)
                except FileNotFoundError:
                    done.append(False)
            if any(done):
                os.fsync(directory)
            return done
        except OSError as error:
            raise translate_os_error(error, resource_path(root, resource), "delete") from error
        finally:
            os.close(directory)

    def finish_abandoned(self, root: str, resource: ResourceClaim) -> bool:
        return False  # a local file has no writer's lease: what is there is all there is

    def truncate(self, root: str, resource: ResourceClaim, length: int) -> None:
        self._truncate(root, resource, length, False)

    def truncate_checksums(self, root: str, resource: ResourceClaim, length: int) -> None:
        self._truncate(root, resource, length, True)

    def _truncate(self, root: str, resource: ResourceClaim, length: int, checksums: bool) -> None:
        path = _path(root, resource, False, checksums)
        try:
            fd = self._open_file(root, resource, False, os.O_WRONLY, checksums)
            try:
                os.ftruncate(fd, length)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            raise translate_os_error(error, path, "truncate") from error

    def scan(self, root: str) -> list[FoundResource]:
        found: list[FoundResource] = []
        try:
            sections = _numeric_sections(os.listdir(root))
        except FileNotFoundError:
            return found
        for section in sections:
            directory: str | None = section_directory(root, section)
            archived = False
            while directory is not None:
                try:
                    entries = list(os.scandir(directory))
                except (FileNotFoundError, NotADirectoryError):
                    break
                directory = None
                for entry in entries:
                    if entry.name == ARCHIVE_DIRECTORY and not archived and entry.is_dir(follow_symlinks=False):
                        directory = (
                            entry.path
                        )  # scanned next: only where there is one (one listing, not two, per section)
                        continue
                    info = entry.stat(follow_symlinks=False)
                    found.append(
                        _found(
                            section,
                            entry.name,
                            info.st_size,
                            info.st_mtime,
                            archived,
                            unsafe=not stat_module.S_ISREG(info.st_mode),
                        )
                    )
                archived = True
        return found

    def usage(self, root: str) -> Usage:
        total, used, _free = shutil.disk_usage(root)
        return Usage(used=used, total=total)

    def close(self) -> None:
        for fd in self._root_fds.values():
            os.close(fd)
        self._root_fds = {}


# --------------------------------------------------------------------------- storage


class StorageResourceIO:
    """Resource files through a `Storage` (HDFS). Sections are created on first use."""

    can_truncate = False

    def __init__(
        self,
        storage: Storage,
        *,
        read_through_arrow: bool = True,
        recover_open_files: bool = False,
        lease_timeout: float = 60.0,
        cache: ReadWindows | None = None,
    ):
        self.storage = storage
        self._read_through_arrow = read_through_arrow
        # Only for readers of a dead writer's files: recovering a live writer's lease
        # fences it (its next write fails with LeaseLost).
        self.recover_open_files = recover_open_files
        self.lease_timeout = lease_timeout
        # Only for readers of a dead writer's files too (`read_windows`): each window
        # of a file read once, the next claims in it read from memory.
        self.cache = cache
        self._sections: set[tuple[str, int]] = set()

    def prepare_container(self, root: str) -> None:
        self.storage.mkdir(root, parents=True, exist_ok=True)

    def ensure_section(self, root: str, section: int) -> None:
        if (root, section) not in self._sections:
            self.storage.mkdir(section_directory(root, section), exist_ok=True)
            self._sections.add((root, section))

    def create(self, root: str, resource: ResourceClaim) -> WritableFile:
        return self.storage.create(resource_path(root, resource))

    def create_checksums(self, root: str, resource: ResourceClaim) -> WritableFile:
        return self.storage.create(checksum_path(root, resource))

    def open_read(self, root: str, resource: ResourceClaim, archived: bool) -> tuple[BinaryIO, int]:
        return self._open_read(_path(root, resource, archived, False))

    def open_checksums(self, root: str, resource: ResourceClaim, archived: bool) -> tuple[BinaryIO, int]:
        return self._open_read(_path(root, resource, archived, True))

    def _open_read(self, path: str) -> tuple[BinaryIO, int]:
        if self.cache is None:
            return self._open_stored(path)
        opened = None
        size = self.cache.size(path)
        if size is None:
            opened, size = self._open_stored(path)
            self.cache.learn_size(path, size)
        return WindowedFile(self.cache, path, size, lambda: self._open_stored(path)[0], opened), size

    def _open_stored(self, path: str) -> tuple[BinaryIO, int]:
        if self._read_through_arrow:
            import pyarrow.fs

            filesystem = self.storage.arrow_filesystem()
            info = filesystem.get_file_info(path)
            if info.type == pyarrow.fs.FileType.NotFound:
                raise StorageFileNotFound(f"hdfs:{path} does not exist", path)
            if info.type != pyarrow.fs.FileType.File:
                raise UnsafeContentPath(f"refusing hdfs:{path}: not a regular file", path=path)
            handle = filesystem.open_input_file(path)
            return handle, handle.size()
        handle = self.storage.open_read(path)
        size = handle.seek(0, os.SEEK_END)
        handle.seek(0)
        return handle, size

    def finish_abandoned(self, root: str, resource: ResourceClaim) -> bool:
        if not self.recover_open_files:
            return False
        # The resource file and its checksum file, live or archived, in one round: their
        # block recoveries run side by side on the DataNodes.
        paths = []
        for checksums in (False, True):
            for archived in (False, True):
                path = _path(root, resource, archived, checksums)
                if self.storage.exists(path):
                    paths.append(path)
                    break
        if not paths:
            return False
        if self.cache is not None:  # read short while open: read again once closed
            self.cache.forget(paths)
        try:
            calls, waited = recover_leases(self.storage, paths, timeout=self.lease_timeout)
        except StorageFileNotFound:
            return False  # collected meanwhile: the read that follows says what is missing
        if calls > len(paths):
            log.info(
                "recovered the leases on %s, which their dead writer left open, in %.2fs",
                ", ".join(f"hdfs:{path}" for path in paths),
                waited,
            )
        return True

    def archive(self, root: str, resource: ResourceClaim) -> None:
        directory = join(root, str(resource.section), ARCHIVE_DIRECTORY)
        self.storage.mkdir(directory, exist_ok=True)
        self.storage.rename(resource_path(root, resource), archive_path(root, resource))
        try:
            self.storage.rename(checksum_path(root, resource), checksum_path(root, resource, True))
        except StorageFileNotFound:
            pass  # no checksum file: a resource of format 0

    def delete(self, root: str, resource: ResourceClaim, archived: bool) -> bool:
        deleted = self._delete_closed(_path(root, resource, archived, False))
        if not self._delete_closed(checksum_path(root, resource, archived)):
            self._delete_closed(checksum_path(root, resource, not archived))
        return deleted

    def _delete_closed(self, path: str) -> bool:
        """Delete `path`, or let it go (`discard`) if it is still open: a resource whose
        close failed (its pipeline broke) is collected like any other, and HDFS deleting
        it open would leave its last block counted against its DataNodes for good. One
        `recover_lease` first, which answers at once for a closed file."""
        try:
            closed = self.storage.recover_lease(path)
        except StorageFileNotFound:
            return False
        if closed:
            return self.storage.delete(path)
        discard(self.storage, path)
        return True

    def truncate(self, root: str, resource: ResourceClaim, length: int) -> None:
        raise StorageError("this storage cannot truncate resource files", resource_path(root, resource))

    def truncate_checksums(self, root: str, resource: ResourceClaim, length: int) -> None:
        raise StorageError("this storage cannot truncate checksum files", checksum_path(root, resource))

    def scan(self, root: str) -> list[FoundResource]:
        found: list[FoundResource] = []
        try:
            top = self.storage.list(root)
        except StorageFileNotFound:
            return found
        sections = _numeric_sections(status.name for status in top if status.is_dir)
        for section in sections:
            self._sections.add((root, section))
            directory = section_directory(root, section)
            for status in self.storage.list(directory):
                if status.is_dir:
                    if status.name == ARCHIVE_DIRECTORY:
                        for archived in self.storage.list(status.path):
                            found.append(
                                _found(
                                    section, archived.name, archived.length, archived.modified, True, archived.is_dir
                                )
                            )
                    continue
                found.append(_found(section, status.name, status.length, status.modified, False, False))
        return found

    def usage(self, root: str) -> Usage | None:
        return None  # HDFS capacity is the cluster's, not this repository's to police

    def close(self) -> None:
        pass
