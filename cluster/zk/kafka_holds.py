"""`kafka/<processor>/<topic>:<partition>`: which shard consumes each Kafka partition.

    /custody/<cluster>/kafka/<processor id>/<topic>:<partition>
        persistent, JSON `core.kafka_holds.PartitionHold`, changed by compare-and-set

The decisions are `cluster.core.kafka_holds`'; this is their storage. The parents are
created by the first hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.kafka_holds import PartitionHold
from .kazoo_errors import translates_kazoo
from .znodes import VersionedZnodes

if TYPE_CHECKING:
    from kazoo.client import KazooClient

KAFKA = "kafka"


@translates_kazoo
class KafkaHolds:
    """The holds of one ConsumeKafka processor's partitions."""

    def __init__(self, client: KazooClient, layout, processor_id: str):
        parent = f"{layout.root}/{KAFKA}/{processor_id}"
        self.znodes: VersionedZnodes[PartitionHold] = VersionedZnodes(
            client,
            "Kafka partition hold",
            parent,
            lambda name: f"{parent}/{name}",
            PartitionHold.from_json,
            PartitionHold.to_json,
            lambda hold: False,
        )

    def read(self, name: str) -> tuple[PartitionHold, int] | None:
        return self.znodes.read(name)

    def all(self) -> dict[str, tuple[PartitionHold, int]]:
        return self.znodes.all()

    def create(self, name: str, hold: PartitionHold) -> bool:
        return self.znodes.create(name, hold)

    def compare_and_set(self, name: str, version: int, hold: PartitionHold) -> int:
        """Raises `OwnershipConflict` when the hold changed since `version` was read."""
        return self.znodes.compare_and_set(name, version, hold)
