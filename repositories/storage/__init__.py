"""The storage protocol that every repository writes through, and its local backend."""

from .abandon import AbandonableStorage, StorageAbandoned, abandon_file
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
from .protocol import FileStatus, Storage, WritableFile, discard, files_under, join, parent

__all__ = [
    "AbandonableStorage",
    "FileStatus",
    "LeaseLost",
    "LocalStorage",
    "LocalWritableFile",
    "Storage",
    "StorageAbandoned",
    "StorageError",
    "StorageFileExists",
    "StorageFileNotFound",
    "StorageFull",
    "StoragePermissionDenied",
    "StorageUnavailable",
    "WritableFile",
    "abandon_file",
    "discard",
    "join",
    "files_under",
    "parent",
]
