"""A durable shard as a node runs one, for the fault tests of the WAL, the swap store and
the committer: `QueueShard` (its WAL and swap store) on a storage, a content
repository on local disk, a `DurableCommitter`, and sessions that create, rewrite and
drop FlowFiles of one queue (a small swap threshold, so that it swaps all the time).

    durable = DurableShard(FaultyStorage(UnbufferedLocalStorage()), "/tmp/s", "/tmp/c")
    created = durable.create([b"a", b"b"])    # {id: content}; raises CommitError, Crash
    changed = durable.process([None, b"new"]) # the first polled dropped, the next rewritten
    durable.restart()                         # after a crash: reopen and recover
    durable.live()                            # {id: content} the shard holds

What the shard holds is read from the WAL's record map and swap files, and each
FlowFile's content from the content repository, so `live()` after a restart is what
the recovery brought back.
"""

from __future__ import annotations

import itertools

from flow.commit import DurableCommitter
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import open_shard
from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository
from repositories.provenance.event_batch import EventBatch, to_events
from repositories.storage import join

QUEUE = "q"
# One claim per resource, no archive: a resource whose last claimant goes is destroyed
# by the next collect(), so content released too early is gone, as in production.
CONTENT_CONFIG = ContentRepositoryConfig(max_appendable_claim_size=1, archive=ArchivePolicy(enabled=False))


class DurableShard:
    def __init__(
        self, storage, root: str, content_directory: str, *, partitions: int = 2, threshold: int = 4, batch: int = 2
    ):
        self.storage, self.root, self.content_directory = storage, root, content_directory
        self.partitions, self.threshold, self.batch = partitions, threshold, batch
        self._clock = itertools.count(1_000)
        self.open()

    def open(self) -> None:
        """Open and recover everything from storage, as a restarted node does."""
        self.queue = FlowFileQueue(QUEUE, swap_threshold=self.threshold, swap_batch=self.batch, clock_ms=self.clock_ms)
        self.shard = open_shard(
            self.storage, self.root, "s", [self.queue], partitions=self.partitions, checkpoint_interval=None
        )
        self.content = open_filesystem_content_repository([self.content_directory], CONTENT_CONFIG)
        self.recovery = self.shard.recover()
        self.content_recovery = self.content.recover(self.recovery.live_claims)
        self.recovery.live_claims = []
        self.committer = DurableCommitter(self.shard, self.content, None, outbox=False)

    def clock_ms(self) -> int:
        return next(self._clock)

    def session(self) -> ProcessSession:
        return ProcessSession(
            component_id="p",
            component_type="Test",
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            incoming=[self.queue],
            outgoing={"success": [self.queue]},
            clock_ms=self.clock_ms,
            penalty_ms=0,
        )

    def create(self, payloads, effects: dict | None = None) -> dict:
        """New FlowFiles with these contents, in one commit; `effects` (if given) is
        filled with {id: content} before the commit starts. Returns it."""
        effects = {} if effects is None else effects
        session = self.session()
        for payload in payloads:
            flowfile = session.write_bytes(session.create(), payload)
            session.transfer(flowfile, "success")
            effects[flowfile.id] = payload
        session.commit()
        return effects

    def process(self, decisions, effects: dict | None = None) -> dict:
        """Poll up to len(decisions) FlowFiles; drop each whose decision is None, rewrite
        the others with the decision as content; one commit. `effects` (if given) gets
        {id: new content or None} before the commit starts. Returns it."""
        effects = {} if effects is None else effects
        session = self.session()
        for flowfile, decision in zip(session.get_batch(len(decisions)), decisions, strict=False):
            if decision is None:
                session.remove(flowfile)
            else:
                session.transfer(session.write_bytes(flowfile, decision), "success")
            effects[flowfile.id] = decision
        session.commit()
        return effects

    def collect(self) -> None:
        """Destroy the content nobody holds a claim on (the content repository's collector)."""
        self.content.collect()

    def records(self) -> dict:
        """{id: FlowFileRecord} of every FlowFile the WAL holds, live or in a swap file."""
        wal = self.shard.wal
        records = {record.id: record for record in wal.records.values() if record.queue == QUEUE}
        for location in wal.swap_files:
            _, swapped = self.shard.swap_store.read(location)
            records.update((record.id, record) for record in swapped)
        return records

    def live(self) -> dict:
        """{id: content} of every FlowFile the WAL holds (raises if content is missing)."""
        return {record_id: self.content.read(record.content_claim) for record_id, record in self.records().items()}

    def claimants(self) -> dict:
        """{resource: how many FlowFiles the WAL holds reference it}."""
        counts: dict = {}
        for record in self.records().values():
            resource = record.content_claim.resource
            counts[resource] = counts.get(resource, 0) + 1
        return counts

    def swap_directory(self) -> str:
        return join(self.root, "swap")

    def wal_directory(self) -> str:
        return join(self.root, "wal")

    def restart(self, keep: float = 0.0) -> None:
        """The process died: leave on storage what it would leave, reopen and recover."""
        self.storage.restart(keep)
        self.content.close()  # content is not under test here: only its claimant counts
        if self.storage.scheme != "file":
            from tests.integration.test_wal_model import recover_leases

            for directory in (self.wal_directory(), self.swap_directory()):
                if self.storage.exists(directory):
                    recover_leases(self.storage, directory)
        self.open()

    def close(self) -> None:
        """Close what is open, whatever state a test left it in."""
        self.storage.disarm()
        if not self.storage.crashed:
            try:
                self.shard.wal.close()
            except Exception:  # noqa: BLE001 - a poisoned WAL may refuse its last sync
                pass
        self.storage.restart(1.0)
        self.content.close()


class RecordedProvenance:
    """A provenance repository that keeps the events it is given (a committer's `provenance`)."""

    def __init__(self):
        self.events = []
        self.next_event_id = 0

    def register_events(self, events, now_ms=None):
        self.events += events
        self.next_event_id += len(events)

    def register_batch(self, batch):
        self.register_events(to_events(batch.record_batch))

    def peek_next_event_id(self):
        return self.next_event_id

    def register_rows_later(self, rows, done):
        """Registered at once (the real repository groups them on a thread of its own)."""
        self.register_batch(EventBatch.from_rows(rows, 0))
        done(None)
