"""Exceptions of the FlowFile write-ahead log: one root, each with the context an
operator needs (which file, which byte offset, which transaction) and what to do."""

from __future__ import annotations


class WriteAheadLogError(Exception):
    """Root of every failure of `repositories.flowfile`."""


class NotRecoveredError(WriteAheadLogError):
    """`update` or `checkpoint` was called before `recover()` (a log accepts updates only after its restore)."""


class WriteAheadLogClosedError(WriteAheadLogError):
    """The log was closed; open a new `WriteAheadLog` and recover it."""


class NotAWriteAheadLogError(WriteAheadLogError):
    """The directory holds a file that no FlowFile WAL writes, or a file whose magic is wrong."""

    def __init__(self, path: str, offset: int, reason: str):
        self.path, self.offset, self.reason = path, offset, reason
        super().__init__(
            f"{path} at offset {offset} is not part of a FlowFile write-ahead log: {reason}. "
            "Point the WAL at its own directory; nothing was changed or deleted."
        )


class UnknownSerDeError(WriteAheadLogError):
    """A journal or snapshot names a SerDe (or a SerDe version) this process cannot read."""

    def __init__(self, path: str, offset: int, name: str, version: int, known: str):
        self.path, self.offset, self.name, self.version = path, offset, name, version
        super().__init__(
            f"{path} at offset {offset} was written by SerDe {name!r} version {version}, "
            f"which this process cannot read (it has {known}). Run a custody release that knows "
            "this SerDe, or pass it as serde=; nothing was changed or deleted."
        )


class CorruptJournalError(WriteAheadLogError):
    """A journal frame failed its checks at `offset`; `txid` is the transaction, if known."""

    def __init__(self, path: str, offset: int, txid: int | None, reason: str):
        self.path, self.offset, self.txid, self.reason = path, offset, txid, reason
        where = f"transaction {txid}" if txid is not None else "a transaction"
        super().__init__(f"{path} at offset {offset}: {where} is corrupt: {reason}")


class CorruptSnapshotError(WriteAheadLogError):
    """The snapshot cannot be trusted. Recovery stops rather than lose records silently."""

    def __init__(self, path: str, offset: int, reason: str):
        self.path, self.offset, self.reason = path, offset, reason
        super().__init__(
            f"snapshot {path} is corrupt at offset {offset}: {reason}. Recovery stopped and "
            "deleted nothing: keep the directory for post-mortem, and restore the shard from "
            "a replica or a backup (`custody wal inspect` shows what is readable)."
        )


class StaleEpochError(WriteAheadLogError):
    """A newer owner (higher shard epoch) has written this WAL: this process was fenced."""

    def __init__(self, path: str, found_epoch: int, own_epoch: int):
        self.path, self.found_epoch, self.own_epoch = path, found_epoch, own_epoch
        super().__init__(
            f"{path} was written at shard epoch {found_epoch}, newer than this owner's epoch "
            f"{own_epoch}: another node owns the shard now. Stop writing to it."
        )


class JournalPoisonedError(WriteAheadLogError):
    """A write or sync to a journal failed; the journal refuses writes until a checkpoint."""

    def __init__(self, path: str, cause: BaseException | None):
        self.path, self.cause = path, cause
        super().__init__(
            f"journal {path} refuses writes because an earlier write or sync failed ({cause}). "
            "Whether the failed transaction reached the disk is unknown. Fix the storage, then "
            "call checkpoint(): it rewrites the state from memory and reopens the journals."
        )


class CheckpointError(WriteAheadLogError):
    """A checkpoint failed; updates are refused until one succeeds. Nothing recoverable was deleted."""


class CorruptRecordError(WriteAheadLogError, ValueError):
    """A restored record's bytes matched their CRC but cannot be decoded (a SerDe bug or
    a forged file): raised on first access of the field, naming the record."""

    def __init__(self, record_id: str, reason: str):
        self.record_id, self.reason = record_id, reason
        super().__init__(
            f"FlowFile record {record_id!r} cannot be decoded: {reason}. Its bytes matched their "
            "CRC, so they are what was written: this is a SerDe bug or a forged file. Run "
            "`custody wal fsck` on the WAL directory to list every such record."
        )
