"""Kafka in and out: ConsumeKafka and PublishKafka, each exactly once.

connection  the brokers' address and security settings both processors share
positions   ConsumeKafka's state layout: the next offset of each partition
consume     ConsumeKafka: the positions commit in the WAL with the FlowFiles
ownership   which partitions a shard consumes: all on a standalone node; a cluster's
            node service says
"""

from __future__ import annotations

from .consume import ConsumeKafka
from .publish import PublishKafka

__all__ = ["ConsumeKafka", "PublishKafka"]
