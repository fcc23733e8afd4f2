"""Which Kafka partitions a shard consumes: the seam between ConsumeKafka and the node.

On a standalone node there is one shard and it consumes every partition of its topics.
In a cluster every node runs its home shard's ConsumeKafka, so each partition must
belong to exactly one shard, or every node would take every record once: the cluster
registers the node service `PARTITIONS_SERVICE`, and ConsumeKafka asks it for the
partitions of its shard. A node with no such service is standalone.

The service is an object with `partitions(processor_id, shard_id, found)`: of the
partitions `found` in the brokers' metadata, those this shard consumes now. It may
raise `flow.errors.ServiceError` when it cannot say; the consumer then takes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .positions import TopicPartition

PARTITIONS_SERVICE = "kafka.partitions"


class PartitionOwnership(Protocol):
    def partitions(
        self, processor_id: str, shard_id: str, found: Sequence[TopicPartition]
    ) -> Sequence[TopicPartition]: ...


class NoClusterAssignment:
    """A cluster's ownership before partitions are assigned to shards: it refuses, so
    that no node of a cluster consumes a partition another node consumes too."""

    def partitions(self, processor_id: str, shard_id: str, found: Sequence[TopicPartition]) -> Sequence[TopicPartition]:
        from ...errors import ServiceError

        raise ServiceError(
            f"{processor_id}: ConsumeKafka runs on a standalone node in this release; a cluster does not yet "
            f"assign Kafka partitions to its shards, so shard {shard_id} consumes nothing"
        )
