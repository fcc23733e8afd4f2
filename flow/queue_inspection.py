"""What an operator sees of a queue: NiFi's "list queue" and a FlowFile looked up by uuid.

    snapshot = queue.snapshot()                 # a copy taken under the queue's lock
    page = snapshot.page(offset=0, limit=100, now_ms=now)
    page.items                                  # [ListedFlowFile(position, flowfile, penalized)]
    page.listable, page.swapped_count, page.in_flight
    found = find_flowfile(shard, uuid)          # FoundFlowFile(queue, flowfile, swapped) or None

A listing holds the FlowFiles the queue keeps in memory (active, penalized and
staging), in the order the queue hands them out: by its prioritizers, then by arrival
(a penalized FlowFile takes its place once its penalty is over). As in NiFi, swapped
FlowFiles are not listed, only counted (`swapped_count`, which also counts a batch
being written to or read from a swap file), and neither are FlowFiles a running task
has polled and not yet committed (`in_flight`): `listable + swapped_count + in_flight`
is the queue's count when the snapshot was taken.

`find_flowfile` looks in memory first, then reads the queue's swap files (one read
per file, up to the whole of each: an operator's lookup, not a hot path).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from repositories.swap import SwapError, SwapFileMissingError

from .flowfile import FlowFile


@dataclass(frozen=True, slots=True)
class ListedFlowFile:
    position: int  # 1 for the FlowFile the queue hands out next, as NiFi numbers them
    flowfile: FlowFile
    penalized: bool


@dataclass(frozen=True, slots=True)
class QueuePage:
    queue: str
    offset: int
    items: list[ListedFlowFile]
    listable: int  # FlowFiles in memory, which a listing can show
    swapped_count: int  # in swap files (or on their way to or from one): not listed
    swapped_size: int
    in_flight: int  # polled by a running task, not committed: not listed
    count: int
    size: int


@dataclass(frozen=True)
class QueueSnapshot:
    """The queue's in-memory entries `(key, sequence, FlowFile)`, unsorted, and its numbers."""

    queue: str
    entries: list
    swapped_count: int
    swapped_size: int
    in_flight: int
    count: int
    size: int

    def page(self, offset: int, limit: int, now_ms: int) -> QueuePage:
        """The `limit` FlowFiles from position `offset + 1` on, in the order they would be polled."""
        if offset < 0 or limit < 0:
            raise ValueError(f"offset ({offset}) and limit ({limit}) cannot be negative")
        first = heapq.nsmallest(offset + limit, self.entries, key=_order)[offset:]
        items = [
            ListedFlowFile(offset + index + 1, entry[2], entry[2].penalty_expiration > now_ms)
            for index, entry in enumerate(first)
        ]
        return QueuePage(
            self.queue,
            offset,
            items,
            len(self.entries),
            self.swapped_count,
            self.swapped_size,
            self.in_flight,
            self.count,
            self.size,
        )


def _order(entry: tuple):
    return entry[0]  # the queue's key: the prioritizers' key and the arrival sequence, never equal


@dataclass(frozen=True, slots=True)
class FoundFlowFile:
    queue: str
    flowfile: FlowFile
    swapped: bool  # read from a swap file


def find_flowfile(shard, uuid: str) -> FoundFlowFile | None:
    """The FlowFile `uuid` in one of the shard's queues, in memory or swapped out; None
    when it is in none (never there, gone, or held by a running task)."""
    for queue in shard.queues.values():
        flowfile = queue.find(uuid)
        if flowfile is not None:
            return FoundFlowFile(queue.id, flowfile, False)
    store = shard.swap_store
    if store is None:
        return None
    for queue in shard.queues.values():
        for summary in queue.swap_summaries():
            try:
                _, records = store.read(summary.location)
            except SwapFileMissingError:
                continue  # swapped in meanwhile: its FlowFiles are in memory now (looked at below)
            except SwapError:
                continue  # unreadable: the swap-in that finds it sets it aside, in alarm
            for record in records:
                if record.id == uuid:
                    return FoundFlowFile(queue.id, FlowFile.from_record(record), True)
    for queue in shard.queues.values():  # swapped in while the files were read
        flowfile = queue.find(uuid)
        if flowfile is not None:
            return FoundFlowFile(queue.id, flowfile, False)
    return None
