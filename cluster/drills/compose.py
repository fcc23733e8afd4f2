"""The compose drill target: the containers of a running docker compose project of
Custody's cluster (docker-compose.yml), drilled through the Docker API.

    custody drill --target compose [--compose-file docker-compose.yml] [--project custody]

* Node faults: `docker kill` (SIGKILL), `docker kill --signal SIGSTOP` (a hung node,
  SIGCONT to resume: never `docker pause`, whose cgroup freezer can fail to freeze a
  busy container), `docker stop` (SIGTERM, then SIGKILL), and a **network
  partition**: the node's container is disconnected from the project's network, so
  that it loses ZooKeeper, HDFS and the other nodes while its process runs on, then
  connected again under its service name.
* Service faults: `docker kill` of a ZooKeeper follower (found with `srvr` inside each
  member's container), of a DataNode or of the Kafka broker, then `docker start`,
  waiting for its healthcheck.
* Workloads: the nodes' own flow (`files`: examples/cluster.yaml, which the image's
  NODE.toml runs, into the shared volume `custody-out`), or `kafka`
  (`kafka_workload`): the drill makes its topics on the project's broker (the service
  `kafka`, started with `docker compose --profile kafka up -d --wait kafka`) through
  the port it publishes, and rolls examples/kafka-cluster.yaml onto the nodes through
  the admin API (`custody flow deploy`'s call), with the run's topics and the broker
  as the nodes reach it (`kafka:9092`). The nodes run that flow after the drill, until
  another is deployed. The admin token is $CUSTODY_ADMIN_TOKEN (or
  $CUSTODY_ADMIN_TOKEN_FILE), else the one the one-shot service `admin-token` keeps in
  its volume.
* What the nodes did: their `--events` lines from `docker logs`; ZooKeeper through the
  port the project publishes on 127.0.0.1; the sink where the engine keeps the
  project's volume `custody-out` (which needs the engine's user, root); each node's
  provenance read by `provenance_dump` in a one-off container of the node's image,
  with the node's volume mounted where the node has it.

The cluster's name, HDFS root and session timeout come from the NODE.toml inside a
node's container, so the drill watches what the nodes run.
"""

from __future__ import annotations

import os
import time
import tomllib
from datetime import datetime

from ..admin.client import admin_token, deploy_flow
from ..clients import ClientFactory, ZooKeeperSettings, parse_credentials, stop_quietly
from ..core.layout import DEFAULT_HDFS_ROOT, ClusterLayout
from ..node.events import NodeEvent
from ..node.session_file import session_path
from ..services.process import ServiceError, wait_until
from ..zk.store import ClusterStore
from .checker import StoredEvent, check_cluster, event_identity
from .compose_project import ComposeNotRunning, ComposeProject
from .fault_kinds import FAULT_KINDS
from .faults import expire_session
from .flow_cluster import FlowWorkloadViews
from .kafka_workload import KafkaWorkload, WorkloadFeed, run_name
from .sink import SinkDirectory
from .targets import TargetUnavailable, blocks_scheduled_at

NODE_CONFIG = "/etc/custody/node.toml"
NODE_DATA = "/var/lib/custody"  # a node's directory, the volume named after its service
SINK_VOLUME = "custody-out"
HEALTH_DEADLINE = 180.0
WORKLOADS = ("files", "kafka")
FILES_FAULTS = frozenset(kind.name for kind in FAULT_KINDS if kind.name != "broker")
KAFKA_FAULTS = frozenset(kind.name for kind in FAULT_KINDS)
BROKER_PORT = 9092  # the broker's listener for clients in the project's network
BROKER_HOST_PORT = 9094  # its listener for clients on the host, which the project publishes
TOKEN_VOLUME, TOKEN_FILE = "admin-token", "token"  # where the one-shot admin-token keeps the token
DEPLOY_TIMEOUT = 600.0


class ComposeTarget(WorkloadFeed, FlowWorkloadViews):
    """A `DrillTarget` (see `targets`) of a compose project's containers."""

    kind = "compose"
    supported_faults = FILES_FAULTS  # KAFKA_FAULTS for an instance of the Kafka workload

    def __init__(self, project: ComposeProject, workload: str = "files"):
        if workload not in WORKLOADS:
            raise TargetUnavailable(f"unknown workload {workload!r}; workloads: {', '.join(WORKLOADS)}")
        self.project = project
        self.nodes = project.nodes  # node name -> service
        self.names = tuple(self.nodes)
        if not self.names:
            raise TargetUnavailable(
                f"compose project {project.name!r} runs no custody node (no service whose command has --name)"
            )
        config = self._node_config(next(iter(self.nodes.values())))
        zookeeper, hdfs = config.get("zookeeper", {}), config.get("hdfs", {})
        self.session_timeout = float(zookeeper.get("session_timeout", 10.0))
        self.layout = ClusterLayout(zookeeper.get("cluster", "main"), hdfs.get("root", DEFAULT_HDFS_ROOT))
        self._credentials_file = zookeeper.get("credentials_file") or None
        services = project.services()
        self.zookeeper_members = [s for s in services if self._env(s).get("ZOO_MY_ID")]
        self.datanodes = [s for s in services if (project.container(s).attrs["Args"] or [])[-1:] == ["datanode"]]
        self.namenodes = [s for s in services if (project.container(s).attrs["Args"] or [])[-1:] == ["namenode"]]
        published = [s for s in self.zookeeper_members if self._published(s, 2181)]
        if not published:
            raise TargetUnavailable(f"compose project {project.name!r} publishes no ZooKeeper port on the host")
        self._zookeeper_service = published[0]
        self.zk_hosts = f"127.0.0.1:{self._published(published[0], 2181)}"
        self.sink_view = SinkDirectory(project.volume_directory(SINK_VOLUME))
        self.log_location = f"docker compose -p {project.name} logs <service> (nodes: {', '.join(self.nodes.values())})"
        self.client = self.store = None
        self._started_at: dict[str, tuple[float, float]] = {}  # service -> (checked at, process started at)
        self._down: dict[str, str] = {}  # what a service fault took down: kind -> service
        self._cut: tuple[str, list[str]] | None = None  # the partitioned service, its networks
        self.workload = workload
        self.kafka_workload: KafkaWorkload | None = None  # made by start_all
        self._broker = self._find_broker(services) if workload == "kafka" else None
        if self._broker is not None:
            self.supported_faults = KAFKA_FAULTS
            # Where and with what the workload's flow is deployed, known before anything starts.
            self._admin = f"http://127.0.0.1:{self.project.published_port(next(iter(self.nodes.values())), 8080)}"
            self._token = self._admin_token()

    @classmethod
    def from_arguments(cls, arguments) -> ComposeTarget:
        name = (
            getattr(arguments, "project", None)
            or os.environ.get("COMPOSE_PROJECT_NAME")
            or _project_name(arguments.compose_file or "docker-compose.yml")
        )
        try:
            return cls(ComposeProject.attach(name), getattr(arguments, "workload", None) or "files")
        except ComposeNotRunning as error:
            raise TargetUnavailable(str(error)) from None

    # -- life ---------------------------------------------------------------------
    def start_all(self, timeout: float = 90.0) -> None:
        self.client = ClientFactory(
            ZooKeeperSettings(self.zk_hosts, session_timeout=10.0, credentials=self.zookeeper_credentials())
        ).start_zookeeper()
        self.store = ClusterStore(self.client, self.layout)
        for service in self.nodes.values():
            self._thaw(service)
            if self.project.status(service) != "running":
                self.project.start(service)
        self._wait_members(timeout)
        if self._broker is not None and self.kafka_workload is None:
            self._deploy_kafka_flow()
            self._wait_members(timeout)

    def _wait_members(self, timeout: float) -> None:
        for name in self.names:
            wait_until(
                lambda name=name: self.incarnation(name) in self.heartbeats(),
                timeout,
                f"{name} to be a live member of cluster {self.layout.cluster}",
            )

    def _find_broker(self, services: list[str]) -> str:
        """The project's running Kafka broker (the service whose environment names its
        KAFKA_HOST), which publishes its host listener; TargetUnavailable otherwise."""
        brokers = [s for s in services if self._env(s).get("KAFKA_HOST")]
        if not brokers or self.project.status(brokers[0]) != "running":
            raise TargetUnavailable(
                f"the Kafka workload needs the project's Kafka broker, and compose project {self.project.name!r} "
                f"runs none: start it with `docker compose -p {self.project.name} --profile kafka up -d --wait kafka`"
            )
        if self._published(brokers[0], BROKER_HOST_PORT) is None:
            raise TargetUnavailable(f"the Kafka broker {brokers[0]} publishes no port for clients on the host")
        return brokers[0]

    def _deploy_kafka_flow(self) -> None:
        """The Kafka workload's topics, made through the broker's published port, and its
        flow rolled onto every node, as `custody flow deploy` rolls one."""
        broker = self._broker
        workload = KafkaWorkload(f"127.0.0.1:{self._published(broker, BROKER_HOST_PORT)}", run_name(), len(self.names))
        workload.create_topics()
        self.kafka_workload = self.sink_view = workload
        self.work_queue = workload.queue
        document = workload.flow_document(f"{self._env(broker)['KAFKA_HOST']}:{BROKER_PORT}")
        deploy_flow(self._admin, document, timeout=DEPLOY_TIMEOUT, token=self._token)

    def _admin_token(self) -> str:
        """$CUSTODY_ADMIN_TOKEN (or the file $CUSTODY_ADMIN_TOKEN_FILE names), else the
        token the one-shot service admin-token printed and keeps in its volume."""
        token = admin_token()
        if token:
            return token
        path = os.path.join(self.project.volume_directory(TOKEN_VOLUME), TOKEN_FILE)
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read().strip()
        except OSError as error:
            raise TargetUnavailable(
                f"the Kafka workload deploys its flow through the admin API and needs an admin token: "
                f"cannot read {path} ({error.strerror}); set CUSTODY_ADMIN_TOKEN to what "
                f"`docker compose -p {self.project.name} run --rm --no-deps -T admin-token` prints"
            ) from None

    def zookeeper_credentials(self) -> str | None:
        """The nodes' ZooKeeper credentials (`user:password`), read in a node's
        container, where `[zookeeper] credentials_file` names them; None without."""
        if not self._credentials_file:
            return None
        service = next(iter(self.nodes.values()))
        text = self.project.read_file(service, self._credentials_file)
        user, password = parse_credentials(text, f"{self._credentials_file} in {service}")
        return f"{user}:{password}"

    def close(self) -> None:
        """Heal what a stopped drill left broken (a partition, a paused node, a service
        down): the project runs on after the drill, as it was found."""
        if self._cut is not None:
            self.heal()
        for kind, service in list(self._down.items()):
            if self.project.status(service) != "running":
                self.project.start(service)
            self._down.pop(kind, None)
        for service in self.nodes.values():
            self._thaw(service)
        if self.client is not None:
            stop_quietly(self.client)
            self.client = None
        if self.kafka_workload is not None:
            self.kafka_workload.close()

    # -- nodes --------------------------------------------------------------------
    def incarnation(self, name: str) -> str | None:
        joined = self.events(name, NodeEvent.JOINED)
        return joined[-1]["incarnation"] if joined else None

    def leader(self) -> str | None:
        contenders = self.store.contenders_retried()
        for name in self.names:
            if contenders and self.incarnation(name) == contenders[0]:
                return name
        return None

    def events(self, name: str, kind: NodeEvent, **fields) -> list[dict]:
        since = self._process_started(self.nodes[name]) - 1.0
        return [e for e in self.project.events(self.nodes[name], kind, **fields) if e["at"] >= since]

    def logged(self, name: str, text: str) -> list[str]:
        service = self.nodes[name]
        log = self.project.container(service).logs(stdout=False, stderr=True, since=int(self._process_started(service)))
        return [line for line in log.decode(errors="replace").splitlines() if text in line]

    def dump_stacks(self) -> None:
        for service in self.nodes.values():
            if self._thaw(service):
                self.project.signal(service, "SIGUSR1")

    def _thaw(self, service: str) -> bool:
        """Let a node's process run again, whether a drill stopped it (SIGSTOP: the
        engine cannot tell, so a SIGCONT goes to every running node; it changes nothing
        for one that runs) or someone paused its container; whether it is running."""
        status = self.project.status(service)
        if status == "paused":
            self.project.unpause(service)
        if status in ("running", "paused"):
            self.project.signal(service, "SIGCONT")
            return True
        return False

    # -- faults to a node -------------------------------------------------------------
    def kill(self, name: str) -> None:
        service = self.nodes[name]
        if self.project.status(service) == "paused":
            self.project.unpause(service)
        self.project.kill(service)  # SIGKILL ends a stopped process too

    def pause(self, name: str) -> None:
        self.project.signal(self.nodes[name], "SIGSTOP")

    def resume(self, name: str) -> None:
        self.project.signal(self.nodes[name], "SIGCONT")

    def restart(self, *names: str, timeout: float = 90.0) -> None:
        before = {name: self.incarnation(name) for name in names}
        running = [name for name in names if self.project.status(self.nodes[name]) in ("running", "paused")]
        for name in running:
            self.kill(name)
        for service in (self.nodes[name] for name in running):
            wait_until(lambda s=service: self.project.status(s) == "exited", 30, f"{service} to exit")
        for name in names:
            self.launch(name)
        deadline = time.monotonic() + timeout
        for name in names:
            self._joined_again(name, before[name], max(0.0, deadline - time.monotonic()))

    def graceful_restart(self, name: str, timeout: float = 60.0) -> bool:
        service, before = self.nodes[name], self.incarnation(name)
        self.project.stop(service, timeout=timeout)
        container = self.project.container(service)
        container.reload()
        left = container.attrs["State"]["ExitCode"] == 0  # 137: SIGKILLed after the grace period
        self._start(name, before, 90.0)
        return left

    def launch(self, name: str) -> None:
        self.project.start(self.nodes[name])
        self._started_at.pop(self.nodes[name], None)

    def _start(self, name: str, before: str | None, timeout: float) -> None:
        self.launch(name)
        self._joined_again(name, before, timeout)

    def _joined_again(self, name: str, before: str | None, timeout: float) -> None:
        wait_until(
            lambda: self.incarnation(name) not in (None, before), timeout, f"{name} to join again after {before}"
        )

    def expire_session(self, name: str) -> float:
        service = self.nodes[name]
        return expire_session(
            self.zk_hosts,
            _NodeEvents(self, name),
            lambda: self.project.read_file(service, session_path(NODE_DATA)),
            session_timeout=self.session_timeout,
        )

    def partition(self, name: str) -> None:
        service = self.nodes[name]
        self._cut = (service, self.project.disconnect(service))

    def heal(self) -> None:
        if self._cut is not None:
            service, networks = self._cut
            self.project.reconnect(service, networks)
            self._cut = None

    # -- faults to the services -----------------------------------------------------------
    def kill_zookeeper_follower(self) -> str:
        followers = [
            s
            for s in self.zookeeper_members
            if self.project.status(s) == "running"
            and self.project.container(s).exec_run(["custody-probe", "2181", "srvr", "Mode: follower"]).exit_code == 0
        ]
        if not followers:
            raise ServiceError("the ZooKeeper ensemble has no follower to kill (no quorum?)")
        # The member whose port the drill reads ZooKeeper through goes last.
        followers.sort(key=lambda service: service == self._zookeeper_service)
        self.project.kill(followers[0])
        self._down["zookeeper"] = followers[0]
        return followers[0]

    def restore_zookeeper_follower(self) -> None:
        self._restore("zookeeper")

    def kill_datanode(self) -> str:
        victim = self.datanodes[0]
        self.project.kill(victim)
        self._down["datanode"] = victim
        return victim

    def restore_datanode(self) -> None:
        self._restore("datanode")

    def pause_datanodes(self) -> str:
        for service in self.datanodes:
            self.project.signal(service, "SIGSTOP")
        return f"every DataNode ({len(self.datanodes)})"

    def resume_datanodes(self) -> None:
        for service in self.datanodes:
            self.project.signal(service, "SIGCONT")

    def blocks_scheduled(self) -> int | None:
        ports = [self._published(service, 9870) for service in self.namenodes]
        return blocks_scheduled_at(next((port for port in ports if port), None))

    def kill_broker(self) -> str:
        if self._broker is None:
            raise ServiceError("this drill uses no Kafka broker (the broker fault goes with --workload kafka)")
        self.project.kill(self._broker)
        self._down["broker"] = self._broker
        return f"the Kafka broker ({self._broker})"

    def restore_broker(self) -> None:
        self._restore("broker")

    def _restore(self, kind: str) -> None:
        service = self._down.pop(kind, None)
        if service is None:
            return
        self.project.start(service)
        wait_until(lambda: self._health(service) == "healthy", HEALTH_DEADLINE, f"{service} to be healthy again")

    # -- the end ----------------------------------------------------------------------
    def check(self):
        """Stop every node (SIGTERM: each closes its repositories), read the sink and
        every node's provenance from the volumes, then start the nodes again: the
        project runs on after the drill."""
        beats = self.heartbeats()
        for service in self.nodes.values():
            self.project.stop(service, timeout=60)
        wal_counts = {name: beat.queued_count for name, beat in beats.items()}
        try:
            if self.kafka_workload is not None:
                return self.kafka_workload.check([], wal_counts, events=self._provenance())
            return check_cluster(
                [self.sink_view.path], [], source_component="generate", events=self._provenance(), wal_counts=wal_counts
            )
        finally:
            for service in self.nodes.values():
                self.project.start(service)
                self._started_at.pop(service, None)

    def _provenance(self) -> list[StoredEvent]:
        """Every node's provenance events, copies of one event collapsed. A node's
        repository names its directories by absolute path, so each is read in a
        container of the node's image with the node's volume where the node has it."""
        seen: dict[tuple, StoredEvent] = {}
        for service in self.nodes.values():
            printed = self.project.run_beside(
                service, NODE_DATA, ["python3", "-m", "cluster.drills.provenance_dump", f"{NODE_DATA}/provenance"]
            )
            for line in printed.splitlines():
                event = StoredEvent.parse(line)
                seen.setdefault(event_identity(event), event)
        return list(seen.values())

    # -- internals ----------------------------------------------------------------------
    def _process_started(self, service: str) -> float:
        """When the service's container last started (its process's events and log lines
        are those after it); looked up at most once a second."""
        checked, started = self._started_at.get(service, (0.0, 0.0))
        if time.monotonic() - checked > 1.0:
            container = self.project.container(service)
            container.reload()
            started = _timestamp(container.attrs["State"]["StartedAt"])
            self._started_at[service] = (time.monotonic(), started)
        return started

    def _node_config(self, service: str) -> dict:
        result = self.project.container(service).exec_run(["cat", NODE_CONFIG])
        if result.exit_code != 0:
            raise TargetUnavailable(
                f"cannot read {NODE_CONFIG} in {service}: {result.output.decode(errors='replace')[:200]}"
            )
        return tomllib.loads(result.output.decode())

    def _env(self, service: str) -> dict:
        pairs = self.project.container(service).attrs["Config"].get("Env") or []
        return dict(pair.split("=", 1) for pair in pairs if "=" in pair)

    def _published(self, service: str, port: int) -> int | None:
        try:
            return self.project.published_port(service, port)
        except ComposeNotRunning:
            return None

    def _health(self, service: str) -> str:
        container = self.project.container(service)
        container.reload()
        return (container.attrs["State"].get("Health") or {}).get("Status", container.status)


class _NodeEvents:
    """A node's events as `faults.expire_session` reads them (`find`, `wait`)."""

    def __init__(self, target: ComposeTarget, name: str):
        self.target, self.name = target, name

    def find(self, kind: NodeEvent, **fields) -> list[dict]:
        return self.target.events(self.name, kind, **fields)

    def wait(self, kind: NodeEvent, timeout: float = 60.0, **fields) -> dict:
        return wait_until(
            lambda: (found := self.find(kind, **fields)) and found[-1],
            timeout,
            f"{self.name} to report {kind} {fields or ''}",
        )


def _project_name(compose_file: str) -> str:
    """The project a compose file names (its top-level `name`), else its directory's
    name, as Compose itself decides."""
    import yaml

    try:
        with open(compose_file) as handle:
            name = (yaml.safe_load(handle) or {}).get("name")
    except OSError as error:
        raise TargetUnavailable(f"cannot read the compose file {compose_file}: {error.strerror}") from None
    return name or os.path.basename(os.path.dirname(os.path.abspath(compose_file)))


def _timestamp(text: str) -> float:
    """Docker's RFC 3339 time with nanoseconds ("2026-11-24T10:01:02.123456789Z")."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(whole + "+00:00").timestamp() + float(f"0.{fraction or 0}")
