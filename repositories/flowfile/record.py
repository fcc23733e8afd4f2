"""The FlowFile record and the updates a transaction carries.

`FlowFileRecord` is a NamedTuple rather than a dataclass: recovery builds a million of
them, and a tuple is built in a fraction of the time (see benchmarks/wal.py). Treat it,
including its `attributes` dict, as immutable; `replace(...)` makes a new version.

Swapping is recorded in bulk, one record per swap file (not one per FlowFile as NiFi
does): `SwapOut` removes the swapped FlowFiles from the live map and registers the
swap file; `SwapIn` unregisters it, and the same transaction carries a `Put` for every
FlowFile brought back.
"""

from __future__ import annotations

from typing import NamedTuple, Union

from ..claims import ContentClaim


class FlowFileRecord(NamedTuple):
    id: str
    attributes: dict[str, str]
    content_claim: ContentClaim | None
    queue: str
    size: int
    entry_date: int  # milliseconds since the epoch
    lineage_start_date: int  # milliseconds since the epoch
    penalty_expiration: int = 0  # milliseconds since the epoch; 0 when not penalized

    def replace(self, **changes) -> "FlowFileRecord":
        return self._replace(**changes)


class SwapFile(NamedTuple):
    """A swap file as the WAL knows it: where it is, whose queue, how much it holds."""

    location: str
    queue: str
    count: int
    size: int


class Put(NamedTuple):
    """Create the record, or replace the version with the same id."""

    record: FlowFileRecord


class Delete(NamedTuple):
    record_id: str


class SwapOut(NamedTuple):
    """The FlowFiles `record_ids` now live in `swap_file` (written and synced beforehand)."""

    swap_file: SwapFile
    record_ids: tuple[str, ...]


class SwapIn(NamedTuple):
    """The swap file at `location` was read back; its FlowFiles come back as `Put`s."""

    location: str


Update = Union[Put, Delete, SwapOut, SwapIn]


def apply_update(records: dict, swap_files: dict, update: Update) -> None:
    """Apply one update to a record map and a swap-file map (used live and in replay)."""
    kind = type(update)
    if kind is Put:
        record = update.record
        records[record.id] = record
    elif kind is Delete:
        records.pop(update.record_id, None)
    elif kind is SwapOut:
        for record_id in update.record_ids:
            records.pop(record_id, None)
        swap_files[update.swap_file.location] = update.swap_file
    elif kind is SwapIn:
        swap_files.pop(update.location, None)
    else:
        raise TypeError(f"not a WAL update: {update!r}")
