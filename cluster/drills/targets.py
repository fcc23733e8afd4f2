"""What a failover drill needs from a cluster: the `DrillTarget` protocol, and how
`custody drill --target KIND` finds the class that implements it.

The round loop (`runner`) touches the cluster only through this protocol, so that one
loop drills every kind of deployment:

* `local.LocalTarget`: `custody node` processes on this machine, with the embedded
  ZooKeeper ensemble and HDFS of `cluster.services`;
* `compose.ComposeTarget`: the containers of a running docker compose project (not in
  this package yet; `open_target` says so when it is missing).

Conventions every implementation keeps:

* A node is named by a stable `name` (n1, n2, ...) and runs one incarnation after
  another (`<name>-<epoch>`); a name outlives its incarnations and its processes or
  containers.
* Times are wall-clock seconds since the epoch (`time.time()`), on one clock shared by
  the drill and the nodes (the nodes' events carry it as "at").
* Node events are what `custody node --events` prints, one JSON object a line:
  {"event": KIND, "at": ..., **fields}. The drill reads these kinds:
    joined        incarnation, session_id: a new incarnation joined the cluster (its
                  session's password is only in the node's 0600 `zookeeper-session`
                  file, `cluster.node.session_file`);
    dead          incarnation, reason: an incarnation ended (its session expired or was
                  lost, it was told it is dead);
    first-output  shard, home: the first FlowFile this process delivered from `shard`
                  (home is true for its own home shard, false for an adopted one);
    recovered     shard, home, flowfiles, swapped_flowfiles: a shard's WAL restored;
    rejected write, fenced   shard: a zombie's write refused, its shard fenced;
    starting      attempt: the process is about to join (a new incarnation);
    connected     node: that attempt reached ZooKeeper (it takes an incarnation next);
    start-failed  error, fatal: joining failed, and is tried again unless fatal.
  A local target reads them from the node's stdout; a compose target from `docker
  logs` of node containers started with `--events`.
* Faults return once they are done (the process killed, the member down), not once
  the cluster reacted: the round loop waits for the reaction itself, on ZooKeeper and
  on the events, each wait with a deadline.
* Every wait inside a target has a deadline and raises `ServiceError`
  (`cluster.services.process`) naming what it waited for.
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

from ..core.heartbeat import Heartbeat
from ..core.ownership import ShardOwnership
from ..core.plans import FailoverPlan
from ..core.validation import ClusterView
from ..errors import ClusterError
from ..node.events import NodeEvent
from ..services.hdfs import blocks_scheduled
from .checker import ClusterReport
from .fault_kinds import TARGET_KINDS


class TargetUnavailable(ClusterError):
    """The target cannot be drilled as asked (its module is missing, its project is not
    running, it has too few nodes): nothing was started or changed."""


@runtime_checkable
class DrillTarget(Protocol):
    """A cluster that a drill can watch and break. Construction is cheap and starts
    nothing (it may check that the cluster can be reached, and raise
    TargetUnavailable); `start_all` starts what the target owns."""

    kind: str  # "local", "compose": what --target names (class attribute)
    supported_faults: frozenset  # fault names (fault_kinds) it can inject (class attribute)
    names: tuple[str, ...]  # its node names, known before start_all
    log_location: str  # where a person finds the nodes' and services' logs
    session_timeout: float  # the nodes' ZooKeeper session timeout, seconds

    # -- life ---------------------------------------------------------------------
    @classmethod
    def from_arguments(cls, arguments) -> DrillTarget:
        """A target from `custody drill`'s parsed arguments (an argparse Namespace:
        workdir, nodes, compose_file, ...; each class reads those it knows). Cheap: it
        may read files and ask whether the cluster is there (a compose project not
        running is TargetUnavailable, with what to run), but starts nothing."""

    def start_all(self, timeout: float = 90.0) -> None:
        """Start (or find running) every node and return once each has joined (has a
        "joined" event); a target that brings its own services starts them first."""

    def close(self) -> None:
        """Stop everything the target started; safe to call more than once, and after
        a failed start_all."""

    # -- nodes --------------------------------------------------------------------
    def incarnation(self, name: str) -> str | None:
        """The incarnation of the node's latest "joined" event; None before its first."""

    def leader(self) -> str | None:
        """The name of the node whose incarnation leads the cluster now, or None."""

    def events(self, name: str, kind: NodeEvent, **fields) -> list[dict]:
        """The node's events of `kind` whose fields equal `fields`, oldest first, since
        its current process (or container) started."""

    def logged(self, name: str, text: str) -> list[str]:
        """The lines of the node's log that contain `text`, since its current process
        started (its pause monitor's "this process stood still", a zombie's "producer
        fenced")."""

    def dump_stacks(self) -> None:
        """Ask every running node to print its threads' stacks to its log (SIGUSR1), for
        the post-mortem of a slow round; a paused node is resumed for it."""

    # -- the workload, as the cluster sees it -----------------------------------------
    def prepare_round(self) -> None:
        """Give the cluster work for the next round, where the workload's records come
        from outside (the Kafka workload's producer); nothing where the nodes' own
        sources make them."""

    def more_work(self) -> bool:
        """Send the cluster more work at once where the workload is fed from outside, and
        say True; False where the nodes' own sources make it (a new incarnation makes more)."""

    def queued(self, incarnation: str) -> int:
        """FlowFiles the incarnation's home shard holds in its swapped queue (the one in
        front of the sink), as its last heartbeat says; 0 when unknown."""

    def delivered(self) -> int:
        """Files in the sink now (finished deliveries; temporaries not counted). Called
        from a sampler thread as well as from the loop: it must be thread-safe."""

    def sink_duplicates(self) -> dict[str, list[str]]:
        """Ids that more than one sink file carries -> those files: a duplicate
        delivery that can be seen before the end."""

    # -- ZooKeeper views (cluster.drills.harness.ZooKeeperViews gives all five) ---------
    def shard(self, shard_id: str) -> ShardOwnership | None: ...
    def plan(self, plan_id: str) -> FailoverPlan | None: ...
    def shards(self) -> list[ShardOwnership]: ...
    def heartbeats(self) -> dict[str, Heartbeat]: ...
    def cluster_view(self) -> ClusterView: ...

    # -- faults to a node -------------------------------------------------------------
    def kill(self, name: str) -> None:
        """SIGKILL the node's process (docker kill): it stays down until `restart`."""

    def pause(self, name: str) -> None:
        """SIGSTOP the node's process: it keeps its state, and does nothing."""

    def resume(self, name: str) -> None:
        """SIGCONT a paused node."""

    def restart(self, *names: str, timeout: float = 90.0) -> None:
        """Kill what is left of each node, start them all again, and return once each
        joined as a new incarnation (they start side by side: a round that killed two
        waits for the slower start, not for both one after the other)."""

    def launch(self, name: str) -> None:
        """Start a node that `kill` left down, and return at once: a partition round
        cuts it off while it joins (after its "connected" event)."""

    def graceful_restart(self, name: str, timeout: float = 60.0) -> bool:
        """Stop the node on purpose (SIGTERM: it leaves, its shard is handed over),
        start it again, and return once it joined as a new incarnation. Returns False
        when the stop hung past `timeout` and the node was killed instead (its stacks
        dumped first)."""

    def expire_session(self, name: str) -> float:
        """End the node's ZooKeeper session from outside (attach to it with the session
        id and password from its `zookeeper-session` file, and close it); return once
        the node reported it "dead", with the moment (wall clock) the attempt that
        ended the session began."""

    # -- faults to the services ---------------------------------------------------------
    def kill_zookeeper_follower(self) -> str:
        """Kill one ZooKeeper follower (never the leader: quorum stays); return its name."""

    def restore_zookeeper_follower(self) -> None:
        """Restart the follower killed last; return once it serves again."""

    def kill_datanode(self) -> str:
        """Kill one HDFS DataNode (the others keep the replication); return its name."""

    def restore_datanode(self) -> None:
        """Restart the DataNode killed last; return once it has registered with the NameNode
        again (a process with open ports is not yet one that serves) and the NameNode counts
        it live."""

    def pause_datanodes(self) -> str:
        """SIGSTOP every HDFS DataNode; return what was stopped."""

    def resume_datanodes(self) -> None:
        """SIGCONT every HDFS DataNode `pause_datanodes` stopped."""

    def kill_broker(self) -> str:
        """SIGKILL the Kafka broker (only where "broker" is in supported_faults); return
        what is down."""

    def restore_broker(self) -> None:
        """Start the broker killed last on its own log; return once it serves again."""

    def partition(self, name: str) -> None:
        """Cut the node off from ZooKeeper, HDFS and the other nodes (only where
        "partition" is in supported_faults)."""

    def heal(self) -> None:
        """Undo `partition`."""

    def blocks_scheduled(self) -> int | None:
        """Blocks HDFS's NameNode counts as scheduled on its live DataNodes and not yet
        reported finished (`cluster.services.hdfs.blocks_scheduled`); None when the
        NameNode cannot be asked."""

    # -- the end ----------------------------------------------------------------------
    def wait_settled(self, timeout: float = 240.0) -> None:
        """Return once every FlowFile made so far was delivered, every dead shard is
        retired and nothing new was delivered for a few seconds."""

    def check(self) -> ClusterReport:
        """Stop every node and count, over the whole run, the ids lost, duplicated and
        unexpected at the sink and in provenance, and the FlowFiles left in WALs
        (`checker.check_cluster`). Called once, after wait_settled."""


def target_class(kind: str):
    """The class that implements `--target kind`: `local.LocalTarget`, or
    `compose.ComposeTarget` from cluster/drills/compose.py. Raises TargetUnavailable
    when that module (or the class in it) is missing."""
    if kind not in TARGET_KINDS:
        raise TargetUnavailable(f"unknown target {kind!r}; targets: {', '.join(TARGET_KINDS)}")
    module_name, class_name = {"local": ("local", "LocalTarget"), "compose": ("compose", "ComposeTarget")}[kind]
    try:
        module = importlib.import_module(f"{__package__}.{module_name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__package__}.{module_name}":
            raise
        raise TargetUnavailable(
            f"--target {kind} needs the module cluster/drills/{module_name}.py "
            f"(class {class_name}), which this installation does not have"
        ) from None
    found = getattr(module, class_name, None)
    if found is None:
        raise TargetUnavailable(f"cluster/drills/{module_name}.py defines no {class_name}")
    return found


def blocks_scheduled_at(http_port: int | None) -> int | None:
    """`DrillTarget.blocks_scheduled` of the NameNode whose HTTP server is on
    `http_port` (loopback): None without a port or when it does not answer."""
    if http_port is None:
        return None
    try:
        return blocks_scheduled(http_port)
    except (OSError, ValueError, KeyError):
        return None
