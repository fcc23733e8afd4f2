"""The storage protocol that every repository writes through, and its local backend."""

from .errors import (
    LeaseLost,
    StorageError,
    StorageFileExists,
    StorageFileNotFound,
    StorageFull,
    StoragePermissionDenied,
    StorageUnavailable,
)
from .local import LocalStorage, LocalWritableFile
from .protocol import FileStatus, Storage, WritableFile, files_under, join, parent

__all__ = [
    "FileStatus",
    "LeaseLost",
    "LocalStorage",
    "LocalWritableFile",
    "Storage",
    "StorageError",
    "StorageFileExists",
    "StorageFileNotFound",
    "StorageFull",
    "StoragePermissionDenied",
    "StorageUnavailable",
    "WritableFile",
    "join",
    "files_under",
    "parent",
]
