"""Which shard consumes each Kafka partition, and from where: the decisions, without I/O.

In a cluster each partition a ConsumeKafka reads belongs to one shard at a time, or
every node would take every record. Ownership is a hold in ZooKeeper per processor and
partition (`cluster.zk.kafka_holds`), changed by compare-and-set only:

    {"holder": <shard id> or null, "take": <n>, "offset": <offset> or null}

* A shard **takes** a partition that is free (holder null), or that has no hold yet:
  the hold names it and its take grows by one. It starts at the hold's `offset` (null:
  the consumer's reset point), and its positions, committed in its WAL with the
  FlowFiles (`flow.processors.kafka.positions`), carry that take.
* A shard **releases** a partition the assignment no longer gives it, between two of
  its sessions: the hold is freed with the offset its WAL committed last (the position
  if its take is the hold's; else the hold's own offset, nothing having been
  committed since the take).
* A dead shard cannot release: its **adopter** does, once it has fenced and recovered
  the shard's WAL (so its committed positions are final: a paused old owner can commit
  nothing more), with the same rule. Until then the partition waits, held by the dead
  shard; so a record is taken once, by the shard whose WAL commit holds it.

The assignment (`assign`) spreads the partitions over the live home shards in order,
so that every member computes the same one from the same view; a member whose view
lags only waits for a release or releases a little late: the holds, not the views,
say who reads.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class PartitionHold:
    holder: str | None
    take: int
    offset: int | None

    def to_json(self) -> bytes:
        return json.dumps({"holder": self.holder, "take": self.take, "offset": self.offset}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> PartitionHold:
        body = json.loads(data.decode())
        holder, take, offset = body["holder"], body["take"], body["offset"]
        if holder is not None and not isinstance(holder, str):
            raise ValueError(f"holder {holder!r} is not a shard id")
        counts = (take,) if offset is None else (take, offset)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            raise ValueError(f"take {take!r} or offset {offset!r} is not a count")
        return cls(holder, take, offset)

    def taken_by(self, shard: str) -> PartitionHold:
        return PartitionHold(shard, self.take + 1, self.offset)

    def released(self, offset: int | None) -> PartitionHold:
        return PartitionHold(None, self.take, offset)


FIRST = PartitionHold(None, 0, None)  # a partition no shard has taken yet


def hold_name(topic: str, partition: int) -> str:
    """The znode name of a partition's hold (a topic name never holds ':')."""
    return f"{topic}:{partition}"


def assign(partitions: Iterable[tuple[str, int]], shards: Collection[str]) -> dict[tuple[str, int], str]:
    """Each partition's shard: round robin over the shards and the partitions, both in order."""
    ordered = sorted(shards)
    if not ordered:
        return {}
    return {partition: ordered[index % len(ordered)] for index, partition in enumerate(sorted(partitions))}


def start_of(hold: PartitionHold, committed: int | None, committed_take: int | None) -> int | None:
    """Where the holder of `hold` goes on reading: its committed position when that
    belongs to the hold's take, else the hold's offset (null: the reset point)."""
    if committed is not None and committed_take == hold.take:
        return committed
    return hold.offset
