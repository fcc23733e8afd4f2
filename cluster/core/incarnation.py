"""An incarnation: one run of one node, named `<node>-<epoch>`.

The epoch comes from a ZooKeeper counter (`cluster.zk.membership.new_incarnation`),
so every start of every node gets a number no earlier start had. A process that
lost its session never becomes that incarnation again: it starts a new one, with a
new home shard (the failover protocol's first and last steps: start, and return).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Incarnation:
    node: str
    epoch: int

    @property
    def id(self) -> str:
        return f"{self.node}-{self.epoch}"

    def __str__(self) -> str:
        return self.id

    @staticmethod
    def parse(incarnation_id: str) -> Incarnation:
        node, _, epoch = incarnation_id.rpartition("-")
        if not node or not epoch.isdigit():
            raise ValueError(f"not an incarnation id: {incarnation_id!r} (expected <node>-<epoch>)")
        return Incarnation(node, int(epoch))
