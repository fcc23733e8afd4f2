"""The failover planner: which survivor takes a dead node's shards. Pure: heartbeats
and shard ownerships in, a `FailoverPlan` out. No ZooKeeper, no clock (time is an
argument), so the leader's decision is unit-tested and any leader recomputes it.

The score of a survivor (higher is more capable)::

    score = capacity_weight
          × headroom                       mean of thread and CPU headroom, at least 0.05
          × 1 / (1 + queued/QUEUE_UNIT + queued_bytes/BYTES_UNIT)
          × free_disk / (free_disk + DISK_UNIT)
          × 1 / (1 + adopting)

    thread headroom = 1 − active_threads / max_threads
    CPU headroom    = 1 − cpu

* capacity_weight: the operator's size of the node; twice the weight, twice the score.
* headroom: a node with idle threads and CPU takes work sooner. The 0.05 floor keeps
  a saturated node eligible: when every node is busy, the work must still go somewhere.
* queue depth: every QUEUE_UNIT FlowFiles (or BYTES_UNIT bytes) already queued costs
  as much as the node's whole base score once more, so backlog divides the score.
* disk: free_disk / (free_disk + DISK_UNIT) rises towards 1; a node with less than
  `min_free_disk` free is not eligible at all (it would fill up adopting).
* adopting: the shards handed to the survivor that its heartbeat does not show yet
  (`in_flight`: being adopted, or adopted since it last beat), and those this
  decision has just given it. Its heartbeat cannot say what they will cost, and their
  fencing and recovery share its one process.

Spread first: survivors are ranked by how many shards they are adopting (fewest
first), then by score. When a rack's worth of nodes dies at once, each survivor takes
one of their shards before any takes a second, so the adoptions (lease recovery, the
WAL's replay) run side by side in as many processes, and the slowest resumes as soon
as one adoption would. The score alone would not spread them: a node that has just
started reports idle threads and no backlog, and on a busy machine that makes it ten
times as capable as its peers for a moment (the headroom floor against its own
figures), enough to outweigh the 1 / (1 + adopting) factor for three shards. When
there are more shards than survivors, the score decides who takes the second ones.

Longest outage first: of a dead node's shards, those it was still adopting (state
ADOPTING: their outage began with an earlier death) are placed first, then its own
shard (the one named after it), then the shards it had adopted, in name order; each
on the best survivor left. Its own shard held its sources, their positions (a Kafka
consumer's partitions wait for its adoption) and the newest intake; a shard it had
adopted runs no source and holds only what was left to drain. Placing in name order
alone put its own shard second whenever an older shard's name sorted before it (a
node's earlier incarnation's, `n1-65` before `n1-68`), on the second-best survivor,
and a shard whose adopter died mid-adoption behind the adopter's own.

Ties are broken deterministically: fewer queued FlowFiles first, then the
incarnation id in string order. Every leader therefore picks the same survivor from
the same heartbeats.

Policies:

* `whole`: each shard goes, whole, to the best survivor. With several shards to move,
  a survivor's queue figure is raised by the shard it was just given before the next
  pick (a "virtual load"), so two shards spread over two equal survivors.
* `divvy`: each shard is split over up to `max_slices` survivors in proportion to
  their scores, as hash ranges of [0, 2**32) over crc32 of the FlowFile id (swap
  files: of the swap location, so a swap file moves whole and is never loaded to be
  split). See `ownership.split` and `adoption` for how the split keeps exactly-once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from .heartbeat import Heartbeat, QueueLoad
from .ownership import HASH_SPACE, ShardOwnership, ShardState
from .plans import FailoverPlan, Move, Slice

QUEUE_UNIT = 10_000
BYTES_UNIT = 1 << 30
DISK_UNIT = 10 << 30
MIN_FREE_DISK = 256 << 20
HEADROOM_FLOOR = 0.05
POLICIES = ("whole", "divvy")
DEFAULT_POLICY = "whole"


@dataclass(frozen=True)
class Candidate:
    incarnation: str
    score: float
    queued: int


def score(beat: Heartbeat, *, min_free_disk: int = MIN_FREE_DISK, adopting: int = 0) -> float:
    """The survivor's capability, as documented above; 0.0 means not eligible."""
    if beat.free_disk < min_free_disk or beat.capacity_weight <= 0:
        return 0.0
    thread_headroom = 1.0 - min(1.0, beat.active_threads / max(beat.max_threads, 1))
    cpu_headroom = 1.0 - min(1.0, max(0.0, beat.cpu))
    headroom = max(HEADROOM_FLOOR, (thread_headroom + cpu_headroom) / 2)
    backlog = 1.0 / (1.0 + beat.queued_count / QUEUE_UNIT + beat.queued_bytes / BYTES_UNIT)
    disk = beat.free_disk / (beat.free_disk + DISK_UNIT)
    return beat.capacity_weight * headroom * backlog * disk / (1 + adopting)


def rank(
    beats: list[Heartbeat],
    *,
    exclude: Collection[str] = frozenset(),
    min_free_disk: int = MIN_FREE_DISK,
    adopting: Mapping[str, int] | None = None,
) -> list[Candidate]:
    """Eligible survivors, best first: fewest shards being adopted, then the highest
    score, ties broken deterministically. `adopting`: incarnation -> shards it is
    adopting that its heartbeat does not show."""
    adopting = adopting or {}
    candidates = [
        Candidate(
            beat.incarnation,
            score(beat, min_free_disk=min_free_disk, adopting=adopting.get(beat.incarnation, 0)),
            beat.queued_count,
        )
        for beat in beats
        if beat.incarnation not in exclude
    ]
    candidates = [c for c in candidates if c.score > 0.0]
    return sorted(candidates, key=lambda c: (adopting.get(c.incarnation, 0), -c.score, c.queued, c.incarnation))


def shard_load(shard: ShardOwnership, last_beat: Heartbeat | None) -> QueueLoad:
    """What a shard probably holds: its dead owner's last reported queues split evenly
    over the shards it owned (heartbeats give no per-shard figure)."""
    if last_beat is None or not last_beat.owned_shards:
        return QueueLoad(0, 0)
    parts = len(last_beat.owned_shards)
    return QueueLoad(last_beat.queued_count // parts, last_beat.queued_bytes // parts)


def in_flight(shards: Iterable[ShardOwnership], live: Mapping[str, Heartbeat]) -> dict[str, int]:
    """incarnation -> the shards handed to it that its heartbeat does not show yet: being
    adopted (ADOPTING), or adopted (DRAINING) since it last beat."""
    out: dict[str, int] = {}
    for shard in shards:
        beat = live.get(shard.owner or "")
        if beat is None or shard.state not in (ShardState.ADOPTING, ShardState.DRAINING):
            continue
        if shard.state is ShardState.ADOPTING or shard.shard not in beat.owned_shards:
            out[beat.incarnation] = out.get(beat.incarnation, 0) + 1
    return out


def plan_failover(
    dead: str,
    shards: list[ShardOwnership],
    survivors: list[Heartbeat],
    *,
    plan_id: str,
    leader: str,
    at: float,
    policy: str = "whole",
    last_beat: Heartbeat | None = None,
    max_slices: int = 3,
    min_free_disk: int = MIN_FREE_DISK,
    adopting: dict[str, int] | None = None,
) -> FailoverPlan:
    """The plan for the shards `dead` owned. A shard already moved or retired is not
    in it. Survivors with no eligible score leave the plan with no move for a shard;
    the leader plans it again when a survivor becomes eligible. `adopting`
    (`in_flight`): what each survivor is adopting already; the shards this plan gives
    are added to it, so that a caller planning several deaths in turn spreads them."""
    if policy not in POLICIES:
        raise ValueError(f"unknown failover policy {policy!r}; expected one of {POLICIES}")
    beats = {beat.incarnation: beat for beat in survivors if beat.incarnation != dead}
    adopting = {} if adopting is None else adopting
    moves: list[Move] = []
    for shard in sorted(shards, key=lambda s: (s.state is not ShardState.ADOPTING, s.shard != dead, s.shard)):
        if shard.owner != dead or shard.state in (ShardState.RETIRED, ShardState.SPLIT):
            continue
        ranked = rank(list(beats.values()), min_free_disk=min_free_disk, adopting=adopting)
        if not ranked:
            continue
        load = shard_load(shard, last_beat)
        # A divvy child is never split again: its hash range moves whole.
        if policy == "divvy" and shard.source is None and len(ranked) > 1:
            chosen = ranked[:max_slices]
            slices = divide(shard.shard, shard.epoch + 1, chosen)
            moves.append(Move(shard.shard, dead, shard.epoch, None, tuple(slices)))
            for s in slices:
                fraction = (s.high - s.low) / HASH_SPACE
                beats[s.owner] = _with_load(beats[s.owner], int(load.count * fraction), int(load.bytes * fraction))
                adopting[s.owner] = adopting.get(s.owner, 0) + 1
        else:
            best = ranked[0].incarnation
            moves.append(Move(shard.shard, dead, shard.epoch, best, ()))
            beats[best] = _with_load(beats[best], load.count, load.bytes)
            adopting[best] = adopting.get(best, 0) + 1
    return FailoverPlan(
        plan_id=plan_id,
        dead=dead,
        leader=leader,
        created_at=at,
        policy=policy,
        moves=tuple(moves),
        last_seen_at=None if last_beat is None else last_beat.sent_at,
    )


def divide(shard: str, new_epoch: int, chosen: list[Candidate]) -> list[Slice]:
    """Hash ranges proportional to score, covering [0, HASH_SPACE) exactly. Child
    shard ids are `<shard>.e<epoch>s<i>`: unique, since the parent's epoch only grows."""
    total = sum(c.score for c in chosen)
    slices, low = [], 0
    for index, candidate in enumerate(chosen):
        high = HASH_SPACE if index == len(chosen) - 1 else low + int(HASH_SPACE * candidate.score / total)
        if high > low:
            slices.append(Slice(f"{shard}.e{new_epoch}s{index}", candidate.incarnation, low, high))
        low = high
    return slices


def _with_load(beat: Heartbeat, count: int, size: int) -> Heartbeat:
    queues = dict(beat.queues)
    previous = queues.get("(planned)", QueueLoad())
    # At least one FlowFile per move, so equal survivors alternate even for empty shards.
    queues["(planned)"] = QueueLoad(previous.count + max(count, 1), previous.bytes + size)
    return replace(beat, queues=queues)
