"""`NodeControl`: the one narrow way into a running node, for the CLI and the admin API.

Callers see what a node runs and may ask it to hand its work over, without reaching
into its members, runtimes or locks:

    control = node.control()               # StandaloneNode or ClusteredNode
    control.name, control.state()           # "n1", "RUNNING" (see NodeState)
    control.readiness()                     # [] when ready, else the reasons
    control.status()                        # who it is, and a line per shard
    control.shards()                        # shard -> epoch, home, recovery figures
    control.queues()                        # shard -> queue -> count, bytes, swapped, back-pressure
    control.processors()                    # shard -> processor -> state, tasks, last error
    control.repository_sizes()              # bytes of content and provenance on local disk
    control.measures()                      # commits, WAL syncs, swaps, HDFS calls, failovers, session
    control.alarms()                        # what needs an operator: swap files that cannot be read
    control.retry_alarms()                  # read them again now (after a repair)
    control.cluster_status()                # the cluster as ZooKeeper holds it (clustered only)
    control.provenance                      # the node's ProvenanceRepository (query, lineage, get)
    control.offload(wait_s=60)              # hand every shard to the other nodes; stay up, owning nothing
    control.connect()                       # join again as a new incarnation
    control.decommission_node("n3")         # n3 is gone for good: its shards and kept state handed over
    control.connect_node("n3")              # n3 may join the cluster again
    control.check_flow(document)            # a flow to deploy, parsed here (Invalid if not)
    control.publish_flow(snapshot)          # the cluster's flow from every next incarnation on

Queues, FlowFiles and processors of the shards the node runs (`flow_access`):

    control.list_queue(shard, queue, offset=0, limit=100)  # NiFi's list queue: a page, in poll order
    control.flowfile(uuid, shard=None)      # its attributes, queue, shard, content claim
    control.open_content(uuid, shard=None)  # FlowFileContent: size, mime type, open(offset, length)
    control.drop_queue(shard, queue)        # NiFi's drop FlowFiles: DROP events, durable
    control.replay(event_id, queue=None)    # NiFi's replay: a new FlowFile, a REPLAY event
    control.stop_processor(shard, processor, wait_s=30); control.start_processor(shard, processor)
                                            # kept: ZooKeeper (clustered), a file (standalone)
    control.run_once(shard, processor, wait_s=30)  # NiFi's Run Once: one task; it stays stopped

The cluster's rolling deploy, as ZooKeeper holds it (`cluster.core.rolls`):

    control.current_roll()                  # (Roll, znode version), or None
    control.write_roll(roll, previous)      # a new roll over the one read (compare-and-set)

Every figure is a copy taken when asked (plain dicts of numbers and strings): holding
one blocks nothing in the node. Errors say what the caller did wrong (`NotFound`,
`Conflict`) or what did not answer (`Unavailable`); the admin API maps them to 404,
409 and 503.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Protocol

from flow.unreadable_swap import alarm_text

from ..core.run_states import RUNNING, STOPPED
from ..errors import OwnershipConflict, first_line
from . import flow_access
from .control_errors import Conflict, Invalid, NotFound, OffloadRefused, Unavailable
from .measures import NodeMeasures

__all__ = [
    "Conflict",
    "ControlledNode",
    "Invalid",
    "NodeControl",
    "NodeState",
    "NotFound",
    "OffloadRefused",
    "Unavailable",
]


class NodeState:
    STARTING = "STARTING"  # recovering, or joining the cluster
    RUNNING = "RUNNING"
    OFFLOADING = "OFFLOADING"  # left the cluster; its shards are being adopted by others
    OFFLOADED = "OFFLOADED"  # owns nothing; `connect` joins again
    STOPPING = "STOPPING"


class ControlledNode(Protocol):
    """What a node gives its `NodeControl`."""

    def identity(self) -> dict: ...  # node, kind, incarnation, ...

    def node_state(self) -> str: ...  # a NodeState

    def readiness(self) -> list[str]: ...  # why it is not ready; [] when ready

    def shard_statuses(self) -> dict[str, dict]: ...  # shard -> FlowRuntime/engine status

    def provenance_repository(self): ...

    def repository_directories(self) -> dict[str, str]: ...  # "content"/"provenance" -> local directory

    def measures(self) -> NodeMeasures: ...  # snapshots of what its instruments counted

    def cluster_status(self): ...  # a cluster.zk.status.ClusterStatus

    def offload(self) -> None: ...

    def owns_nothing(self) -> bool: ...  # after `offload`: ZooKeeper shows no shard of it

    def connect(self) -> None: ...

    def decommission_node(self, name: str) -> dict: ...  # `cluster.node.decommission.answer`

    def connect_node(self, name: str) -> dict: ...

    def check_flow(self, document: dict): ...  # a FlowSnapshot this node can run, or Invalid

    def publish_flow(self, snapshot) -> None: ...  # the cluster's flow, for every next incarnation

    def cluster_flow_version(self) -> str | None: ...

    def engines(self) -> dict[str, object]: ...  # shard -> its running flow.engine.TraditionalEngine

    def replay_shard(self) -> str | None: ...  # the shard replayed FlowFiles join (the home shard)

    # Optional: `run_states()` (where processors' run states are kept: `run_states`; a node
    # without keeps them in memory only) and `operator_store()` (the cluster's rolling deploy).


SIZES_TTL_S = 5.0  # directory sizes are walked at most this often


class NodeControl:
    def __init__(self, node: ControlledNode, *, clock=time.monotonic, wall_clock=time.time):
        self._node = node
        self._clock = clock
        self._wall_clock = wall_clock
        self._sizes: tuple[float, dict[str, int]] | None = None
        self._sizes_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._node.identity()["node"]

    def identity(self) -> dict:
        return dict(self._node.identity())

    def state(self) -> str:
        return self._node.node_state()

    def readiness(self) -> list[str]:
        return list(self._node.readiness())

    def status(self) -> dict:
        shards = self._node.shard_statuses()
        return {
            **self._node.identity(),
            "state": self.state(),
            "shards": {
                shard: {
                    "epoch": status.get("epoch"),
                    "home": status.get("home", True),
                    "flow_version": status.get("flow_version"),
                    "queued": sum(q.get("count", 0) for q in status.get("queues", {}).values()),
                    "queued_bytes": sum(q.get("size", 0) for q in status.get("queues", {}).values()),
                    "running_tasks": sum(p.get("running", 0) for p in status.get("processors", {}).values()),
                    "recovery": dict(status.get("recovery", {})),
                }
                for shard, status in shards.items()
            },
        }

    def shards(self) -> dict[str, dict]:
        return {
            shard: {
                "epoch": status.get("epoch"),
                "home": status.get("home", True),
                "recovery": dict(status.get("recovery", {})),
            }
            for shard, status in self._node.shard_statuses().items()
        }

    def queues(self) -> dict[str, dict[str, dict]]:
        return {
            shard: {queue: dict(figures) for queue, figures in status.get("queues", {}).items()}
            for shard, status in self._node.shard_statuses().items()
        }

    def processors(self) -> dict[str, dict[str, dict]]:
        return {
            shard: {processor: dict(figures) for processor, figures in status.get("processors", {}).items()}
            for shard, status in self._node.shard_statuses().items()
        }

    def flow_definitions(self) -> tuple[str | None, dict[str, object]]:
        """The home shard (None: not known) and each running shard's flow.definition.FlowDefinition."""
        engines = self._node.engines()
        return self._node.replay_shard(), {shard: engine.graph.definition for shard, engine in engines.items()}

    def repository_sizes(self) -> dict[str, int]:
        """Bytes under the node's local content and provenance directories, walked at
        most every `SIZES_TTL_S` (a scrape must not walk a large tree each time)."""
        with self._sizes_lock:
            now = self._clock()
            if self._sizes is not None and now - self._sizes[0] < SIZES_TTL_S:
                return dict(self._sizes[1])
            sizes = {name: _tree_size(path) for name, path in self._node.repository_directories().items()}
            self._sizes = (now, sizes)
            return dict(sizes)

    def measures(self) -> NodeMeasures:
        """What the node counted and timed (see `cluster.node.measures`), as copies."""
        return self._node.measures()

    def cluster_status(self):
        return self._node.cluster_status()

    @property
    def provenance(self):
        return self._node.provenance_repository()

    def offload(self, wait_s: float = 0.0) -> str:
        """Hand every shard to the other nodes through the failover protocol (fenced,
        at a new epoch, exactly once), without waiting for a session timeout; the node
        stays up, owning nothing, until `connect`. With `wait_s`, wait that long for
        ZooKeeper to show no shard owned by it. Returns the state then.
        `OffloadRefused` when the node has nobody to give them to."""
        self._node.offload()
        deadline = self._clock() + wait_s
        while wait_s > 0 and not self._node.owns_nothing() and self._clock() < deadline:
            time.sleep(0.1)  # polling ZooKeeper, bounded by the caller's deadline
        return self.state()

    def connect(self) -> str:
        """Join the cluster again after an offload: a new incarnation with a new shard."""
        self._node.connect()
        return self.state()

    def decommission_node(self, name: str) -> dict:
        """Node `name` of this node's cluster is gone for good (any node may be asked, the
        node itself too): it leaves if it is up, its shards move through the failover
        protocol, what its sources took is handed to a survivor or dropped with a warning,
        and it never joins again under that name until `connect_node`. `NotFound` for a
        name the cluster does not know, `Conflict` for the only member."""
        return self._node.decommission_node(name)

    def connect_node(self, name: str) -> dict:
        """Let decommissioned node `name` join again; `Conflict` when it is not decommissioned."""
        return self._node.connect_node(name)

    def check_flow(self, document: dict):
        """The `FlowSnapshot` of `document`, once this node parsed it; `Invalid` if not."""
        return self._node.check_flow(document)

    def cluster_flow_version(self) -> str | None:
        """The version of the flow deployed to the cluster (None: never deployed)."""
        return self._node.cluster_flow_version()

    def publish_flow(self, snapshot) -> None:
        """Make `snapshot` the cluster's flow: every node runs it from its next incarnation."""
        self._node.publish_flow(snapshot)

    # -- alarms ---------------------------------------------------------------------------
    def alarms(self) -> list[dict]:
        """What needs an operator, oldest first: each swap file set aside because it cannot
        be read (quarantined if corrupt), with its FlowFiles, why, and what to do."""
        found = []
        for shard, engine in sorted(self._node.engines().items()):
            queue_shard = engine.shard
            for alarm in queue_shard.unreadable_swap_files():
                found.append(
                    {
                        "kind": "swap_file_unreadable",
                        "shard": shard,
                        "queue": alarm.queue,
                        "location": alarm.location,
                        "reason": alarm.reason.value,
                        "quarantined": alarm.quarantined,
                        "flowfiles": alarm.flowfiles,
                        "bytes": alarm.size,
                        "failures": alarm.failures,
                        "since_ms": alarm.since_ms,
                        "next_attempt_ms": alarm.next_attempt_ms,
                        "error": alarm.error,
                        "message": alarm_text(alarm, queue_shard.retry_backoff),
                    }
                )
        return sorted(found, key=lambda alarm: (alarm["since_ms"], alarm["shard"], alarm["location"]))

    def retry_alarms(self) -> int:
        """Read every swap file set aside again now, rather than after its backoff (an
        operator put good copies in place); how many were scheduled."""
        return sum(engine.shard.retry_unreadable_now() for engine in self._node.engines().values())

    # -- queues, FlowFiles and processors ----------------------------------------------
    def _now_ms(self) -> int:
        return int(self._wall_clock() * 1000)

    def list_queue(self, shard: str, queue: str, offset: int = 0, limit: int = 100) -> dict:
        """A page of the FlowFiles `queue` holds in memory, in the order it hands them
        out (position 1 first), with how many are swapped out or held by running tasks
        and so not listed (`flow.queue_inspection`)."""
        return flow_access.list_queue(self._node.engines(), shard, queue, offset, limit, self._now_ms())

    def flowfile(self, uuid: str, shard: str | None = None) -> dict:
        """The FlowFile `uuid` as queued in `shard` (or any shard of the node), swapped or not."""
        return flow_access.flowfile_details(self._node.engines(), uuid, shard, self._now_ms())

    def open_content(self, uuid: str, shard: str | None = None) -> flow_access.FlowFileContent:
        """The content of the FlowFile `uuid`, to stream; nothing is read yet."""
        return flow_access.open_content(self._node.engines(), uuid, shard)

    def drop_queue(
        self, shard: str, queue: str, *, details: str = "FlowFile Queue emptied through the admin API"
    ) -> dict:
        """Empty `queue`, swapped FlowFiles included, through the shard's committer (a
        DROP event each; `flow.queue_drop`). FlowFiles held by running tasks stay."""
        return flow_access.drop(self._node.engines(), shard, queue, details)

    def replay(self, event_id: int, queue: str | None = None, *, details: str | None = None) -> dict:
        """A new FlowFile from provenance event `event_id` into the queue its component
        reads (`queue` chooses among several), on the node's home shard (`flow.replay`)."""
        details = details or f"Replay of provenance event {event_id} requested through the admin API"
        return flow_access.replay(
            self._node.engines(),
            self._node.provenance_repository(),
            event_id,
            self._node.replay_shard(),
            queue,
            details,
        )

    def stop_processor(self, shard: str, processor: str, wait_s: float = 30.0) -> dict:
        """No new task for `processor`; its running tasks finish, then its on_stopped.
        The state is `STOPPED`, or `STOPPING` while tasks still run after `wait_s`.
        Kept before the engine is told (`cluster.core.run_states` says for which shards:
        `scope` in the answer): a restart, or a node adopting the shard, leaves it
        stopped. `Unavailable` when it cannot be kept; nothing is stopped then."""
        scope = self._keep_run_state(shard, processor, STOPPED)
        answer = flow_access.set_processor_state(self._node.engines(), shard, processor, False, wait_s)
        return {**answer, "scope": scope}

    def start_processor(self, shard: str, processor: str) -> dict:
        """Schedule a stopped processor again, and keep that (as `stop_processor` keeps a
        stop). A processor that cannot start yet (still stopping) stays recorded stopped."""
        scope = self._keep_run_state(shard, processor, RUNNING)
        try:
            answer = flow_access.set_processor_state(self._node.engines(), shard, processor, True, 0.0)
        except Conflict:
            self._keep_run_state(shard, processor, STOPPED)
            raise
        return {**answer, "scope": scope}

    def run_once(self, shard: str, processor: str, wait_s: float = 30.0) -> dict:
        """NiFi's Run Once: one task of the stopped `processor` (on_scheduled, one
        on_trigger, on_stopped), waiting up to `wait_s` for it to end. The kept run state
        is not touched: the processor stays stopped. `Conflict` when it is not stopped
        (stop it first), as `flow.engine.TraditionalEngine.run_once` refuses."""
        engine = flow_access.engine_of(self._node.engines(), shard)
        flow_access.processor_of(engine, shard, processor)
        with flow_access.answering(f"running processor {processor} of shard {shard} once"):
            state = engine.run_once(processor, timeout=wait_s)
        figures = engine.status()["processors"][processor]
        return {"shard": shard, "processor": processor, "state": state, "running": figures["running"]}

    def _keep_run_state(self, shard: str, processor: str, state: str) -> str | None:
        """Record an operator's run state where the node keeps it; its scope, or None for
        a node that keeps none."""
        flow_access.processor_of(flow_access.engine_of(self._node.engines(), shard), shard, processor)
        keeper_of = getattr(self._node, "run_states", None)
        if keeper_of is None:
            return None
        identity = self._node.identity()
        try:
            keeper = keeper_of()
            keeper.record(shard, processor, state, by=identity.get("incarnation") or identity["node"])
            return keeper.scope(shard)
        except (Unavailable, NotFound, Conflict):
            raise
        except Exception as error:  # noqa: BLE001 - ZooKeeper or the disk: said, nothing changed
            raise Unavailable(
                f"the run state of processor {processor} could not be kept "
                f"({type(error).__name__}: {first_line(error, 200)}); nothing changed"
            ) from None

    # -- the cluster's rolling deploy -------------------------------------------------------
    def current_roll(self):
        """The cluster's last rolling deploy and its znode version (`cluster.core.rolls.Roll`),
        or None when none was ever started. `NotFound` on a node in no cluster."""
        return self._operator(lambda operator: operator.roll(), "reading the cluster's deploy")

    def write_roll(self, roll, previous) -> None:
        """Write `roll` as the cluster's deploy over `previous` (as `current_roll` read it);
        `Conflict` when another deploy was written meanwhile."""
        try:
            self._operator(lambda operator: operator.start_roll(roll, previous), "writing the cluster's deploy")
        except OwnershipConflict:
            raise Conflict("another deploy was started meanwhile: see GET /api/v1/flow/deploy") from None

    def _operator(self, action, what: str):
        operator_of = getattr(self._node, "operator_store", None)
        if operator_of is None:
            raise NotFound(f"node {self.name} is in no cluster: it takes no rolling deploy")
        try:
            return action(operator_of())
        except (Unavailable, NotFound, Conflict, OwnershipConflict):
            raise
        except Exception as error:  # noqa: BLE001 - ZooKeeper did not answer
            raise Unavailable(f"{what}: {type(error).__name__} {first_line(error, 200)}") from None


def _tree_size(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass  # collected while walking
    return total
