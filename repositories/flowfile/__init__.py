"""The FlowFile repository's write-ahead log (NiFi's design), on the storage protocol.

The same code runs on local disk (`repositories.storage.LocalStorage`) and on HDFS
(`replication.hdfs_storage.HdfsStorage`). It is used like NiFi's standalone
`nifi-write-ahead-log` library:

    from repositories.flowfile import WriteAheadLog, FlowFileRecord, Put, Delete

    wal = WriteAheadLog(storage, "/data/flowfile-repo", partitions=4, epoch=7)
    records = wal.recover()          # {record id: FlowFileRecord}; must come first
    txid = wal.update([Put(record), Delete("old-id")])   # durable when it returns
    wal.update(updates, sync=False)  # reaches storage at the next sync or checkpoint
    wal.checkpoint()                 # snapshot + reset journals (also every
                                     # `checkpoint_interval` seconds, default 60)
    wal.close()

Updates: `Put(record)` creates or replaces a record, `Delete(id)` removes it,
`SwapOut(SwapFile(location, queue, count, size), record_ids)` moves FlowFiles to a swap
file (one record per swap file), `SwapIn(location)` forgets the swap file (put the
FlowFiles back with `Put` in the same transaction). `wal.swap_files` lists the swap
files after recovery. `wal.last_recovery` is a `RecoveryReport`: the crash case seen,
the max transaction id, and every range cut from a journal, with why.

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
clock=time.monotonic, wall_clock=time.time, hooks=None)`; the defaults are 4 partitions
and a checkpoint every 60 seconds, exported for the configurations that build a log. `epoch` is the shard epoch written into every journal header and every
transaction; a WAL touched by a newer epoch raises `StaleEpochError`, and an older one
is re-stamped by a checkpoint on adoption. `hooks` are the named fault seams of
`hooks.WalHooks`. The SerDe is pluggable: see `serde.SerDe`.

Guarantees beyond NiFi's: a CRC on every transaction and snapshot record; group
commit (every sync=True update is fsync'd/hsync'd on return, concurrent committers
share one sync); renames through the storage layer, which syncs directories; a journal
whose write failed refuses writes until a checkpoint; cut bytes kept in `cut/`.

Errors all derive from `WriteAheadLogError` (see `errors`). Byte layouts: `format`.
"""

from .errors import (
    CheckpointError,
    CorruptJournalError,
    CorruptRecordError,
    CorruptSnapshotError,
    JournalPoisonedError,
    NotAWriteAheadLogError,
    NotRecoveredError,
    StaleEpochError,
    UnknownSerDeError,
    WriteAheadLogClosedError,
    WriteAheadLogError,
)
from .hooks import WalHooks
from .record import Delete, FlowFileRecord, LazyFlowFileRecord, Put, SwapFile, SwapIn, SwapOut, Update, decode_records
from .recovery import RecoveryReport, list_wal_files, read_state
from .serde import FlowFileSerDe, SerDe
from .wal import DEFAULT_CHECKPOINT_INTERVAL, DEFAULT_PARTITIONS, WriteAheadLog

__all__ = [
    "CheckpointError",
    "CorruptJournalError",
    "CorruptRecordError",
    "CorruptSnapshotError",
    "DEFAULT_CHECKPOINT_INTERVAL",
    "DEFAULT_PARTITIONS",
    "Delete",
    "FlowFileRecord",
    "FlowFileSerDe",
    "JournalPoisonedError",
    "LazyFlowFileRecord",
    "NotAWriteAheadLogError",
    "NotRecoveredError",
    "Put",
    "RecoveryReport",
    "SerDe",
    "StaleEpochError",
    "SwapFile",
    "SwapIn",
    "SwapOut",
    "UnknownSerDeError",
    "Update",
    "WalHooks",
    "WriteAheadLog",
    "WriteAheadLogClosedError",
    "WriteAheadLogError",
    "decode_records",
    "list_wal_files",
    "read_state",
]
