"""An incarnation: one run of one node, named `<node>-<epoch>`.

The epoch comes from a ZooKeeper counter (kazoo's `Counter`, a versioned
read-modify-write), so every start of every node gets a number no earlier start
had. A process that lost its session never becomes that incarnation again: it
starts a new one, with a new home shard (design step 1 and step 6).
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
    def parse(incarnation_id: str) -> "Incarnation":
        node, _, epoch = incarnation_id.rpartition("-")
        if not node or not epoch.isdigit():
            raise ValueError(f"not an incarnation id: {incarnation_id!r} (expected <node>-<epoch>)")
        return Incarnation(node, int(epoch))


def new_incarnation(client, layout, node: str) -> Incarnation:
    """Draw the next start epoch from `counters/incarnation` for `node`."""
    if not node or "/" in node:
        raise ValueError(f"a node name is one non-empty path segment, not {node!r}")
    counter = client.Counter(layout.incarnation_counter)
    counter += 1
    return Incarnation(node, int(counter.post_value))
