"""Which Kafka partitions a shard consumes: the seam between ConsumeKafka and the node.

On a standalone node there is one shard and it consumes every partition of its topics.
In a cluster every node runs its home shard's ConsumeKafka, so each partition must
belong to exactly one shard, or every node would take every record once: the cluster
registers the node service `PARTITIONS_SERVICE` (`cluster.node.kafka_ownership`), and
ConsumeKafka asks it which partitions its shard reads and from where. A node with no
such service is standalone.

`partitions(processor_id, shard_id, found, committed, takes)`: of the partitions
`found` in the brokers' metadata, those the shard holds now, each with the offset it
goes on reading from (None: its reset point) and its take (a count that grows each
time a shard takes the partition: a committed position is valid only with its take).
`committed` and `takes` are the shard's committed positions and their takes. It is
called between two of the consumer's sessions (the committed positions are then where
the consumer stands), and releases what the shard no longer holds. It may raise
`flow.errors.ServiceError` when it cannot say; the consumer then takes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .positions import TopicPartition

PARTITIONS_SERVICE = "kafka.partitions"
OWNERSHIP_REFRESH_S = 1.0  # how often a clustered consumer asks again (takes and releases)


class PartitionOwnership(Protocol):
    def partitions(
        self,
        processor_id: str,
        shard_id: str,
        found: Sequence[TopicPartition],
        committed: Mapping[TopicPartition, int],
        takes: Mapping[TopicPartition, int],
    ) -> Mapping[TopicPartition, tuple[int | None, int]]: ...
