"""Swap files (NiFi's swapping): batches of FlowFiles a queue moved out of memory.

    store = SwapStore(storage, "/data/swap")   # any `repositories.storage` backend
    store.prepare()
    summary = store.write("queue-id", records) # synced before it returns
    wal.update([SwapOut(SwapFile(summary.location, "queue-id", summary.count,
                                 summary.size), ids)])   # only then
    store.read_summary(location)               # count, size, oldest, newest, claims
    summary, records = store.read(location)    # swap-in
    store.delete(location)                     # only ever in its own directories
    store.rebase(location)                     # a moved data directory's record, here
    store.quarantine(location, summary)        # moved aside, never deleted

Locations are full paths (as the WAL records them; `rebase` maps one written in a
moved or copied data directory). A quarantined file is in `<swap dir>-quarantine/`.

Byte layout: `format`. Errors derive from `SwapError`. Fault seams: `hooks.SwapHooks`.
"""

from .errors import CorruptSwapFileError, ForeignSwapFileError, SwapError, SwapFileMissingError, SwapWriteError
from .format import SwapSummary
from .hooks import SwapHooks
from .store import SwapStore

__all__ = [
    "CorruptSwapFileError",
    "ForeignSwapFileError",
    "SwapError",
    "SwapFileMissingError",
    "SwapHooks",
    "SwapStore",
    "SwapSummary",
    "SwapWriteError",
]
