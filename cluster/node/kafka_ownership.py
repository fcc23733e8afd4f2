"""Kafka partitions in a cluster: the node service ConsumeKafka asks which partitions its
shard reads (`flow.processors.kafka.ownership`), and the release of an adopted shard's.

The decisions and the protocol are `cluster.core.kafka_holds`'; the holds live in
ZooKeeper (`cluster.zk.kafka_holds`). `ClusterPartitions.partitions` runs on a
ConsumeKafka task, between two of its sessions: it releases what the assignment no
longer gives the shard and takes what is free and given. `KafkaHoldRelease` runs once
for each shard a node adopts, after the shard's WAL was fenced and recovered: the dead
owner's holds are freed at its committed positions, so that the live shards the
partitions are assigned to take them over.

Lock plan: none; each call reads and compare-and-sets the holds it decides on, and a
lost race is decided again at the next call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from flow.errors import ServiceError
from flow.processors.kafka import ConsumeKafka
from flow.processors.kafka.positions import KafkaStateError, TopicPartition, unpack, unpack_takes

from ..core.kafka_holds import FIRST, assign, hold_name, start_of
from ..errors import ClusterError, OwnershipConflict, first_line

if TYPE_CHECKING:
    from flow.graph import FlowGraph
    from flow.shard import QueueShard

    from ..zk.store import ClusterStore

log = logging.getLogger(__name__)
RELEASE_RETRY_S = 1.0


class ClusterPartitions:
    """`PartitionOwnership` of a clustered node, over `store()` (a ZooKeeper store)."""

    def __init__(self, store: Callable[[], ClusterStore]):
        self._store = store

    def partitions(
        self,
        processor_id: str,
        shard_id: str,
        found: Sequence[TopicPartition],
        committed: Mapping[TopicPartition, int],
        takes: Mapping[TopicPartition, int],
    ) -> dict[TopicPartition, tuple[int | None, int]]:
        """Of `found`, the partitions the shard holds after this call, each with where it
        goes on reading (None: its reset point) and its take."""
        try:
            store = self._store()
            holds = store.kafka_holds(processor_id)
            mine = {tp for tp, shard in assign(found, store.live_incarnations()).items() if shard == shard_id}
            held: dict[TopicPartition, tuple[int | None, int]] = {}
            for tp in found:
                name = hold_name(*tp)
                entry = holds.read(name)
                hold, version = entry if entry is not None else (FIRST, None)
                try:
                    if hold.holder == shard_id:
                        start = start_of(hold, committed.get(tp), takes.get(tp))
                        if tp in mine:
                            held[tp] = (start, hold.take)
                        else:
                            holds.compare_and_set(name, version, hold.released(start))
                            log.info("%s: shard %s released %s at offset %s", processor_id, shard_id, tp, start)
                    elif hold.holder is None and tp in mine:
                        taken = hold.taken_by(shard_id)
                        if version is None:
                            if not holds.create(name, taken):
                                continue  # another shard created it first: decided at the next call
                        else:
                            holds.compare_and_set(name, version, taken)
                        held[tp] = (taken.offset, taken.take)
                        log.info("%s: shard %s took %s (take %d)", processor_id, shard_id, tp, taken.take)
                except OwnershipConflict:
                    continue  # raced: the next call decides again
            return held
        except ClusterError as error:
            why = first_line(error)
            raise ServiceError(f"{processor_id}: the Kafka partitions' holds cannot be read: {why}") from error

    def release_shard(
        self,
        processor_id: str,
        shard_id: str,
        committed: Mapping[TopicPartition, int],
        takes: Mapping[TopicPartition, int],
    ) -> list[str]:
        """Free every hold of `shard_id` at its committed position (an adopted shard's,
        whose WAL can commit nothing more); the names of those freed."""
        holds = self._store().kafka_holds(processor_id)
        freed = []
        for name, (hold, version) in holds.all().items():
            if hold.holder != shard_id:
                continue
            topic, _, partition = name.rpartition(":")
            tp = TopicPartition(topic, int(partition))
            try:
                holds.compare_and_set(name, version, hold.released(start_of(hold, committed.get(tp), takes.get(tp))))
            except OwnershipConflict:
                continue
            freed.append(name)
        return freed


class KafkaHoldRelease(threading.Thread):
    """Frees an adopted shard's Kafka partitions, once its WAL is recovered (the state is
    final): each ConsumeKafka processor's, tried again every `RELEASE_RETRY_S` while
    ZooKeeper cannot be reached, until done or `stopped`."""

    def __init__(self, graph: FlowGraph, shard: QueueShard, ownership: ClusterPartitions, stopped: threading.Event):
        super().__init__(name=f"kafka-release-{shard.id}", daemon=True)
        self.graph, self.shard, self.ownership, self.stopped = graph, shard, ownership, stopped

    def run(self) -> None:
        consumers = [pid for pid, processor in self.graph.processors.items() if isinstance(processor, ConsumeKafka)]
        for pid in consumers:
            state = self.shard.get_state(pid)
            try:
                committed, takes = unpack(state, pid), unpack_takes(state, pid)
            except KafkaStateError as error:
                log.error("shard %s: its Kafka partitions stay held: %s", self.shard.id, error)
                continue
            while not self.stopped.is_set():
                try:
                    freed = self.ownership.release_shard(pid, self.shard.id, committed, takes)
                except ClusterError as error:
                    log.warning("shard %s: releasing %s's Kafka partitions: %s", self.shard.id, pid, first_line(error))
                    self.stopped.wait(RELEASE_RETRY_S)
                    continue
                if freed:
                    log.info("adopted shard %s: %s's Kafka partitions released: %s", self.shard.id, pid, freed)
                break


def adopted_shard_releases(graph: FlowGraph, services) -> bool:
    """Whether an adopted shard of this flow has Kafka partitions to release."""
    return services is not None and any(isinstance(p, ConsumeKafka) for p in graph.processors.values())
