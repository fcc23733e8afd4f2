"""Exceptions of the content repository: one root, each carrying the claim or path concerned.

Messages say what happened and what the operator (or the calling session) can do.
Every write failure means the same thing to a `ProcessSession`: the claim was not
written, roll back and retry later; nothing already completed was touched.
"""

from __future__ import annotations

from repositories.storage import LeaseLost, StorageError, StorageFull, StorageUnavailable


class ContentRepositoryError(Exception):
    """Root of every content repository failure. `claim` or `path` says where."""

    def __init__(self, message: str, *, claim: object = None, path: str | None = None):
        super().__init__(message)
        self.claim = claim
        self.path = path


class ContentNotFound(ContentRepositoryError):
    """No replica holds the resource file of this claim (destroyed, aged off, or never written)."""


class ContentTruncated(ContentRepositoryError):
    """The resource file ends before the claim does: the claim was never completed
    (a writer died in it) or the file was damaged. It is never returned as partial data."""


class ContentCorrupted(ContentRepositoryError):
    """Bytes of the claim do not match their checksums, or the checksums that would
    verify them are missing or damaged: this replica's copy is not to be trusted. No
    byte of an unverified block is ever returned. `ranges` lists what was found bad:
    (replica, start, end or None, why), offsets in the resource file."""

    def __init__(self, message: str, *, claim: object = None, path: str | None = None, ranges: tuple = ()):
        super().__init__(message, claim=claim, path=path)
        self.ranges = tuple(ranges)


class ContentRepositoryFull(ContentRepositoryError):
    """Usage of a container is above the configured maximum; new writes are refused
    until the archive is aged off or space is freed."""


class ContentStorageFull(ContentRepositoryError):
    """The device (or HDFS quota) ran out of space (ENOSPC) during a write. The claim
    being written was abandoned; claims completed before it are intact."""


class ContentUnavailable(ContentRepositoryError):
    """A required replica (HDFS) cannot be reached. The write was abandoned cleanly;
    it succeeds again once the replica is back."""


class ContentWriteFailed(ContentRepositoryError):
    """A write or sync failed for another reason (I/O error, lost HDFS lease).
    `lost` lists completed-but-unsynced claims whose bytes may not be durable."""

    def __init__(self, message: str, *, claim: object = None, path: str | None = None, lost: tuple = ()):
        super().__init__(message, claim=claim, path=path)
        self.lost = tuple(lost)


class UnsafeContentPath(ContentRepositoryError):
    """A claim would resolve outside its container (a symlink, '..', an absolute path)."""


class ReplicaDiverged(ContentRepositoryError):
    """A follower replica is not at the same resource and offset as the leader."""


class RepositoryClosed(ContentRepositoryError):
    """The repository was closed; open a new one."""


def translate_storage_error(error: StorageError, *, claim=None, path=None) -> ContentRepositoryError:
    """The content error a session can act on, for a storage error met at `claim` or `path`."""
    where = path or error.path
    if isinstance(error, StorageFull):
        return ContentStorageFull(
            f"no space left writing content to {where}: the claim was abandoned, claims "
            "written before it are intact; free space (or let the archive age off) and retry",
            claim=claim,
            path=where,
        )
    if isinstance(error, StorageUnavailable):
        return ContentUnavailable(
            f"content storage unavailable at {where}: {error}; the claim was abandoned, "
            "roll back and retry when it is back",
            claim=claim,
            path=where,
        )
    if isinstance(error, LeaseLost):
        return ContentWriteFailed(f"lost the lease of {where}: {error}", claim=claim, path=where)
    return ContentWriteFailed(f"content write failed at {where}: {error}", claim=claim, path=where)
