"""What the cluster core needs from the flow engine, for each shard a node runs.

The cluster core decides *which* shards a node runs and *when* it must stop; the
flow engine runs them. The wiring of a clustered node passes a `RuntimeFactory`; the core calls it with a `ShardHandle` once the shard's WAL is
fenced (if adopted) and recovered, and drives the `ShardRuntime` it returns.

Contract of a `ShardRuntime` (the flow side's `flow.shard.QueueShard` plus the
processors that run its queues):

* `recover()`: open `handle.open_wal()` (a new, not yet recovered WriteAheadLog on
  the shard's HDFS directory, at the shard's epoch) and rebuild the queues from it,
  registering swap files from their summaries without loading them. Swap locations
  in the WAL are full paths that may name an older directory of the shard (before
  fencing renamed it): the WAL `open_wal` returns moves each through
  `handle.relocate(location)` as it recovers. Raising
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

from dataclasses import dataclass, field
from typing import Callable, Protocol

from flow.shard import OUTBOX_QUEUE, STATE_QUEUE
from repositories.flowfile import FlowFileSerDe, list_wal_files, read_state

from ..core.heartbeat import QueueLoad
from ..core.flows import FlowSnapshot, UnreadableFlow
from ..core.layout import FENCED_MARK, ClusterLayout
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
class ShardHandle:
    ownership: ShardOwnership
    directory: str          # the shard's HDFS directory now (fenced, when adopted)
    original_directory: str  # where its first owner created it
    open_wal: Callable[[], object]  # -> a new, unrecovered WriteAheadLog at `epoch`
    storage: object
    home: bool
    gate: object = None     # the node's SessionGuard: `check()` before every commit
    # After a failed commit: raises FencedError if this node no longer owns the shard
    # (stop for good); returns if it does (a storage outage: roll back, retry later).
    verify_ownership: Callable[[], None] = lambda: None
    # A home shard: the shards of this node's earlier incarnations whose sources' state
    # it takes over (`PreviousShard`), and how to delete one's directory once it did.
    previous_shards: Callable[[], list[PreviousShard]] | None = None
    forget_previous: Callable[[PreviousShard], None] = lambda previous: None
    # An adopted shard: say that it first delivered here (its failover's resume time).
    record_resumed: Callable[[], None] = lambda: None
    notes: list[str] = field(default_factory=list)
    # What the adopter must tell the operator about this adoption (a flow.json it could
    # not use, say): the member adds them to the failover plan's notes once adopted.
    plan_notes: list[str] = field(default_factory=list)

    def relocate(self, location: str) -> str:
        """A path recorded under any earlier name of the shard's directory (the
        original, or an older `-fenced-<e>`), as it is now under `directory`."""
        for prefix in (self.original_directory + "/",):
            if location.startswith(prefix):
                return f"{self.directory}/{location[len(prefix):]}"
        marker = self.original_directory + FENCED_MARK
        if location.startswith(marker):
            rest = location[len(marker):]
            epoch, slash, tail = rest.partition("/")
            if epoch.isdigit() and slash:
                return f"{self.directory}/{tail}"
        return location

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
        provenance outbox (`flow.shard`'s reserved namespaces) are not FlowFiles. What a damaged WAL still holds is counted; opening it refuses."""
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
