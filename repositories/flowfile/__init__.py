"""The FlowFile repository's write-ahead log (NiFi's design), on the storage protocol.

The same code runs on local disk (`repositories.storage.LocalStorage`) and on HDFS
(`replication.hdfs_storage.HdfsStorage`). It is used like NiFi's standalone
`nifi-write-ahead-log` library:

    from repositories.flowfile import WriteAheadLog, FlowFileRecord, Put, Delete

    wal = WriteAheadLog(storage, "/data/flowfile-repo", partitions=4, epoch=7)
    records = wal.recover()          # {record id: FlowFileRecord}; must come first
    txid = wal.update([Put(record), Delete("old-id")])   # durable when it returns
    wal.update(updates, sync=False)  # reaches storage at the next sync or checkpoint
    wal.checkpoint()                 # a roll: snapshot + reset journals (also every
                                     # `checkpoint_interval` seconds, default 60)
    wal.when_settled(release)        # after an OutcomeUnknownError (see below)
    wal.close()

Updates: `Put(record)` creates or replaces a record, `Delete(id)` removes it,
`SwapOut(SwapFile(location, queue, count, size), record_ids)` moves FlowFiles to a swap
file (one record per swap file), `SwapIn(location)` forgets the swap file (put the
FlowFiles back with `Put` in the same transaction). `wal.swap_files` lists the swap
files after recovery. `wal.last_recovery` is a `RecoveryReport`: the crash case seen,
the max transaction id, every range cut from a journal, with why, and every finding
of damage no crash explains (`damage`). With such damage `recover()` raises
`WalDamagedError` and changes nothing, unless the log was built with
`accept_damage=True`: then it recovers what survives and keeps a report in `cut/`.

Records: `FlowFileRecord(id, attributes, content_claim, queue, size, entry_date,
lineage_start_date, penalty_expiration=0)`, read field by field (it also unpacks,
compares and `replace`s like a NamedTuple). The records `recover()` returns are lazy
(`LazyFlowFileRecord`): every CRC was checked, but only the id was decoded; the
head (claim, queue, size, dates) and the attributes decode on first access. A record
whose bytes matched their CRC yet cannot be decoded raises `CorruptRecordError` then
(`custody wal fsck` finds such records beforehand). Untouched restored records are
written back to the next snapshot without re-encoding. A caller that will read every
record anyway decodes them in one pass with `decode_records(records.values())`.

Constructor: `WriteAheadLog(storage, directory, *, partitions=DEFAULT_PARTITIONS,
serde=FlowFileSerDe(), epoch=0, checkpoint_interval=DEFAULT_CHECKPOINT_INTERVAL,
clock=time.monotonic, wall_clock=time.time, hooks=None, relocate_swap=None,
accept_damage=False)`; the defaults are 4 partitions
and a checkpoint every 60 seconds, exported for the configurations that build a log.
`epoch` is the shard epoch written into every journal header and every
transaction; a WAL touched by a newer epoch raises `StaleEpochError`, and an older one
is re-stamped by a checkpoint on adoption. `hooks` are the named fault seams of
`hooks.WalHooks`. The SerDe is pluggable: see `serde.SerDe`.

Guarantees beyond NiFi's: a CRC on every transaction and snapshot record; group
commit (every sync=True update is fsync'd/hsync'd on return, concurrent committers
share one sync); renames through the storage layer, which syncs directories; a failed
write or sync rolls the WAL before anything else is acknowledged (below); journal
frames located only through CRC-checked lengths, never by searching user data; cut
bytes kept in `cut/`.

The contract of `update()` (the rule for writes whose outcome is unknown)
--------------------------------------------------------------------------
As HBase does with its WAL: a transaction is acknowledged only when it is durable and
no transaction that failed before it can still be replayed. A write or sync that
fails poisons the whole WAL (every partition) at once, and `update()` rolls the WAL
before it answers: a checkpoint of the in-memory state plus the transactions whose
callers still wait for an answer (the one that failed, and any that became durable
while the WAL was poisoned), then new, empty journals. Hence:

* `update()` returns the transaction id: the transaction is durable (in a journal, or
  in the snapshot of the roll that followed a failed write, as HBase's AsyncFSWAL
  re-appends unacknowledged entries to its new writer) and applied in memory. Every
  recovery replays it.
* `OutcomeUnknownError`: the write or sync failed, and the roll failed too. The
  transaction is not in memory and never will be, but some of its bytes may be on
  storage, and a recovery that runs before the next successful roll may replay it
  (whole, never in part). Keep everything it references (content claims, swap files,
  outbox slots) until `wal.when_settled(callback)` calls back: the next successful
  roll writes the in-memory state without it and covers its id, so that from then on
  no recovery can replay it. Anything else (requeueing the FlowFiles it would have
  consumed, retrying) may happen at once: nothing is acknowledged before that roll.
* `WriteAheadLogPoisonedError`: an earlier failure poisoned the WAL and the roll
  tried first failed again; nothing of this transaction was written. It is definitely
  not applied and never replayable: release everything now, retry later.
* `NotRecoveredError`, `WriteAheadLogClosedError`, `ValueError` (an empty or too
  large transaction): refused before anything was written; definitely not applied.
* anything else (`KeyboardInterrupt`, a test's simulated crash raised from a fault
  seam or a storage call): the WAL is poisoned and nothing was rolled. The outcome is
  unknown, as at a crash.

The rule is WAL-wide and no timer is involved: once a write fails, no transaction on
any partition is acknowledged until a roll has succeeded, and every `update()` and
`checkpoint()` tries that roll first. The in-memory state never holds a transaction
that failed. With sync=False, `update()` returns once the transaction is in memory
and queued; if its later write fails, the roll writes it from memory.

What a crash can replay: every acknowledged transaction; each transaction still in
flight at the crash (not yet answered), whole or not at all; each transaction that
raised `OutcomeUnknownError` and is not yet settled, whole or not at all. Never a
transaction that raised any other error, nor one a roll settled. `close()` settles
nothing: what is unsettled then is decided by the next recovery, like a crash.

`abandon()` is the stop of an owner that died (a clustered node's incarnation whose
shard is adopted elsewhere): it returns at once, whatever the storage does, with no
sync and no close (the journals' files are let go as they are; the adopter recovers
their leases). From then on `update()` raises `WriteAheadLogAbandonedError` (nothing
written), and a transaction in flight raises `AbandonedInFlightError`, an
`OutcomeUnknownError` that is never settled: no `update()` returns after `abandon()`,
so nothing is acknowledged after the death. A recovery finds each in-flight
transaction whole or not at all, as after a crash.

Errors all derive from `WriteAheadLogError` (see `errors`). Byte layouts: `format`.
"""

from .damage import Damage
from .errors import (
    AbandonedInFlightError,
    CheckpointError,
    CorruptJournalError,
    CorruptRecordError,
    CorruptSnapshotError,
    JournalWriteError,
    NotAWriteAheadLogError,
    NotRecoveredError,
    OutcomeUnknownError,
    StaleEpochError,
    UnknownSerDeError,
    WalDamagedError,
    WriteAheadLogAbandonedError,
    WriteAheadLogClosedError,
    WriteAheadLogError,
    WriteAheadLogPoisonedError,
)
from .hooks import WalHooks
from .record import Delete, FlowFileRecord, LazyFlowFileRecord, Put, SwapFile, SwapIn, SwapOut, Update, decode_records
from .recovery import RecoveryReport, list_wal_files, read_state
from .serde import FlowFileSerDe, SerDe
from .wal import DEFAULT_CHECKPOINT_INTERVAL, DEFAULT_PARTITIONS, WriteAheadLog

__all__ = [
    "AbandonedInFlightError",
    "CheckpointError",
    "CorruptJournalError",
    "CorruptRecordError",
    "CorruptSnapshotError",
    "DEFAULT_CHECKPOINT_INTERVAL",
    "Damage",
    "DEFAULT_PARTITIONS",
    "Delete",
    "FlowFileRecord",
    "FlowFileSerDe",
    "JournalWriteError",
    "LazyFlowFileRecord",
    "NotAWriteAheadLogError",
    "NotRecoveredError",
    "OutcomeUnknownError",
    "Put",
    "RecoveryReport",
    "SerDe",
    "StaleEpochError",
    "SwapFile",
    "SwapIn",
    "SwapOut",
    "UnknownSerDeError",
    "Update",
    "WalDamagedError",
    "WalHooks",
    "WriteAheadLog",
    "WriteAheadLogAbandonedError",
    "WriteAheadLogClosedError",
    "WriteAheadLogError",
    "WriteAheadLogPoisonedError",
    "decode_records",
    "list_wal_files",
    "read_state",
]
