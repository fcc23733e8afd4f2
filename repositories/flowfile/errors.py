"""Exceptions of the FlowFile write-ahead log: one root, each with the context an
operator needs (which file, which byte offset, which transaction) and what to do."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .damage import Damage


class WriteAheadLogError(Exception):
    """Root of every failure of `repositories.flowfile`."""


def underlying(error: BaseException | None) -> str:
    """The first failure in `error`'s chain of causes that is not the WAL's own (the
    storage's: LeaseLost, StorageFull...), as "Type: first line of its message": what
    an operator acts on."""
    while isinstance(error, WriteAheadLogError) and error.__cause__ is not None:
        error = error.__cause__
    if error is None:
        return "no error"
    text = str(error)
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


class NotRecoveredError(WriteAheadLogError):
    """`update` or `checkpoint` was called before `recover()` (a log accepts updates only after its restore)."""


class WriteAheadLogClosedError(WriteAheadLogError):
    """The log was closed; open a new `WriteAheadLog` and recover it."""


class WriteAheadLogAbandonedError(WriteAheadLogClosedError):
    """The log was abandoned (`WriteAheadLog.abandon`): its owner died, and it never
    writes again. Refused before anything was written."""

    def __init__(self, directory: str, reason: str):
        self.directory, self.reason = directory, reason
        super().__init__(
            f"the WAL {directory} was abandoned ({reason}); it never writes again, and nothing of this "
            "transaction was written. Whoever adopts the shard recovers the WAL"
        )


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


class WalDamagedError(WriteAheadLogError):
    """The directory is damaged in a way no crash explains (`damage` lists each
    finding): recovering would lose acknowledged FlowFiles silently, so recovery stopped
    and changed nothing. The operator restores the damaged files, or accepts the loss."""

    def __init__(self, directory: str, damage: Iterable[Damage]):
        self.directory, self.damage = directory, list(damage)
        shown = "; ".join(f"{found.path}: {found.what}" for found in self.damage[:3])
        more = f" (and {len(self.damage) - 3} more findings)" if len(self.damage) > 3 else ""
        super().__init__(
            f"the FlowFile WAL {directory} is damaged in a way no crash explains, and starting would lose "
            f"acknowledged FlowFiles: {shown}{more}. Nothing was changed or deleted. Restore the damaged files "
            f"from a backup and start again, or accept the loss and start with what survives: "
            f"`custody wal fsck --accept-damage {directory}` (or `custody run --accept-wal-damage`), which keeps the "
            f"cut bytes and a report in {directory.rstrip('/')}/cut/ and the orphaned content in the content "
            "archive. `custody wal inspect` lists every finding."
        )


class StaleEpochError(WriteAheadLogError):
    """A newer owner (higher shard epoch) has written this WAL: this process was fenced."""

    def __init__(self, path: str, found_epoch: int, own_epoch: int):
        self.path, self.found_epoch, self.own_epoch = path, found_epoch, own_epoch
        super().__init__(
            f"{path} was written at shard epoch {found_epoch}, newer than this owner's epoch "
            f"{own_epoch}: another node owns the shard now. Stop writing to it."
        )


class JournalWriteError(WriteAheadLogError):
    """A write or sync to one journal failed (`cause`); the journal takes no more frames.
    `update()` never raises this: it rolls the WAL (see the package docstring), and the
    error is the `cause` of an `OutcomeUnknownError` when the roll fails too."""

    def __init__(self, path: str, cause: BaseException):
        self.path, self.cause = path, cause
        super().__init__(f"a write or sync to journal {path} failed: {cause}")


class OutcomeUnknownError(WriteAheadLogError):
    """The write or sync of transaction `txid` failed, and the roll that would have
    settled it failed too: the transaction is not in memory, but a recovery may still
    replay it until the WAL rolls. Keep what it references until `when_settled` calls."""

    def __init__(self, directory: str, txid: int, cause: BaseException | None, roll_error: BaseException | None):
        self.directory, self.txid, self.cause, self.roll_error = directory, txid, cause, roll_error
        super().__init__(
            f"transaction {txid} of the WAL {directory} failed ({underlying(cause)}), and so did the roll that "
            f"would have settled it ({underlying(roll_error)}). It was not applied in memory, but a recovery may "
            "still replay it until the WAL rolls: keep everything it references (content, swap files) until "
            "WriteAheadLog.when_settled calls back. Fix the storage; the next update or checkpoint rolls the WAL."
        )


class AbandonedInFlightError(OutcomeUnknownError):
    """Transaction `txid` was in flight when the WAL was abandoned (`WriteAheadLog.abandon`):
    its write or sync may have reached the storage or not, and it is never acknowledged
    (its owner is dead). A recovery of the WAL (its adopter's) finds it whole or not at
    all; `when_settled` never calls back on an abandoned WAL."""

    def __init__(self, directory: str, txid: int, reason: str):
        self.directory, self.txid, self.reason = directory, txid, reason
        self.cause = self.roll_error = None
        WriteAheadLogError.__init__(
            self,
            f"transaction {txid} of the WAL {directory} was in flight when the WAL was abandoned ({reason}): "
            "it is not acknowledged, and whoever adopts the shard may or may not find it, whole",
        )


class WriteAheadLogPoisonedError(WriteAheadLogError):
    """Refused before anything was written: an earlier write, sync or checkpoint failed,
    and the roll that must come before any transaction is acknowledged failed again."""

    def __init__(self, directory: str, cause: BaseException | None):
        self.directory, self.cause = directory, cause
        super().__init__(
            f"the WAL {directory} refused the transaction and wrote nothing of it ({underlying(cause)}): an "
            "earlier write, sync or checkpoint failed, and rolling the WAL to new journals failed again. Fix the "
            "storage; every update (or checkpoint) tries the roll again."
        )


class CheckpointError(WriteAheadLogError):
    """A checkpoint (a roll) failed; no transaction is acknowledged until one succeeds,
    which every update tries first. Nothing recoverable was deleted."""


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
