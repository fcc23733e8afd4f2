"""What an adopter does after an attempt to adopt a shard failed: a pure decision.

An attempt fences the shard (`failover.fencing`), reads its flow, recovers its WAL
and its queues, then marks it adopted. It fails in one of three kinds of way, which
the failover layer tells apart by the error (`failover.adoption.failure_kind`):

* TRANSIENT: HDFS or ZooKeeper trouble (unavailable, timed out, a lease not yet
  recovered, a lost compare-and-set race). The same attempt succeeds once the
  service is back: tried again every `RETRY_INTERVAL`, for as long as it takes. The
  shard stays ADOPTING meanwhile, as it must: nothing of it can be read.
* PERMANENT: the shard's files are readable and say no. Its WAL is damaged in a way no
  crash explains (it refuses, so that no acknowledged FlowFile is lost silently), its
  snapshot is corrupt, a file is not what a WAL writes, or this node's flow cannot hold
  its FlowFiles (a queue it lacks, a processor type it cannot run). Trying again
  changes nothing: the shard is HELD at once, with the reason, and left as it is.
* UNKNOWN: anything else (a bug, an error the classification does not know). Tried
  again like a transient failure, until the shard has been ADOPTING for `bound`
  seconds (the lease-recovery bound: what the fence may take on its own), then HELD.

So no shard stays ADOPTING past `bound` plus one retry interval and one attempt,
except while HDFS or ZooKeeper cannot serve it. A HELD shard is tried again after
`recheck_delay` (an operator may have repaired it meanwhile), doubling up to
`RECHECK_MAX`: each such attempt that fails schedules the next, and holds the shard
again with what it found, so that the shard's record says why it is held now (a
transient failure leaves the reason: that attempt could not read the shard); the
one that succeeds marks the shard adopted.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

RETRY_INTERVAL = 1.0  # seconds between two attempts at a shard still ADOPTING
RECHECK_FIRST = 30.0  # seconds from holding a shard to the first new attempt at it
RECHECK_MAX = 600.0  # the longest wait between two attempts at a HELD shard


class FailureKind(str, enum.Enum):
    TRANSIENT = "transient"
    PERMANENT = "permanent"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class RetryLater:
    """Try again in `after` seconds; the shard's state does not change."""

    after: float


@dataclass(frozen=True)
class HoldShard:
    """Mark the shard HELD with `reason` (its history and the plan's notes say it),
    then try it again in `after` seconds."""

    reason: str
    after: float


def recheck_delay(rechecks: int, *, first: float = RECHECK_FIRST, longest: float = RECHECK_MAX) -> float:
    """The wait before the next attempt at a HELD shard, after `rechecks` attempts since it was held."""
    return min(longest, first * float(2 ** min(rechecks, 32)))


def after_failure(
    kind: FailureKind,
    error: str,
    *,
    held: bool,
    adopting_for: float,
    bound: float,
    rechecks: int = 0,
    retry_interval: float = RETRY_INTERVAL,
    recheck_first: float = RECHECK_FIRST,
) -> RetryLater | HoldShard:
    """What to do after an attempt failed with `error` (one line) of `kind`.

    `held`: the shard was HELD already (this was a recheck, the `rechecks`-th);
    `adopting_for`: seconds since this adopter first tried it at this epoch;
    `bound`: the lease-recovery bound (the fence's timeout)."""
    if held:
        after = recheck_delay(rechecks, first=recheck_first)
        if kind is FailureKind.TRANSIENT:
            return RetryLater(after)
        return HoldShard(error, after)  # `ownership.hold` writes nothing when the reason is the same
    if kind is FailureKind.TRANSIENT:
        return RetryLater(retry_interval)
    if kind is FailureKind.PERMANENT:
        return HoldShard(error, recheck_first)
    if adopting_for < bound:
        return RetryLater(retry_interval)
    return HoldShard(
        f"{error} (still failing after {adopting_for:.0f}s of attempts, past the lease-recovery bound of {bound:.0f}s)",
        recheck_first,
    )
