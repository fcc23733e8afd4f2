"""Exceptions of the swap-file store: one root, each naming the file concerned."""

from __future__ import annotations


class SwapError(Exception):
    """Root of every failure of `repositories.swap`."""


class CorruptSwapFileError(SwapError):
    """A swap file failed its checks; nothing of it was returned."""

    def __init__(self, location: str, offset: int, reason: str):
        self.location, self.offset, self.reason = location, offset, reason
        super().__init__(
            f"swap file {location} is corrupt at offset {offset}: {reason}. Its FlowFiles were "
            "not loaded; keep the file for post-mortem and restore it from a replica if one exists."
        )


class SwapFileMissingError(SwapError):
    """The WAL records a swap file that is not in the store."""

    def __init__(self, location: str):
        self.location = location
        super().__init__(
            f"swap file {location} is recorded in the FlowFile WAL but does not exist: its "
            "FlowFiles cannot be loaded until it is back. The WAL keeps them; put the file back "
            "at this path (from the data directory it was copied or moved from, a replica or a "
            "backup) and the queue reads it at its next retry."
        )


class ForeignSwapFileError(SwapError):
    """A location outside the store's own directories was to be deleted: refused."""

    def __init__(self, location: str, directory: str):
        self.location, self.directory = location, directory
        super().__init__(
            f"swap file {location} is not in this shard's swap directory {directory}: it was left "
            "in place (a shard deletes only its own swap files)."
        )


class SwapWriteError(SwapError):
    """Writing or syncing a swap file failed; the batch stays in memory."""

    def __init__(self, location: str, cause: BaseException):
        self.location, self.cause = location, cause
        super().__init__(f"could not write swap file {location}: {cause}. The FlowFiles stay in memory.")
