"""What a node measured, as copies taken when asked (`NodeControl.measures()`).

The figures are counted where the work is done, with `repositories.instruments`: the
committer (commits by outcome, their durations), the WAL (each journal sync), the
shard (swap files written and read back), the HDFS storage (each call, by
operation), the failover code (`cluster.failover.instruments`). A node gathers
their snapshots here; the admin API publishes them (`cluster.admin.measures`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from repositories.instruments import HistogramSnapshot

from ..core.guard import Phase
from ..failover.instruments import FailoverMeasures

# The session states the admin API publishes, one gauge each. The guard's EXPIRED is
# LOST: the session is over, whether ZooKeeper said so or the guard's own timer did.
SESSION_STATES = {Phase.CONNECTED: "CONNECTED", Phase.SUSPENDED: "SUSPENDED", Phase.EXPIRED: "LOST"}


@dataclass(frozen=True)
class ShardMeasures:
    commits: dict[str, int]  # outcome (flow.commit: committed, refused, failed, unknown) -> commits
    commit_seconds: HistogramSnapshot  # each commit that stood
    wal_sync_seconds: HistogramSnapshot  # each journal sync (one per group commit), failed ones too
    swap_outs: int  # swap files written
    swap_ins: int  # swap files read back


@dataclass(frozen=True)
class NodeMeasures:
    shards: dict[str, ShardMeasures]
    storage_calls: dict[str, HistogramSnapshot] = field(default_factory=dict)  # HDFS operation -> seconds
    failover: FailoverMeasures | None = None  # a clustered node's
    session_state: str | None = None  # a clustered node's: CONNECTED, SUSPENDED or LOST


def session_state(member) -> str | None:
    """The state of a `ClusterMember`'s ZooKeeper session, as its guard sees it; None
    when there is no session: no member yet, or one that ended without losing its
    session (it left on purpose, an offload, or was told it was dead). A member whose
    session was lost stays LOST until the next incarnation replaces it."""
    guard = member.guard if member is not None else None
    if guard is None:
        return None
    phase = guard.state.phase
    if member.dead.is_set() and phase is not Phase.EXPIRED:
        return None
    return SESSION_STATES[phase]


def shard_measures(engine) -> ShardMeasures:
    """The measures of the shard a `flow.engine.TraditionalEngine` runs."""
    committer, shard = engine.committer, engine.shard
    return ShardMeasures(
        commits=committer.outcomes.snapshot(),
        commit_seconds=committer.durations.snapshot(),
        wal_sync_seconds=shard.wal.sync_durations.snapshot(),
        swap_outs=shard.swap_outs.snapshot(),
        swap_ins=shard.swap_ins.snapshot(),
    )
