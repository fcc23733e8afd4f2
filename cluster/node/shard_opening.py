"""Opening a shard for a node to run: one sequence for the standalone node's shard and
for every shard a clustered node runs, its own or adopted. What differs is given: the
shard's files (`flow.shard.ShardFiles`: storage, directory, epoch, how swap locations
move), whether the shard is foreign, and the node's own steps for content and
provenance.

1. The swap store and the WAL over the shard's files, not read yet. The node is told
   (`opened`) before anything is read, so that a stop or a death during recovery
   finds the WAL to close or abandon.
2. Recovery: the WAL replayed, the queues rebuilt, swapped FlowFiles registered from
   their swap files' summaries without being loaded (`QueueShard.recover`). The
   checkpoint the WAL takes before new writes (on HDFS, at every recovery: new
   journals, since HDFS does not reopen a file for append) runs beside the rest of
   this step and the next two, which need no WAL write (one that does waits for it);
   the shard is returned once it is done.
3. The node's content told what the shard holds (`content`): the standalone node
   recovers its content repository from the live claims; a clustered node makes an
   adopted shard's content readable ahead of its first reads.
4. The provenance outbox reconciled into the node's provenance (`provenance`, asked
   for only now, after the content: the standalone node opens it here). A home
   shard's outbox adds the events a crash kept from provenance; a foreign shard's
   adds every event, since its owner registered them, if at all, in its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from flow.provenance_outbox import reconcile
from flow.queue import FlowFileQueue
from flow.shard import QueueShard, ShardFiles, ShardRecovery
from flow.unreadable_swap import RetryBackoff


@dataclass
class OpenedShard:
    shard: QueueShard
    recovery: ShardRecovery
    content: object  # what the node's content step returned
    provenance_replayed: int


def open_node_shard(
    files: ShardFiles,
    queues: Iterable[FlowFileQueue],
    *,
    foreign: bool,
    opened: Callable[[QueueShard], None],
    content: Callable[[QueueShard, ShardRecovery], object],
    provenance: Callable[[], object],
    retry_backoff: RetryBackoff | None = None,
) -> OpenedShard:
    """Open and recover the shard in `files` with `queues`, in the order above."""
    shard = files.open(queues, retry_backoff)
    opened(shard)
    recovery = shard.recover(checkpoint_beside=True)
    recovered = content(shard, recovery)
    replayed = reconcile(recovery.outbox, provenance(), foreign=foreign)
    if shard.wal is not None:
        shard.wal.writable()
    return OpenedShard(shard, recovery, recovered, replayed)
