"""The local drill target: `custody node` processes on this machine (a `FlowCluster`
running examples/cluster.yaml, or with the Kafka workload examples/kafka-cluster.yaml
and a Kafka broker: `kafka_workload`), against a 3-member ZooKeeper ensemble and an
HDFS with 3 DataNodes.

The services are either given (the test fixtures: `LocalTarget.on_services`) or
started by the target itself in a work directory (`custody drill --target local`:
`LocalTarget.from_arguments`), through the service harness `cluster.services`, and
stopped by `close`. Node faults are signals to the node processes; service faults
go through the harness (`ZooKeeperEnsemble.kill_member`, `HdfsCluster.kill_datanode`,
`KafkaBroker.kill`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..core.layout import ClusterLayout
from ..node.events import NodeEvent
from ..node.session_file import session_path
from ..services.process import ServiceError
from .fault_kinds import FAULT_KINDS
from .faults import expire_session
from .flow_cluster import FlowCluster
from .harness import SESSION_TIMEOUT, ZooKeeperViews
from .kafka_workload import KafkaWorkload, WorkloadFeed, run_name
from .targets import blocks_scheduled_at

NAMES = ("n1", "n2", "n3")
# Each incarnation makes 600 FlowFiles and delivers 50 a second: its backlog lasts
# about 12 s, so a round's fault meets FlowFiles in flight even on a loaded machine
# (where the transforms before PutFile slow down too).
COUNT = 600
PUT_BATCH = 5
DATANODE = 1  # the DataNode the datanode fault kills (of 0..2; replication is 2)
WORKLOADS = ("files", "kafka")
# Faults to the nodes, ZooKeeper and HDFS; a partition needs containers, and the broker
# fault a workload that uses Kafka.
FILES_FAULTS = frozenset(kind.name for kind in FAULT_KINDS if kind.name not in ("partition", "broker"))
KAFKA_FAULTS = FILES_FAULTS | {"broker"}


def new_flow_cluster(zookeeper, hdfs, nodes: Path, run: str, parent: str, **options) -> FlowCluster:
    """A `FlowCluster` named `run` in ZooKeeper, its HDFS root `parent` (the cluster keeps
    `parent`/`run`, made here), its nodes' directories under `nodes`; `options` go to
    `FlowCluster`."""
    from replication.hdfs_storage import HdfsStorage

    storage = HdfsStorage(hdfs.url, hdfs.client_config)
    try:
        storage.mkdir(ClusterLayout(run, parent).hdfs_cluster, parents=True, exist_ok=True)
    finally:
        storage.close()
    nodes.mkdir(parents=True, exist_ok=True)
    return FlowCluster(zookeeper.hosts, hdfs.url, parent, nodes, hdfs.client_config, cluster=run, **options)


class LocalServices:
    """ZooKeeper and HDFS (and a Kafka broker, for the Kafka workload) of a
    `ServiceStack` in `workdir`, started for one drill and stopped after it (Spark and
    Docker are not started: the drill does not use them)."""

    def __init__(self, workdir: Path, *, kafka: bool = False):
        self.workdir = workdir
        self.names = ("zookeeper", "hdfs", "kafka") if kafka else ("zookeeper", "hdfs")
        self.stack = self.zookeeper = self.hdfs = self.kafka = None

    def start(self) -> None:
        from ..services.stack import ServiceStack

        self.stack = ServiceStack(workdir=self.workdir)  # makes the directory
        self.zookeeper, self.hdfs = self.stack.services["zookeeper"], self.stack.services["hdfs"]
        self.kafka = self.stack.services["kafka"] if "kafka" in self.names else None
        results = self.stack.start(self.names)
        failed = [f"{name}: {result['error']}" for name, result in results.items() if not result["started"]]
        if failed:
            raise ServiceError(
                f"could not start the drill's services ({'; '.join(failed)}); logs are under {self.stack.workdir}"
            )

    def stop(self) -> None:
        if self.stack is not None:
            self.stack.stop(self.names)


class LocalTarget(WorkloadFeed, ZooKeeperViews):
    """A `DrillTarget` (see `targets`) of local node processes. Not thread-safe but for
    `delivered`, which the drill's sampler calls from its own thread."""

    kind = "local"
    supported_faults = FILES_FAULTS  # KAFKA_FAULTS for an instance of the Kafka workload
    session_timeout = SESSION_TIMEOUT

    def __init__(
        self,
        names=NAMES,
        *,
        workdir: Path,
        zookeeper=None,
        hdfs=None,
        cluster: FlowCluster | None = None,
        services: LocalServices | None = None,
        count: int = COUNT,
        put_batch: int = PUT_BATCH,
        workload: str = "files",
        kafka=None,
    ):
        if workload not in WORKLOADS:
            raise ValueError(f"unknown workload {workload!r}; workloads: {', '.join(WORKLOADS)}")
        self.names = tuple(names)
        self.workdir = Path(workdir)
        self.zookeeper, self.hdfs, self.cluster = zookeeper, hdfs, cluster
        self._services = services  # started and stopped by this target
        self._owns_cluster = cluster is None
        self.count, self.put_batch = count, put_batch
        self.workload, self.kafka = workload, kafka  # kafka: the broker (`KafkaBroker`), given or started
        self.kafka_workload: KafkaWorkload | None = None  # made by start_all
        if workload == "kafka":
            self.supported_faults = KAFKA_FAULTS
        self._follower: int | None = None
        self.log_location = (
            f"{self.workdir} (nodes: nodes/<name>.log and .log.events; services: services/)"
            if services
            else f"{self.workdir} (nodes: <name>.log and <name>.log.events)"
        )

    @classmethod
    def on_services(cls, zookeeper, hdfs, cluster: FlowCluster, names=NAMES, **workload) -> LocalTarget:
        """On services someone else runs (the test fixtures), with their `FlowCluster`."""
        return cls(names, workdir=cluster.workdir, zookeeper=zookeeper, hdfs=hdfs, cluster=cluster, **workload)

    @classmethod
    def from_arguments(cls, arguments) -> LocalTarget:
        """`custody drill --target local [--workload files|kafka] [--workdir DIR] [--nodes N]`:
        services of its own in DIR (a new temporary directory by default), started by
        `start_all`."""
        # Named now, made by start_all: a drill refused for its arguments leaves nothing.
        workdir = Path(
            arguments.workdir
            or os.path.join(tempfile.gettempdir(), time.strftime(f"custody-drill-%Y%m%d-%H%M%S-{os.getpid()}"))
        )
        names = tuple(f"n{index}" for index in range(1, (arguments.nodes or len(NAMES)) + 1))
        workload = getattr(arguments, "workload", None) or "files"
        services = LocalServices(workdir / "services", kafka=workload == "kafka")
        return cls(names, workdir=workdir, services=services, workload=workload)

    @property
    def store(self):
        return self.cluster.store

    # -- life ---------------------------------------------------------------------
    def start_all(self, timeout: float = 90.0) -> None:
        if self._services is not None:
            self._services.start()
            self.zookeeper, self.hdfs = self._services.zookeeper, self._services.hdfs
            self.kafka = self._services.kafka or self.kafka
        if self.cluster is None:
            self.cluster = self._new_cluster()
        for name in self.names:
            self._start(name)
        for name in self.names:
            self.cluster.nodes[name].wait(NodeEvent.JOINED, timeout=timeout)

    def _new_cluster(self) -> FlowCluster:
        # A name of its own in ZooKeeper, HDFS and Kafka, so that a work directory (or a
        # broker) used again never shows a drill the shards or records of the one before.
        run = run_name()
        options = {}
        if self.workload == "kafka":
            if self.kafka is None:
                raise ServiceError("the Kafka workload needs a Kafka broker, and none was given or started")
            self.kafka_workload = KafkaWorkload(self.kafka.bootstrap_servers, run, len(self.names))
            self.kafka_workload.create_topics()
            options["sink_view"] = self.kafka_workload
        return new_flow_cluster(self.zookeeper, self.hdfs, self.workdir / "nodes", run, "/custody-drills", **options)

    def _start(self, name: str):
        if self.kafka_workload is not None:
            return self.cluster.start(name, **self.kafka_workload.node_config())
        return self.cluster.start(name, count=self.count, put_batch=self.put_batch)

    def close(self) -> None:
        if self.cluster is not None and self._owns_cluster:
            self.cluster.close()
            self.cluster = None
        if self.kafka_workload is not None:
            self.kafka_workload.close()
        if self._services is not None:
            self._services.stop()

    # -- nodes --------------------------------------------------------------------
    def incarnation(self, name: str) -> str | None:
        joined = self.cluster.nodes[name].find(NodeEvent.JOINED)
        return joined[-1]["incarnation"] if joined else None

    def leader(self) -> str | None:
        contenders = self.cluster.store.contenders_retried()
        for name in self.names:
            if contenders and self.incarnation(name) == contenders[0]:
                return name
        return None

    def events(self, name: str, kind: str, **fields) -> list[dict]:
        return self.cluster.nodes[name].find(kind, **fields)

    def logged(self, name: str, text: str) -> list[str]:
        with open(self.cluster.nodes[name].log.name, errors="replace") as log:
            return [line.rstrip("\n") for line in log if text in line]

    def dump_stacks(self) -> None:
        self.cluster.dump_stacks()

    def tails(self) -> str:
        return self.cluster.tails() if self.cluster is not None else ""

    # -- the workload ---------------------------------------------------------------
    def queued(self, incarnation: str) -> int:
        return self.cluster.queued(incarnation, self.kafka_workload.queue if self.kafka_workload else None)

    def delivered(self) -> int:
        return self.cluster.delivered()

    def sink_duplicates(self) -> dict[str, list[str]]:
        return self.cluster.sink_duplicates()

    # -- faults to a node -------------------------------------------------------------
    def kill(self, name: str) -> None:
        self.cluster.nodes[name].signal(signal.SIGKILL)

    def pause(self, name: str) -> None:
        self.cluster.nodes[name].signal(signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self.cluster.nodes[name].signal(signal.SIGCONT)

    def restart(self, *names: str, timeout: float = 90.0) -> None:
        for name in names:
            self.launch(name)
        deadline = time.monotonic() + timeout
        for name in names:
            self.cluster.nodes[name].wait(NodeEvent.JOINED, timeout=max(0.0, deadline - time.monotonic()))

    def launch(self, name: str) -> None:
        self.cluster.nodes[name].close()
        self._start(name)

    def graceful_restart(self, name: str, timeout: float = 60.0) -> bool:
        process = self.cluster.nodes[name].process
        process.terminate()
        try:
            process.wait(timeout)
            left = True
        except subprocess.TimeoutExpired:
            # A graceful stop that hangs is a defect of its own (the round reports it,
            # with the node's stacks in its log); the drill goes on with a kill.
            self.cluster.dump_stacks()
            process.kill()
            process.wait(30)
            left = False
        self.restart(name)
        return left

    def expire_session(self, name: str) -> float:
        path = session_path(self.cluster.directories[name])
        return expire_session(
            self.cluster.zk_hosts,
            self.cluster.nodes[name],
            lambda: open(path, encoding="utf-8").read(),
            session_timeout=SESSION_TIMEOUT,
        )

    # -- faults to the services -----------------------------------------------------------
    def kill_zookeeper_follower(self) -> str:
        followers = self.zookeeper.followers()
        if not followers:
            raise ServiceError("the ZooKeeper ensemble has no follower to kill (no quorum?)")
        self._follower = followers[0].index
        self.zookeeper.kill_member(self._follower)
        return f"ZooKeeper member {self._follower}"

    def restore_zookeeper_follower(self) -> None:
        if self._follower is not None:
            self.zookeeper.restart_member(self._follower)
            self._follower = None

    def kill_datanode(self) -> str:
        self.hdfs.kill_datanode(DATANODE)
        return f"DataNode {DATANODE}"

    def restore_datanode(self) -> None:
        self.hdfs.restart_datanode(DATANODE)

    def pause_datanodes(self) -> str:
        for index in range(len(self.hdfs.datanodes)):
            self.hdfs.pause_datanode(index)
        return f"every DataNode ({len(self.hdfs.datanodes)})"

    def resume_datanodes(self) -> None:
        for index in range(len(self.hdfs.datanodes)):
            self.hdfs.resume_datanode(index)

    def blocks_scheduled(self) -> int | None:
        return blocks_scheduled_at(self.hdfs.ports["namenode_http"] if self.hdfs is not None else None)

    def kill_broker(self) -> str:
        if self.kafka is None:
            raise ServiceError("this drill runs no Kafka broker (the broker fault goes with --workload kafka)")
        self.kafka.kill()
        return "the Kafka broker"

    def restore_broker(self) -> None:
        self.kafka.restart()

    def partition(self, name: str) -> None:
        raise ServiceError("the local target cannot partition a node (no network of its own): use --target compose")

    def heal(self) -> None:
        raise ServiceError("the local target cannot partition a node, nor heal one: use --target compose")

    # -- the end ----------------------------------------------------------------------
    def wait_settled(self, timeout: float = 240.0) -> None:
        self.cluster.wait_settled(timeout=timeout)

    def check(self):
        if self.kafka_workload is None:
            return self.cluster.check()
        beats = self.cluster.heartbeats()
        self.cluster.stop_all()
        return self.kafka_workload.check(
            [os.path.join(directory, "provenance") for directory in self.cluster.directories.values()],
            {name: beat.queued_count for name, beat in beats.items()},
        )
