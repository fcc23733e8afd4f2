"""`CommitGate`: the node's production gate on every durable commit.

A clustered node refuses writes to a shard it may no longer own (its ZooKeeper session
was lost, the shard was fenced) and learns when a commit got through. The committer
consults it at fixed points of every commit (`flow.commit`), and the session hands it
to a processor that asks before a side effect outside the repositories
(`ProcessSession.check_admitted`): both are given the same gate where the engine
builds them. Not a fault seam (`flow.commit.CommitHooks`): it runs in production.
"""

from __future__ import annotations

from typing import Protocol


class CommitGate(Protocol):
    """The node's production gate on every durable commit (a clustered node refuses
    writes to a shard it may no longer own, and learns when a commit got through).
    Not a fault seam: it is consulted on every commit, before the seams."""

    def admit(self, component_id: str) -> None:
        """Raise to refuse the commit; called before the content sync and again before the WAL write."""

    def committed(self, component_id: str) -> None:
        """The WAL holds the transaction (called where the `after_wal` seam is); should not
        raise: if it does, that is logged and the commit stands, as the WAL holds it."""

    def failed(self, component_id: str, error: BaseException) -> None:
        """The WAL did not acknowledge the commit (nothing was written, or its outcome is
        unknown) and the session rolls back; must not raise (it is logged if it does)."""
