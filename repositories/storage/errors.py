"""Exceptions of the storage layer.

Every error names the path it concerns and says what the operator can do. The
classes also derive from the matching built-in (`FileNotFoundError`, ...), so
callers that only know the standard library still catch them.
"""

from __future__ import annotations


class StorageError(OSError):
    """Root of every storage failure. `path` names the file or directory concerned."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:  # OSError's own __str__ would print an errno tuple
        return self.args[0]


class StorageFileNotFound(StorageError, FileNotFoundError):
    """The file or a parent directory does not exist (parents are never created implicitly)."""


class StorageFileExists(StorageError, FileExistsError):
    """The target exists and the operation was asked not to replace it."""


class StorageFull(StorageError):
    """The device or the HDFS quota has no room left (ENOSPC/EDQUOT)."""


class StoragePermissionDenied(StorageError, PermissionError):
    """The backend refuses this user the operation (HDFS permissions: the user, the
    access and the inode that refused it are in the message). Retrying does not help
    until an operator changes an owner or a mode."""


class StorageUnavailable(StorageError):
    """The backend cannot be reached (HDFS NameNode or DataNodes down, connection refused)."""


class LeaseLost(StorageError):
    """This writer no longer holds the file: its lease was recovered by someone else
    (it was fenced) or the file was renamed or deleted under it. The writer must stop;
    its unsynced bytes were not persisted."""
