"""The errors `NodeControl` answers with: what the caller asked for that the node does
not know (`NotFound`), what its state refuses (`Conflict`), what did not answer
(`Unavailable`), what it sent that cannot be used (`Invalid`). The admin API maps
them to 404, 409, 503 and 422."""

from __future__ import annotations

from ..errors import ClusterError


class NotFound(ClusterError):
    """An id the node does not know (shard, queue, processor, FlowFile, event)."""


class Invalid(ClusterError):
    """What the caller sent cannot be used (a flow that does not parse); the message says why."""


class Conflict(ClusterError):
    """The node's state refuses the call (offload a standalone node, connect a running one)."""


class Unavailable(ClusterError):
    """ZooKeeper or storage did not answer; the message says which and how long it waited."""


class OffloadRefused(Conflict):
    """The node cannot hand its work over (a standalone node has nobody to give it to)."""
