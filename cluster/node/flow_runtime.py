"""`FlowRuntime`: the `ShardRuntime` of a clustered node, one flow engine per shard.

Each shard the node runs (its home shard, and every shard it adopted) gets its own
`FlowGraph` (queues and processor instances), its own `QueueShard` over the shard's
WAL and swap directory on HDFS, and its own `TraditionalEngine`. The node's content
repository (`content`) and provenance repository are shared by all of them.

* A home shard runs the whole flow. An adopted shard runs it without its sources
  (processors with no incoming connection): it drains what its dead owner left,
  takes no new input, and is retired when empty.
* Processors an operator stopped in the shard's node (`cluster.core.run_states`) are
  not scheduled when the engine is made (home or adopted), and a change of them,
  made through any node, is applied while it runs (`run_states.RunStateFollower`).
* The runtime is the engine's commit gate (`flow.commit.CommitGate`): every commit
  asks the node's session guard (`handle.gate.check()`, in `admit`, before the
  content sync and again before the WAL write): with the session SUSPENDED, expired,
  or the runtime aborted or stopped, the commit fails and its session rolls back.
* A commit that failed in the WAL is a "rejected write" (an event, for the first of
  a run of failures). ZooKeeper then says what it was
  (`handle.verify_ownership()`): this node lost the shard (a fenced zombie), and the
  runtime stops for good, with one log line; or storage is down, and commits go on
  failing and rolling back until the WAL can roll again (`repositories.flowfile`'s
  rule; `DurableCommitter` logs one line when they start failing and one when they
  succeed again).
* An adopted shard's provenance outbox (the last events of each commit slot of the
  dead owner) is registered in this node's provenance: the owner's local provenance
  may be gone with its disk. A cluster-wide view of provenance collapses the copies
  by event identity (`cluster.drills.checker.cluster_provenance`).
* Two ways to end. `stop()` is orderly (retired, offloaded, a node stopping): the
  engine finishes its sessions, then the WAL syncs and closes. `abandon()` is a
  death (the incarnation's session is over, "you are dead", or the shard was fenced
  away): it returns at once, whatever HDFS does, with the gate shut and the WAL
  abandoned (`WriteAheadLog.abandon`: no sync, no close; the adopter recovers the
  leases), so nothing is admitted, written or acknowledged from then on: a commit in
  flight fails (its WAL write is `AbandonedInFlightError`, so no `on_success` runs,
  no 200 is answered, no source deleted). The `stop()` that follows an `abandon()`
  waits at most `ABANDONED_TASKS_WAIT` for the flow's tasks (one stuck in an hsync
  may take the storage's whole deadline; it can commit nothing), then stops the
  processors (a listener's port is let go) and closes nothing of the WAL.

Lock plan: `_lock` guards `_stopping` and `_rejecting`; the engine, shard and
repositories lock for themselves. `stop()` may be called from any thread but a
flow task's (a fence found in a commit stops the runtime from a thread of its own);
`abandon()` from any thread, and it takes no lock.
"""

from __future__ import annotations

import logging
import threading

from flow.engine import DEFAULT_THREADS, TraditionalEngine
from flow.graph import FlowGraph
from flow.preparation import Preparation
from flow.processors.kafka.ownership import PARTITIONS_SERVICE
from flow.shard import QueueShard

from ..core.heartbeat import QueueLoad
from ..errors import ClusterError, FencedError, WorkGateClosed, first_line
from .content import NodeContent
from .events import NodeEvent
from .hand_over import HandOverPostponed, SourceHandOver, handing_over, take_over_running
from .kafka_ownership import KafkaHoldRelease, adopted_shard_releases
from .measures import ShardMeasures, shard_measures
from .run_states import RunStateFollower
from .shard_opening import open_node_shard

log = logging.getLogger(__name__)

# After `abandon()`, how long `stop()` waits for the flow's tasks to end before it stops
# the processors anyway: a task that is not stuck in storage ends at once (the gate
# refuses its commit); one that is (an hsync of a frozen pipeline) would hold the
# death for the storage's whole deadline, and can commit nothing.
ABANDONED_TASKS_WAIT = 0.25


class FlowRuntime:
    def __init__(
        self,
        handle,
        definition,
        content,
        provenance,
        *,
        threads: int = DEFAULT_THREADS,
        incarnation: str = "",
        events=None,
        services=None,
        flow_version: str | None = None,
        run_states=None,
        prepared: tuple[FlowGraph, Preparation] | None = None,
    ):
        self.handle, self.definition = handle, definition
        # Where the operators' run states are kept (`run_states.ZooKeeperRunStates`):
        # applied when the engine is made, and followed while it runs. None: none.
        self.run_states = run_states
        self.flow_version = flow_version
        self.content, self.provenance = content, provenance
        self.threads, self.incarnation = threads, incarnation
        self.services = services
        self.events = events or (lambda kind, **fields: None)
        self.graph = self.shard = self.engine = None
        self.recovery: dict = {}
        self._lock = threading.Lock()
        self._aborting = threading.Event()
        self._abandoned = threading.Event()
        self._stopped = threading.Event()
        self._rejecting = False
        self._first_output = False
        self._sinks: set[str] = set()
        self.rejected: str | None = None
        self._preparation: Preparation | None = None
        # The graph and the preparations its adopter started while fencing the shard
        # (`early_adoption`), to run with instead of new ones.
        self._prepared = prepared

    # -- ShardRuntime ------------------------------------------------------------------
    def recover(self) -> None:
        handle = self.handle
        if self._prepared is not None:
            self.graph, self._preparation = self._prepared
            self._prepared = None
        else:
            self.graph = FlowGraph(self.definition)
        self._sinks = _terminal_processors(self.graph)
        if self._preparation is None:
            # While its WAL is recovered: a sink's first task need not make its Kafka
            # producer itself (`Processor.prepare_adopted`; an adopted shard's fences the
            # dead owner's). A home shard's too: made lazily, every node made its
            # producer when the first records reached it, all at once on a loaded
            # machine, and a shard adopted then waited for its own behind them.
            self._preparation = Preparation(self.graph, handle.shard, self._check_gate, self.services)
        opened = open_node_shard(
            handle.files,
            self.graph.queues.values(),
            foreign=not handle.home,
            opened=self._opened,
            content=self._prepare_content,
            provenance=lambda: self.provenance,
        )
        report = opened.recovery
        # A home shard's sources wait for what the node's earlier incarnations took (`hand_over`).
        self._handing_over = handing_over(self.graph) if handle.home and handle.previous_shards is not None else {}
        # Processors an operator stopped (in this shard's node, any incarnation) are never
        # scheduled here: read before the engine exists, so that not one task runs.
        stopped = self.run_states.stopped(handle.shard) if self.run_states is not None else frozenset()
        self.engine = TraditionalEngine(
            self.graph,
            self.shard,
            self.content,
            self.provenance,
            threads=self.threads,
            commit_gate=self,
            run_sources=handle.home,
            hold_sources=bool(self._handing_over),
            services=self.services,
            stopped=stopped,
        )
        if stopped:
            log.info(
                "shard %s starts with processors %s stopped, as an operator left them",
                handle.shard,
                ", ".join(sorted(stopped)),
            )
        self.recovery = {
            "flowfiles": report.flowfiles,
            "swap_files": report.swap_files,
            "swapped_flowfiles": report.swapped_flowfiles,
            "provenance_replayed": opened.provenance_replayed,
            "orphaned_swap_files": len(report.orphaned_swap_files),
            "unreadable_swap_files": len(report.unreadable_swap_files),
        }
        self.events(NodeEvent.RECOVERED, shard=handle.shard, epoch=handle.epoch, home=handle.home, **self.recovery)

    def _opened(self, shard: QueueShard) -> None:
        """The shard's WAL exists, not read yet: where a death finds it to abandon."""
        self.shard = shard
        if self._abandoned.is_set():
            shard.wal.abandon(f"the runtime of shard {self.handle.shard} was abandoned before its WAL was opened")

    def _prepare_content(self, shard: QueueShard, report) -> None:
        if not self.handle.home and isinstance(self.content, NodeContent):
            # A dead incarnation's newest content files may still be open: recover
            # their leases beside the first reads rather than at each of them, then
            # read what the first tasks will read.
            self.content.prepare_adopted(report.live_claims, report.heads)

    def start(self) -> None:
        if not self._stopped.is_set() and not self._abandoned.is_set():
            if not self.handle.home and adopted_shard_releases(self.graph, self.services):
                # Its WAL is fenced and recovered: the dead owner's Kafka positions are final.
                ownership = self.services.get(PARTITIONS_SERVICE, asked_by=f"shard {self.handle.shard}")
                KafkaHoldRelease(self.graph, self.shard, ownership, self._stopped).start()
            self.engine.start()
            if self.run_states is not None:
                RunStateFollower(self.engine, self.handle.shard, self.run_states, ended=self._stopped.is_set).start()
            if self.engine.sources_held:
                SourceHandOver(
                    self.handle,
                    self.shard,
                    self._handing_over,
                    release=self.engine.release_sources,
                    events=self.events,
                    stopped=self._stopped,
                ).start()

    def pause(self) -> None:
        if self.engine is not None:
            self.engine.pause()
        self.events(NodeEvent.PAUSED, shard=self.handle.shard, incarnation=self.incarnation)

    def resume(self) -> None:
        self._aborting.clear()
        if self.engine is not None and not self._stopped.is_set() and not self._abandoned.is_set():
            self.engine.resume()
            self.events(NodeEvent.RESUMED, shard=self.handle.shard, incarnation=self.incarnation)

    def abort_open_sessions(self) -> None:
        self._aborting.set()

    def stop(self) -> None:
        """Orderly, unless `abandon()` came first (see the module docstring)."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
        engine, shard = self.engine, self.shard
        abandoned = self._abandoned.is_set()
        if engine is not None:
            engine.pause()
            engine.stop(timeout=ABANDONED_TASKS_WAIT if abandoned else 10.0)
        if self._preparation is not None:  # what no task took (a processor that never ran here)
            self._preparation.release()
        if abandoned:
            return  # the WAL was abandoned: nothing of it is synced or closed
        if shard is not None and shard.wal is not None:
            try:
                shard.wal.close()
            except Exception as error:  # noqa: BLE001 - a fenced WAL refuses its last sync
                log.info("closing the WAL of %s: %s", self.handle.shard, first_line(error, 200))

    def abandon(self, reason: str = "its incarnation is dead") -> None:
        """The shard is not this incarnation's any more, whatever HDFS does: shut the
        gate and abandon the WAL, at once (see the module docstring). Takes no lock and
        makes no storage call; `stop()` does the rest. Idempotent."""
        if self._abandoned.is_set():
            return
        self._abandoned.set()  # the gate refuses from now on (`_check_gate`)
        shard = self.shard  # held from when its WAL is opened, before it is recovered
        wal = shard.wal if shard is not None else None
        if wal is not None:
            wal.abandon(f"{reason}; shard {self.handle.shard} at epoch {self.handle.epoch}")

    def running_engine(self):
        """The shard's engine while the runtime is recovered and not stopped, else None."""
        return None if self._stopped.is_set() or self._abandoned.is_set() else self.engine

    def holds_hand_over_state(self) -> bool:
        """Some processor of the shard holds state its first owner's node takes over."""
        if self.graph is None:
            return False
        return any(
            cls.holds_state_to_hand_over(self.shard.get_state(pid)) for pid, cls in handing_over(self.graph).items()
        )

    def take_over_states(self, origin: str, states: dict) -> dict[str, tuple[bool, str]]:
        """What a decommissioned node's sources took that any node can use, from its kept
        shard `origin`, merged into this home shard's processors (`hand_over.take_over_running`)."""
        if not self.handle.home or self.running_engine() is None:
            raise HandOverPostponed(f"shard {self.handle.shard} is not a running home shard")
        keeper, shard = self.run_states, self.handle.shard
        return take_over_running(
            self.engine,
            self.shard,
            handing_over(self.graph),
            states,
            origin=origin,
            gate=self.handle.gate,
            operator_stopped=lambda: keeper.stopped(shard) if keeper is not None else frozenset(),
        )

    def drained(self) -> bool:
        return (
            not self.handle.home
            and self.engine is not None
            and not self._stopped.is_set()
            and not self._abandoned.is_set()
            and self.engine.is_idle()
        )

    def load(self) -> dict[str, QueueLoad]:
        if self.graph is None:
            return {}
        return {queue_id: QueueLoad(queue.count, queue.size) for queue_id, queue in self.graph.queues.items()}

    def active_threads(self) -> int:
        return sum(node.running for node in self.engine.nodes.values()) if self.engine is not None else 0

    def measures(self) -> ShardMeasures | None:
        return shard_measures(self.engine) if self.engine is not None else None

    def status(self) -> dict:
        return {
            "shard": self.handle.shard,
            "epoch": self.handle.epoch,
            "home": self.handle.home,
            "flow_version": self.flow_version,
            "recovery": self.recovery,
            **(self.engine.status() if self.engine is not None else {}),
        }

    # -- the commit gate (flow.commit.CommitGate) ---------------------------------------
    def admit(self, component_id: str) -> None:
        self._check_gate()

    def committed(self, component_id: str) -> None:
        with self._lock:
            recovering, self._rejecting = self._rejecting, False
        if recovering:  # the committer logs it
            self.events(NodeEvent.STORAGE_UP, shard=self.handle.shard, epoch=self.handle.epoch)
        if not self._first_output and component_id in self._sinks:
            self._first_output = True
            self.events(
                NodeEvent.FIRST_OUTPUT,
                shard=self.handle.shard,
                epoch=self.handle.epoch,
                home=self.handle.home,
                component=component_id,
                step=self.handle.step,
            )
            if not self.handle.home:
                self.handle.record_resumed()

    def failed(self, component_id: str, error: BaseException) -> None:
        if isinstance(error, ClusterError) or self._stopped.is_set() or self._abandoned.is_set():
            return  # the gate refused it (nothing reached the WAL), or the runtime is ending
        message = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        with self._lock:
            first, self._rejecting = not self._rejecting, True
        if first:
            self.rejected = message
            self.events(
                NodeEvent.REJECTED_WRITE,
                shard=self.handle.shard,
                epoch=self.handle.epoch,
                what=component_id,
                error=message,
            )
        # The error alone cannot tell a fence from an outage (a pipeline with no
        # DataNode left also reads as a lost lease): ZooKeeper's ownership decides.
        # An outage is logged by the committer, once; a fence here, once.
        try:
            self.handle.verify_ownership()
        except FencedError as fenced:
            log.error(
                "rejected write to shard %s at epoch %d by %s (%s): %s; %s",
                self.handle.shard,
                self.handle.epoch,
                self.incarnation,
                component_id,
                message,
                fenced,
            )
            self.events(NodeEvent.FENCED, shard=self.handle.shard, epoch=self.handle.epoch, error=str(fenced)[:300])
            # Fenced away: the shard is another node's; its WAL is not synced or closed.
            self.abandon(f"fenced: {first_line(fenced, 200)}")
            self.engine.pause()
            threading.Thread(target=self.stop, name=f"stop {self.handle.shard}", daemon=True).start()
        except Exception:  # noqa: BLE001 - ZooKeeper unreachable: the session guard decides
            pass

    def _check_gate(self) -> None:
        if self._abandoned.is_set():
            raise WorkGateClosed(f"the runtime of shard {self.handle.shard} was abandoned; it never writes again")
        if self._stopped.is_set():
            raise WorkGateClosed(f"the runtime of shard {self.handle.shard} is stopped; it never writes again")
        if self._aborting.is_set():
            raise WorkGateClosed(f"sessions of shard {self.handle.shard} were aborted (ZooKeeper session suspended)")
        gate = self.handle.gate
        if gate is not None:
            gate.check()


def _terminal_processors(graph: FlowGraph) -> set[str]:
    """Processors whose output goes nowhere but back to themselves: the flow's sinks."""
    return {
        pid
        for pid, outgoing in graph.outgoing.items()
        if graph.incoming[pid] and all(queue.destination == pid for queues in outgoing.values() for queue in queues)
    }
