"""`NodeControl`: the one narrow way into a running node, for the CLI and the admin API.

Callers see what a node runs and may ask it to hand its work over, without reaching
into its members, runtimes or locks:

    control = node.control()               # StandaloneNode or ClusteredNode
    control.status()                        # who it is, and a line per shard
    control.shards()                        # shard -> epoch, home, recovery figures
    control.queues()                        # shard -> queue -> count, bytes, swapped, back-pressure
    control.processors()                    # shard -> processor -> state, tasks, last error
    control.provenance                      # the node's ProvenanceRepository (query, lineage, get)
    control.offload()                       # hand every shard to the other nodes, and stop

Every figure is a copy taken when asked (plain dicts of numbers and strings): holding
one blocks nothing in the node.
"""

from __future__ import annotations

from typing import Protocol

from ..errors import ClusterError


class OffloadRefused(ClusterError):
    """The node cannot hand its work over (a standalone node has nobody to give it to)."""


class ControlledNode(Protocol):
    """What a node gives its `NodeControl`."""

    def identity(self) -> dict: ...                        # node, kind, incarnation, ...

    def shard_statuses(self) -> dict[str, dict]: ...       # shard -> FlowRuntime/engine status

    def provenance_repository(self): ...

    def offload(self) -> None: ...


class NodeControl:
    def __init__(self, node: ControlledNode):
        self._node = node

    def status(self) -> dict:
        shards = self._node.shard_statuses()
        return {**self._node.identity(), "shards": {
            shard: {"epoch": status.get("epoch"), "home": status.get("home", True),
                    "queued": sum(q.get("count", 0) for q in status.get("queues", {}).values()),
                    "queued_bytes": sum(q.get("size", 0) for q in status.get("queues", {}).values()),
                    "running_tasks": sum(p.get("running", 0) for p in status.get("processors", {}).values())}
            for shard, status in shards.items()}}

    def shards(self) -> dict[str, dict]:
        return {shard: {"epoch": status.get("epoch"), "home": status.get("home", True),
                        "recovery": dict(status.get("recovery", {}))}
                for shard, status in self._node.shard_statuses().items()}

    def queues(self) -> dict[str, dict[str, dict]]:
        return {shard: {queue: dict(figures) for queue, figures in status.get("queues", {}).items()}
                for shard, status in self._node.shard_statuses().items()}

    def processors(self) -> dict[str, dict[str, dict]]:
        return {shard: {processor: dict(figures) for processor, figures in status.get("processors", {}).items()}
                for shard, status in self._node.shard_statuses().items()}

    @property
    def provenance(self):
        return self._node.provenance_repository()

    def offload(self) -> None:
        """Hand every shard to the other nodes (they adopt them as after a death, but
        at once), then stop. `OffloadRefused` when the node has nobody to give them to."""
        self._node.offload()
