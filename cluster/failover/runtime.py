"""What the cluster core needs from the flow engine, for each shard a node runs.

The cluster core decides *which* shards a node runs and *when* it must stop; the
flow engine runs them. The wiring of a clustered node passes a `RuntimeFactory`; the
core calls it with a `ShardHandle` once the shard's WAL is fenced (if adopted) and
recovered, and drives the `ShardRuntime` it returns.

Contract of a `ShardRuntime` (the flow side's `flow.shard.QueueShard` plus the
processors that run its queues):

* `recover()`: open the shard's files (`handle.files`: its HDFS directory, at the
  shard's epoch; `handle.open_wal()` for its WAL alone) and rebuild the queues from
  them, registering swap files from their summaries without loading them
  (`cluster.node.shard_opening`). Swap locations in the WAL are full paths that may
  name an older directory of the shard (before fencing renamed it): the WAL moves
  each through `handle.relocate(location)` as it recovers. Raising
  here aborts this adoption; the core stops the runtime and retries later (fencing
  is idempotent). Nothing may be processed yet.
* `start()`: run the queues with the node's flow, committing every session to that
  WAL and reading content from HDFS. Before each commit, call
  `handle.gate.check()`: it raises `WorkGateClosed` or `SessionExpiredError`, and
  the session must then roll back. A home shard (`handle.home`) takes new input; an
  adopted shard only drains. The core calls `start()` only after the ownership
  compare-and-set that marks the shard adopted succeeded.
* after a commit fails: call `handle.verify_ownership()`. `FencedError` means this
  node lost the shard (a fenced zombie): stop and never write again. Otherwise it is
  a storage outage: roll the session back and retry; the WAL refuses every update
  until it has rolled after the failed write (`repositories.flowfile`), which it
  tries at each update, so the retries go through once storage is back.
* `pause()` / `resume()`: the work gate closed (start no new session) / opened.
* `abort_open_sessions()`: roll back every session in flight, now.
* `stop()`: abort everything and close the WAL; idempotent; after it the runtime
  never writes again. Called on LOST, on "you are dead", and after retirement.
* `abandon(reason)` (optional): the incarnation died. At once, on the thread that
  decided it, with no storage call and no wait: shut the gate (nothing is admitted or
  acknowledged from then on) and abandon the WAL (`WriteAheadLog.abandon`: no sync,
  no close; the adopter recovers its leases). The `stop()` that follows must then end
  within a bounded time, whatever the storage does (it closes nothing of the WAL). A
  runtime without it is only stopped (within the member's death deadline, or left to
  end on its own).
* `drained()`: True when an adopted shard holds no FlowFile (queues and swap).
* `holds_hand_over_state()`: True when the shard holds state its first owner's node
  takes over in its next incarnation (what its sources took on their machine): its
  directory is then kept at retirement, for that node to read and delete.
* `load()` -> `{queue: QueueLoad}` and `active_threads()`, for the heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from flow.shard import OUTBOX_QUEUE, STATE_QUEUE, ShardFiles
from repositories.flowfile import (
    DEFAULT_CHECKPOINT_INTERVAL,
    DEFAULT_PARTITIONS,
    FlowFileSerDe,
    WriteAheadLog,
    list_wal_files,
    read_state,
)

from ..core.flows import FlowSnapshot, UnreadableFlow
from ..core.heartbeat import QueueLoad
from ..core.layout import ClusterLayout
from ..core.ownership import ShardOwnership


@dataclass(frozen=True)
class PreviousShard:
    """A shard of an earlier incarnation of this node (for its sources' hand-over):
    `directory` is where its data is now, readable once `ready` (fenced, so that every
    file is closed, or retired); `retired` once nobody runs it any more."""

    shard: str
    directory: str | None
    ready: bool
    retired: bool


@dataclass
class WalOptions:
    """How the WAL of every shard a member runs is written (`flow.shard.ShardFiles`)."""

    partitions: int = DEFAULT_PARTITIONS
    checkpoint_interval: float | None = DEFAULT_CHECKPOINT_INTERVAL
    hooks: object = None


def _nothing() -> None:
    return None


def _forget_nothing(previous: PreviousShard) -> None:
    return None


@dataclass(frozen=True)
class ShardCallbacks:
    """What a shard's runtime asks the member that runs it, given to the handle as it is
    made. A handle made outside a member (a tool, a test) gets the defaults: no gate,
    ownership never checked, no earlier shards."""

    gate: object = None  # the node's SessionGuard: `check()` before every commit
    # After a failed commit: raises FencedError if this node no longer owns the shard
    # (stop for good); returns if it does (a storage outage: roll back, retry later).
    verify_ownership: Callable[[], object] = _nothing
    # A home shard: the shards of this node's earlier incarnations whose sources' state
    # it takes over (`PreviousShard`), and how to delete one's directory once it did.
    previous_shards: Callable[[], list[PreviousShard]] | None = None
    forget_previous: Callable[[PreviousShard], None] = _forget_nothing
    # An adopted shard: say that it first delivered here (its failover's resume time).
    record_resumed: Callable[[], None] = _nothing


# A handle made outside a member (a tool, a test): `ShardCallbacks`' defaults.
NO_CALLBACKS = ShardCallbacks()


@dataclass
class ShardHandle:
    """One shard as its runtime sees it, with everything it asks for given when the
    handle is made (`callbacks`). Only `ownership` changes afterwards, and only by
    `marked_adopted`."""

    ownership: ShardOwnership
    directory: str  # the shard's HDFS directory now (fenced, when adopted)
    layout: ClusterLayout
    storage: object
    home: bool
    wal: WalOptions
    callbacks: ShardCallbacks
    notes: list[str] = field(default_factory=list)
    # What the adopter must tell the operator about this adoption (a flow.json it could
    # not use, say): the member adds them to the failover plan's notes once adopted.
    plan_notes: list[str] = field(default_factory=list)

    def marked_adopted(self, ownership: ShardOwnership) -> None:
        """The compare-and-set that marked the shard adopted returned `ownership`."""
        self.ownership = ownership

    @property
    def files(self) -> ShardFiles:
        """The shard's files at its epoch, for `cluster.node.shard_opening`. The WAL moves
        each swap location through `relocate` as it recovers; the directory is never
        created (a zombie must not bring back one that fencing renamed)."""
        return ShardFiles(
            self.shard,
            self.storage,
            self.directory,
            epoch=self.epoch,
            partitions=self.wal.partitions,
            checkpoint_interval=self.wal.checkpoint_interval,
            wal_hooks=self.wal.hooks,
            relocate_swap=self.relocate,
            create=False,
        )

    def open_wal(self) -> WriteAheadLog:
        """A new, unrecovered WriteAheadLog of the shard, at `epoch` (`files`)."""
        return self.files.open_wal()

    def relocate(self, location: str) -> str:
        """A path recorded under any earlier name of the shard's directory (the
        original, or an older `-fenced-<e>`), as it is now under `directory`."""
        below = self.layout.path_in_shard(location, self.shard)
        return location if below is None else f"{self.directory}/{below}"

    @property
    def gate(self):
        return self.callbacks.gate

    @property
    def verify_ownership(self) -> Callable[[], object]:
        return self.callbacks.verify_ownership

    @property
    def previous_shards(self) -> Callable[[], list[PreviousShard]] | None:
        return self.callbacks.previous_shards

    @property
    def forget_previous(self) -> Callable[[PreviousShard], None]:
        return self.callbacks.forget_previous

    @property
    def record_resumed(self) -> Callable[[], None]:
        return self.callbacks.record_resumed

    @property
    def shard(self) -> str:
        return self.ownership.shard

    @property
    def step(self) -> str | None:
        """The step id of the move that gave this node the shard (None for a home shard)."""
        return self.ownership.step

    @property
    def epoch(self) -> int:
        return self.ownership.epoch

    @property
    def swap_directory(self) -> str:
        return f"{self.directory}/swap"

    def flow_snapshot(self) -> FlowSnapshot | None:
        """The flow the shard was written under, as its first owner stored it; None for a
        shard that holds none (written by a release before shards recorded their flow,
        or whose owner died before it wrote it). `UnreadableFlow` (a ValueError) when it
        is empty, cut short or damaged: an earlier release created it in place, and its
        owner died before the sync (this one renames it into place whole). Read only
        after fencing recovered its lease: a file still open reads short."""
        path = ClusterLayout.flow_file(self.directory)
        if not self.storage.exists(path):
            return None
        try:
            return FlowSnapshot.decode(self.storage.read(path))
        except UnreadableFlow as error:
            raise UnreadableFlow(f"{path}: {error}") from None

    def queued_flowfiles(self) -> int:
        """How many FlowFiles the shard's WAL holds in its queues, live and swapped,
        read without changing anything (no rename, no checkpoint); 0 when it has no WAL
        (its owner died before it wrote any). Records of processor state and of the
        provenance outbox (`flow.shard`'s reserved namespaces) are not FlowFiles. What a
        damaged WAL still holds is counted; opening it refuses."""
        wal = ClusterLayout.wal_directory(self.directory)
        if not self.storage.exists(wal):
            return 0
        state = read_state(self.storage, wal, list_wal_files(self.storage, wal), FlowFileSerDe(), None)
        live = sum(1 for record in state.records.values() if record.queue not in (STATE_QUEUE, OUTBOX_QUEUE))
        return live + sum(swap_file.count for swap_file in state.swap_files.values())


class ShardRuntime(Protocol):
    def recover(self) -> None: ...

    def start(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def abort_open_sessions(self) -> None: ...

    def stop(self) -> None: ...

    def drained(self) -> bool: ...

    def holds_hand_over_state(self) -> bool: ...

    def load(self) -> dict[str, QueueLoad]: ...

    def active_threads(self) -> int: ...


RuntimeFactory = Callable[[ShardHandle], ShardRuntime]
