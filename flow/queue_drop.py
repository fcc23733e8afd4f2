"""Emptying a queue: NiFi's "drop FlowFiles", committed as a processor session commits.

    report = drop_queue(shard, queue, committer)   # DropReport: dropped, dropped_bytes, ...

The FlowFiles leave in batches, each one transaction through the shard's committer
(`flow.commit`): the commit gate, one WAL transaction, the queue, claimant counts
released, a DROP event per FlowFile (component: the queue, type "Connection", as
NiFi records them), with the provenance outbox covering a crash before provenance.
A batch is either FlowFiles held in memory (taken as a poll takes them, penalized
and staging ones too: Deletes in the WAL) or one whole swap file (read for the
events and claims, and forgotten by a `SwapIn` with no Put: its FlowFiles are never
loaded into the queue). Hence a crash at any point leaves every batch wholly dropped
or wholly queued: a dropped FlowFile never comes back, one not yet dropped is not lost.

What is not dropped: FlowFiles a running task has polled and not committed (NiFi
leaves them too; `DropReport.in_flight` says how many), FlowFiles that arrive
during the drop beyond the count queued when it began, and those of swap files that
cannot be read (set aside, quarantined and in alarm as when a swap-in fails: a drop
never deletes a file it could not read, whose FlowFiles it could not record as dropped).

The drop holds the shard's swap lock of the queue throughout, so no swap-in or
swap-out races it for a swap file or a staging batch. A failed commit puts its batch
back (its FlowFiles requeued, its swap file registered again) and raises
`CommitError`; batches committed before it stay dropped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from repositories.provenance import EventType
from repositories.provenance.event_batch import EventRow

from .errors import CommitError
from .flowfile import FlowFile
from .session import Transaction

DROP_BATCH = 1000  # FlowFiles of memory per transaction; a swap file is always one
COMPONENT_TYPE = "Connection"
_DROP = EventType.DROP.value
DEFAULT_DETAILS = "FlowFile Queue emptied"


@dataclass(frozen=True, slots=True)
class DropReport:
    queue: str
    dropped: int
    dropped_bytes: int
    swap_files: int  # swap files dropped whole
    swapped_dropped: int  # FlowFiles of those files
    in_flight: int  # held by running tasks when the drop ended: not dropped
    remaining: int  # the queue's count when the drop ended (arrivals included)


def drop_queue(shard, queue, committer, *, details: str = DEFAULT_DETAILS, batch: int = DROP_BATCH) -> DropReport:
    dropped = dropped_bytes = swap_files = swapped = 0
    limit = queue.count  # what was queued when asked: a busy upstream cannot keep the drop going
    with shard.swap_lock(queue):
        while dropped < limit:
            flowfiles = queue.take_for_drop(min(batch, limit - dropped))
            if not flowfiles:
                break
            tx = _drop_transaction(queue, flowfiles, details)
            tx.acknowledged = {queue: flowfiles}
            tx.deletes = [flowfile.id for flowfile in flowfiles]
            try:
                committer.commit(tx)
            except CommitError:
                queue.requeue(flowfiles)
                raise
            dropped += len(flowfiles)
            dropped_bytes += sum(flowfile.size for flowfile in flowfiles)
        while (summary := queue.take_swapped_for_drop()) is not None:
            try:
                records = shard.read_swap_file(summary.location)
            except Exception as error:  # noqa: BLE001 - set aside like a failed swap-in; the drop goes on
                shard.swap_read_failed(queue, summary, error, taken_for_drop=True)
                continue
            try:
                shard.claims_loaded(summary.location, records)
                tx = _drop_transaction(queue, [FlowFile.from_record(record) for record in records], details)
                tx.swap_drops = [(queue, summary)]
                committer.commit(tx)
            except Exception:
                # The file stays whatever the WAL answered: it still points at it, unless
                # a SwapIn of unknown outcome is replayed, and then recovery removes it.
                queue.return_swapped(summary)
                raise
            dropped += summary.count
            dropped_bytes += summary.size
            swap_files += 1
            swapped += summary.count
    figures = queue.summary()
    return DropReport(queue.id, dropped, dropped_bytes, swap_files, swapped, figures.unacknowledged, figures.count)


def _drop_transaction(queue, flowfiles: list[FlowFile], details: str) -> Transaction:
    tx = Transaction(queue.id, COMPONENT_TYPE)
    released: Counter = Counter()
    events = tx.events
    for flowfile in flowfiles:
        claim = flowfile.content_claim
        if claim is not None:
            released[claim.resource] += 1
        events.append(
            EventRow(
                time_ms=None,
                event_type=_DROP,
                flowfile_uuid=flowfile.id,
                parent_uuids=(),
                child_uuids=(),
                component_id=queue.id,
                component_type=COMPONENT_TYPE,
                attributes_before=flowfile.attributes,
                attributes_after=flowfile.attributes,
                content_before=claim,
                content_after=claim,
                transit_uri=None,
                details=details,
                relationship=None,
                size=flowfile.size,
            )
        )
    tx.claim_deltas = {resource: -count for resource, count in released.items()}
    return tx
