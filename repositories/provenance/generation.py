"""The generation being written: one journal per slot, chosen round-robin by writers.

Lock plan:
  * `ProvenanceRepository._lock` guards `next_slot`, `events` and `bytes`, and the
    choice of this generation by a writer.
  * `drained` (a Condition) guards `in_flight`, the writers between choosing a slot
    and finishing their append. A writer enters while it also holds the repository's
    `_lock`, so a rollover, which swaps the generation under `_lock`, then waits for
    every writer that chose the old one.
  * `slot_locks[i]` guards journal i and `batches[i]`, the batches appended to it.
  * Order: the repository's `_lock` before `drained`; a slot lock alone.
"""

from __future__ import annotations

import threading

import pyarrow as pa

from .journal import JournalWriter


class JournalGeneration:
    def __init__(self, first_id: int, paths: list[tuple[str, int]], opened_at_s: float, sync: bool):
        self.first_id = first_id
        self.opened_at_s = opened_at_s
        self.journals = [JournalWriter(path, first_id, slot, sync_each_write=sync) for path, slot in paths]
        self.slot_locks = [threading.Lock() for _ in paths]
        # Kept, one list per slot, so that the merge need not read the journals back.
        self.batches: list[list[pa.RecordBatch]] = [[] for _ in paths]
        self.next_slot = 0
        self.events = 0
        self.bytes = 0
        self.in_flight = 0
        self.drained = threading.Condition()

    @property
    def paths(self) -> list[str]:
        return [j.path for j in self.journals]

    def choose_slot(self, events: int) -> int:
        """Claim the next slot for a batch of `events`. Caller holds the repository's `_lock`."""
        slot = self.next_slot
        self.next_slot = (slot + 1) % len(self.journals)
        self.events += events
        with self.drained:
            self.in_flight += 1
        return slot

    def append(self, slot: int, batch: pa.RecordBatch) -> int:
        """Append to the slot's journal; returns the bytes written."""
        with self.slot_locks[slot]:
            written = self.journals[slot].append(batch)
            self.batches[slot].append(batch)
        return written

    def leave(self) -> None:
        """The writer that chose a slot is done (appended or failed)."""
        with self.drained:
            self.in_flight -= 1
            self.drained.notify_all()

    def all_batches(self) -> list[pa.RecordBatch]:
        """Every batch appended, once the generation is drained."""
        return [batch for batches in self.batches for batch in batches]

    def wait_drained(self) -> None:
        with self.drained:
            while self.in_flight:
                self.drained.wait()

    def close(self) -> None:
        for journal in self.journals:
            journal.close()
