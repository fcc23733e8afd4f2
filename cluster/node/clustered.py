"""A clustered node: the flow, run on every shard the node owns, one incarnation after another.

    node = ClusteredNode(load_node_config("n1.toml"))
    node.run(stop_event)        # until stop_event is set; SIGTERM sets it in `custody node`

Per incarnation (see `cluster.failover.member.ClusterMember` for the order of joining):

* content: a fresh container named after the incarnation, on local disk and HDFS
  (`content`), collected and aged off as it runs (`maintenance`); claims of adopted
  shards are read from HDFS;
* provenance: the node's local repository (kept across incarnations); each event
  file it rolls over is exported to HDFS as Parquet for Spark
  (`replication.provenance_export`, under `ClusterLayout.hdfs_provenance`);
* one `FlowRuntime` per shard: the home shard runs the whole flow, adopted shards
  drain without sources, each with its WAL and swap files on HDFS at its epoch.

Between incarnations everything of the old one is stopped and closed; the local
content of an earlier incarnation is deleted by the next (its claims are on HDFS).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from flow.definition import read_flow_document
from flow.errors import FlowError
from flow.loading import parse_flow
from flow.processors.kafka.ownership import PARTITIONS_SERVICE
from flow.spark.staging import SparkStaging
from replication.provenance_export import ProvenanceExporter, ProvenanceExportThread
from repositories.content import ArchivePolicy
from repositories.provenance import ProvenanceConfig, ProvenanceRepository, RolloverPolicy
from repositories.provenance.config import DEFAULT_AGE_OFF_INTERVAL as PROVENANCE_AGE_OFF_INTERVAL
from repositories.storage.local import make_private_directories

from ..clients import ClientFactory, stop_quietly
from ..core.flows import FlowSnapshot, UnreadableFlow, flow_without_its_file
from ..core.layout import ClusterLayout
from ..core.ownership import ShardState, earlier_owners
from ..core.story import tag
from ..errors import ClusterError, WorkGateClosed, ZooKeeperError, first_line
from ..failover.instruments import FailoverInstruments
from ..failover.member import ClusterMember, MemberConfig
from ..failover.runtime import WalOptions
from ..zk.acl import open_acl_warning
from ..zk.client import is_connected
from ..zk.store import ClusterStore
from .config import NodeConfig
from .content import open_node_content
from .control import Conflict, Invalid, NodeControl, NodeState, OffloadRefused, Unavailable
from .decommission import check_may_connect, connect_node, decommission_node
from .deploy_follower import DeployFollower
from .early_adoption import EarlyPreparations
from .events import NodeEvent, log_events
from .flow_runtime import FlowRuntime
from .kafka_ownership import ClusterPartitions
from .lifecycle import run_incarnations
from .maintenance import DEFAULT_AGE_OFF_INTERVAL, ContentMaintenance
from .measures import NodeMeasures, session_state
from .python_extensions import config_registry
from .run_states import ZooKeeperRunStates
from .shared_services import hdfs_spark_conf, node_services

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)


class ClusteredNode:
    """Lock plan: `_lock` guards `content` and its `_maintenance` (made by the first
    runtime of an incarnation, stopped and closed when it ends) and `member`."""

    def __init__(self, config: NodeConfig, *, events=log_events, storage: Storage | None = None, wal_hooks=None):
        self.config = config
        self.events = events
        self.flow = FlowSnapshot(read_flow_document(config.flow))
        self.registry = config_registry(config)  # NODE.toml [python] extensions; None: the standard one
        self.definition = parse_flow(
            self.flow.document, source=config.flow, parameters=config.parameters, registry=self.registry
        )
        self._adopted_flows: dict[str, object] = {}  # version -> definition, for shards written under another flow
        self.clients = ClientFactory.from_node_config(config)
        self.storage = storage if storage is not None else self.clients.hdfs_storage()
        self.layout = ClusterLayout(config.cluster, config.hdfs_root)
        self.wal_hooks = wal_hooks
        self.provenance = None
        self.provenance_export: ProvenanceExportThread | None = None
        self.services = None
        self.content = None
        self._maintenance: ContentMaintenance | None = None
        self.member: ClusterMember | None = None
        self._stop = threading.Event()
        self._offload = threading.Event()  # set: leave the cluster and stay out until `connect`
        self._offloaded_incarnation: str | None = None
        self._observer = None  # a ZooKeeper client for the admin API's reads
        self._early = EarlyPreparations()  # adopted shards prepared while they are fenced
        self.failover_instruments = FailoverInstruments()  # counted across incarnations
        self._lock = threading.Lock()

    def run(self, stop: threading.Event | None = None, *, once: bool = False) -> int:
        if stop is not None:
            self._stop = stop
        if not self.config.zk_credentials:  # allowed by `insecure = true` only; said once, at start
            log.warning(open_acl_warning(self.config.cluster))
        make_private_directories(self.config.directory)
        export = ProvenanceExportThread(
            ProvenanceExporter(
                self.storage, self.layout.hdfs_provenance, self.config.name, self.config.provenance_export_directory
            )
        )
        self.provenance = ProvenanceRepository(
            ProvenanceConfig(
                containers=(self.config.provenance_directory,),
                rollover=RolloverPolicy(
                    max_age_s=self.config.provenance_rollover_age, max_bytes=self.config.provenance_rollover_bytes
                ),
                max_age_s=self.config.provenance_max_age,
                max_bytes=self.config.provenance_max_bytes,
                # Age off at least four times per retention: the events kept stay within a
                # quarter of the retention of what it says.
                age_off_interval_s=min(PROVENANCE_AGE_OFF_INTERVAL, self.config.provenance_max_age / 4),
            ),
            on_event_file=export.wake,
        )
        export.start(self.provenance)
        self.provenance_export = export
        self.services = node_services(
            self.config.name,
            SparkStaging(self.storage, self.layout.hdfs_spark, self.config.hdfs_url),
            spark_master=self.config.spark_master,
            spark_conf=hdfs_spark_conf(self.config.hdfs_config, self.config.spark_conf),
        )
        self.services.register(PARTITIONS_SERVICE, lambda: ClusterPartitions(self._store))
        # Its part in rolling deploys: offload and connect when its step says so.
        follower = DeployFollower(
            self._store,
            self._running_incarnation,
            lambda: self._offloaded_incarnation,
            self.offload,
            self.connect,
            name=self.config.name,
        ).start()
        try:
            return run_incarnations(
                self._make_member,
                self.events,
                once=once,
                stop=self._stop,
                on_end=self._incarnation_ended,
                hold=self._offload,
                session_directory=self.config.directory,
            )
        finally:
            follower.stop()
            with self._lock:
                observer, self._observer = self._observer, None
            if observer is not None:
                stop_quietly(observer)
            self.services.close()
            # The last events go into an event file and to HDFS before the repository
            # closes (a node that stops for good leaves nothing unexported); if HDFS is
            # away, the next start exports them.
            try:
                self.provenance.sync()
            except Exception:  # noqa: BLE001 - close() still merges what it can
                log.exception("could not roll the last provenance events over before stopping")
            export.stop()
            export.exporter.export_pending(self.provenance)
            self.provenance.close()

    def _make_member(self) -> ClusterMember:
        self._run_cluster_flow()
        config = self.config
        member_config = MemberConfig(
            zk_hosts=config.zk_hosts,
            cluster=config.cluster,
            node=config.name,
            session_timeout=config.session_timeout,
            heartbeat_interval=config.session_timeout / 4,
            hdfs_root=config.hdfs_root,
            admin=config.admin,
            capacity_weight=config.capacity_weight,
            max_threads=config.threads,
            local_directory=config.directory,
            policy=config.policy,
            lead=config.lead,
            wal=WalOptions(
                partitions=config.wal_partitions, checkpoint_interval=config.checkpoint_interval, hooks=self.wal_hooks
            ),
            fence_first_wait=config.fence_first_wait,
            flow=self.flow,
            absent_node_retention=config.absent_node_retention,
            **liveness_options(config),
        )
        member = ClusterMember(
            member_config,
            self.storage,
            self._runtime,
            clients=self.clients,
            instruments=self.failover_instruments,
            on_connected=lambda: self.events(NodeEvent.CONNECTED, node=config.name),
            on_fencing=self._on_fencing,
            on_leases_asked=self._recover_earlier_owners_content,
        )
        with self._lock:
            self.member = member
        return member

    def _on_fencing(self, ownership) -> None:
        """An adoption begins to fence `ownership`'s shard: what can run beside it."""
        with self._lock:
            member, definition, version = self.member, self.definition, self.flow.version
        if member is None:
            return
        me = member.incarnation.id

        def admit() -> None:  # just before a preparation fences anything
            if member.died or member.guard is None or not member.guard.may_work():
                raise WorkGateClosed(f"incarnation {me} may not act: not preparing shard {ownership.shard}")
            member.registry.claim(ownership.shard, me, ownership.epoch)

        try:
            self._early.start(ownership, definition, version, admit, self.services)
        except Exception as error:  # noqa: BLE001 - the shard's runtime prepares it instead
            log.info("preparing shard %s while fencing it failed: %s", ownership.shard, first_line(error, 200))

    def _recover_earlier_owners_content(self, ownership) -> None:
        """While a shard is fenced for adoption, recover the leases of the content files
        its earlier owners (dead) left open, so that its first reads do not wait for it.
        Asked once the fence has asked for the shard's own files: a DataNode recovers
        blocks in the order they were asked for, and the WAL's recovery waits for the
        shard's, its first reads for these."""
        with self._lock:
            content = self.content
        if content is not None:
            for owner in earlier_owners(ownership):
                content.recover_dead_writer(owner)

    def _run_cluster_flow(self) -> None:
        """Before an incarnation starts: run the flow deployed to the cluster, if one was
        and it differs from this node's. A shard written under the old flow keeps it
        (its adopters run it with that flow), so no queue that holds FlowFiles is lost.
        A deployed flow this node cannot run (a processor type it lacks) is logged,
        and the node keeps its own."""
        try:
            deployed = self._store().cluster_flow()
        except (ClusterError, ValueError) as error:
            log.warning(
                "could not read the cluster's flow (%s); running flow version %s",
                first_line(error, 200),
                self.flow.version,
            )
            return
        if deployed is None or deployed.version == self.flow.version:
            return
        try:
            definition = parse_flow(
                deployed.document,
                parameters=self.config.parameters,
                source=f"the cluster's flow (version {deployed.version})",
                registry=self.registry,
            )
        except FlowError as error:
            log.error(
                "cannot run the cluster's flow version %s: %s; this node keeps version %s",
                deployed.version,
                first_line(error, 300),
                self.flow.version,
            )
            return
        log.info("running the cluster's flow version %s (was %s)", deployed.version, self.flow.version)
        with self._lock:
            self.flow, self.definition = deployed, definition

    def _runtime(self, handle) -> FlowRuntime:
        with self._lock:
            member = self.member
            if self.content is None:
                archive = ArchivePolicy(
                    enabled=self.config.archive,
                    max_retention_s=self.config.archive_retention,
                    max_usage=self.config.archive_max_usage,
                )
                # Through the incarnation's storage: its death abandons the content's files.
                self.content = open_node_content(
                    member.storage, self.layout, member.incarnation, self.config.content_directory, archive
                )
                # Age off at least four times per retention, as provenance does.
                self._maintenance = ContentMaintenance(
                    self.content,
                    age_off_interval=min(DEFAULT_AGE_OFF_INTERVAL, max(1.0, self.config.archive_retention / 4)),
                    name=f"content-maintenance {member.incarnation}",
                    retire=self.content.retire_aged,
                )
                self._maintenance.start()
            content = self.content
        definition, version = self._definition_for(handle)
        early = None if handle.home else self._early.take(handle.shard, handle.ownership.epoch, version)
        return FlowRuntime(
            handle,
            definition,
            content,
            self.provenance,
            threads=self.config.threads,
            incarnation=member.incarnation.id,
            events=self.events,
            services=self.services,
            flow_version=version,
            run_states=ZooKeeperRunStates(lambda: member.store),
            prepared=(early.graph, early.preparation) if early is not None else None,
        )

    def _definition_for(self, handle):
        """The flow a shard runs with: the one it was written under (an adopted shard of
        a node that ran another flow), with this node's parameters; this node's own for
        its home shard, for a shard written under the same flow, and for a shard that
        recorded none. An adopted shard whose `flow.json` is missing or unreadable (an
        earlier release wrote it in place, and its owner died before the sync) runs as
        `core.flows.flow_without_its_file` decides, and the plan's notes say so. A flow
        this node cannot parse (a processor type it lacks) fails the adoption, and the
        shard is held for an operator, with the reason (`core.adoption_failures`)."""
        with self._lock:
            own = (self.definition, self.flow.version)
            known = dict(self._adopted_flows)
        if handle.home:
            return own
        try:
            snapshot, problem = handle.flow_snapshot(), None
        except UnreadableFlow as error:
            snapshot, problem = None, str(error)
        if snapshot is None:
            choice = flow_without_its_file(
                problem=problem, recorded=handle.ownership.flow, own=own[1], known=known, queued=handle.queued_flowfiles
            )
            if choice.note is not None:
                handle.plan_notes.append(choice.note)
                (log.warning if choice.warning else log.info)(
                    "%s shard %s: %s", tag(handle.step), handle.shard, choice.note
                )
            return own if choice.version == own[1] else (known[choice.version], choice.version)
        if snapshot.version == own[1]:
            return own
        definition = known.get(snapshot.version)
        if definition is None:
            definition = parse_flow(
                snapshot.document,
                parameters=self.config.parameters,
                source=f"the flow of shard {handle.shard} (version {snapshot.version})",
                registry=self.registry,
            )
            with self._lock:
                self._adopted_flows[snapshot.version] = definition
        log.info(
            "%s shard %s was written under flow version %s, not this node's %s: it runs with that flow",
            tag(handle.step),
            handle.shard,
            snapshot.version,
            own[1],
        )
        return definition, snapshot.version

    def _incarnation_ended(self, member) -> None:
        """The incarnation's content goes with it: closed after an orderly stop; after a
        death abandoned, at once, whatever HDFS does (`NodeContent.abandon`: its files
        are let go unsynced, and whoever adopts its FlowFiles recovers their leases),
        and its maintenance is not waited for (a collect may wait on HDFS, and can
        change nothing there any more: the incarnation's storage refuses it)."""
        self._early.release_all()
        with self._lock:
            content, self.content = self.content, None
            maintenance, self._maintenance = self._maintenance, None
        died = getattr(member, "died", False)
        if maintenance is not None:
            maintenance.stop(timeout=0.0 if died else 30.0)
        if content is not None:
            try:
                if died:
                    content.abandon(f"incarnation {member.incarnation} is dead")
                else:
                    content.close()
            except Exception as error:  # noqa: BLE001 - HDFS down or fenced: the claims are durable already
                log.info("closing the content of %s: %s", member.incarnation, first_line(error, 200))
        # What the incarnation left blocked in HDFS calls (a partition cut its pipelines
        # and its NameNode connection) must not hold the next one's workers.
        renew = getattr(self.storage, "renew_workers", None)
        if renew is not None and (left := renew()):
            log.info(
                "%d HDFS call(s) of %s still blocked: left to end, later calls on fresh workers",
                left,
                member.incarnation,
            )

    # -- what NodeControl sees ----------------------------------------------------------------
    def control(self) -> NodeControl:
        return NodeControl(self)

    def identity(self) -> dict:
        member = self._member()
        incarnation = member.incarnation.id if member is not None and member.incarnation is not None else None
        return {
            "node": self.config.name,
            "kind": "clustered",
            "cluster": self.config.cluster,
            "incarnation": incarnation,
            "flow_version": self.flow.version,
            "admin": self.config.admin or None,
        }

    def _member(self):
        with self._lock:
            return self.member

    def _running_incarnation(self) -> str | None:
        """The incarnation running now (None while starting, offloading or stopping)."""
        if self.node_state() != NodeState.RUNNING:
            return None
        member = self._member()
        return member.incarnation.id if member is not None and member.incarnation is not None else None

    def run_states(self) -> ZooKeeperRunStates:
        """Where the operators' processor run states are kept: ZooKeeper, through the
        node's own reader (it answers between incarnations too)."""
        return ZooKeeperRunStates(self._store)

    def operator_store(self):
        """The cluster's operator znodes (`cluster.zk.operator`): the rolling deploy."""
        return self._store().operator

    def node_state(self) -> str:
        if self._stop.is_set():
            return NodeState.STOPPING
        member = self._member()
        if self._offload.is_set():
            alive = member is not None and not member.dead.is_set()
            return NodeState.OFFLOADING if alive or not self.owns_nothing() else NodeState.OFFLOADED
        if member is None or member.incarnation is None or member.dead.is_set():
            return NodeState.STARTING
        return NodeState.RUNNING

    def readiness(self) -> list[str]:
        state = self.node_state()
        if state != NodeState.RUNNING:
            return [f"the node is {state}"]
        member = self._member()
        reasons = []
        if member.client is None or not is_connected(member.client):
            reasons.append("ZooKeeper is not connected")
        home = member.incarnation.id
        runtime = member.runtimes_now().get(home)
        if runtime is None or getattr(runtime, "engine", None) is None:
            reasons.append(f"its home shard {home} is not recovered and running yet")
        return reasons

    def shard_statuses(self) -> dict[str, dict]:
        member = self._member()
        if member is None:
            return {}
        return {shard: runtime.status() for shard, runtime in member.runtimes_now().items()}

    def engines(self) -> dict[str, object]:
        member = self._member()
        if member is None:
            return {}
        engines = {shard: runtime.running_engine() for shard, runtime in member.runtimes_now().items()}
        return {shard: engine for shard, engine in engines.items() if engine is not None}

    def replay_shard(self) -> str | None:
        """The home shard: adopted shards only drain, and retire when empty."""
        member = self._member()
        if member is None or member.incarnation is None or member.dead.is_set():
            return None
        return member.incarnation.id

    def provenance_repository(self):
        return self.provenance

    def measures(self) -> NodeMeasures:
        member = self._member()
        runtimes = member.runtimes_now() if member is not None else {}
        shards = {
            shard: measures for shard, runtime in runtimes.items() if (measures := runtime.measures()) is not None
        }
        calls = getattr(self.storage, "call_durations", None)  # HdfsStorage's; a test's storage may have none
        return NodeMeasures(
            shards=shards,
            storage_calls=calls.snapshot() if calls is not None else {},
            failover=self.failover_instruments.snapshot(),
            session_state=session_state(member),
        )

    def repository_directories(self) -> dict[str, str]:
        return {"content": self.config.content_directory, "provenance": self.config.provenance_directory}

    def _store(self) -> ClusterStore:
        """A store over the node's own read client, apart from the member's session: it
        answers while the node is offloaded or between incarnations."""
        with self._lock:
            client = self._observer
        if client is None:
            try:
                client = self.clients.start_zookeeper(timeout=5.0)
            except ZooKeeperError as error:
                raise Unavailable(f"ZooKeeper at {self.config.zk_hosts}: {first_line(error, 200)}") from None
            except ClusterError as error:
                raise Unavailable(str(error)) from None
            with self._lock:
                if self._observer is None and not self._stop.is_set():
                    self._observer, client = client, None
                kept = self._observer
            if client is not None:
                stop_quietly(client)
            client = kept
            if client is None:
                raise Unavailable("the node is stopping")
        return ClusterStore(client, self.layout)

    def cluster_status(self):
        store = self._store()
        if not store.connected():
            raise Unavailable(f"ZooKeeper at {self.config.zk_hosts} is not connected; the node keeps trying")
        try:
            return store.status()
        except ZooKeeperError as error:
            raise Unavailable(
                f"reading the cluster from ZooKeeper at {self.config.zk_hosts}: "
                f"{type(error).__name__} {first_line(error, 200)}"
            ) from None

    def check_flow(self, document: dict):
        """The snapshot of `document` if this node can run it (parsed with its own
        parameters); `Invalid` naming the mistake otherwise."""
        snapshot = FlowSnapshot(document)
        try:
            parse_flow(
                document,
                parameters=self.config.parameters,
                source=f"the flow to deploy ({snapshot.version})",
                registry=self.registry,
            )
        except FlowError as error:
            raise Invalid(str(error)) from None
        return snapshot

    def cluster_flow_version(self) -> str | None:
        try:
            deployed = self._store().cluster_flow()
        except ZooKeeperError as error:
            raise Unavailable(
                f"reading the cluster's flow from ZooKeeper at {self.config.zk_hosts}: "
                f"{type(error).__name__} {first_line(error, 200)}"
            ) from None
        return deployed.version if deployed is not None else None

    def publish_flow(self, snapshot) -> None:
        try:
            self._store().set_cluster_flow(snapshot)
        except ZooKeeperError as error:
            raise Unavailable(
                f"writing the cluster's flow to ZooKeeper at {self.config.zk_hosts}: "
                f"{type(error).__name__} {first_line(error, 200)}"
            ) from None

    def offload(self) -> None:
        """Leave the cluster on purpose and stay out: the running incarnation stops
        its shards and deletes its membership znode, so the leader hands every shard to
        the others at once (fenced, at a new epoch), with no session timeout to wait
        for. The process stays up (its admin API answers) until `connect`."""
        if self._offload.is_set():
            return
        member = self._member()
        if member is None or member.incarnation is None or member.dead.is_set():
            raise OffloadRefused(f"node {self.config.name} is {self.node_state()}: it owns no shard to hand over")
        me = member.incarnation.id
        others = [name for name in self.cluster_status().members if name != me]
        if not others:
            raise OffloadRefused(
                f"node {self.config.name} ({me}) is the only member of cluster {self.config.cluster}: "
                "nobody could take its shards over; start another node first"
            )
        self._offloaded_incarnation = me
        log.info("offloading %s: its shards go to %s", me, ", ".join(sorted(others)))
        self._offload.set()

    def owns_nothing(self) -> bool:
        """No shard names the offloaded incarnation as its owner, and none it owned is
        still being adopted (fenced and recovered by its new owner)."""
        me = self._offloaded_incarnation
        if me is None:
            return False
        for shard in self.cluster_status().shards.values():
            if shard.state == ShardState.RETIRED:
                continue
            if shard.owner == me:
                return False
            if shard.state == ShardState.ADOPTING and any(entry.owner == me for entry in shard.history):
                return False
        return True

    def connect(self) -> None:
        """Join again after an offload: a new incarnation, with a new home shard."""
        if not self._offload.is_set():
            raise Conflict(f"node {self.config.name} is {self.node_state()}, not offloaded: nothing to connect")
        check_may_connect(self._store(), self.config.name)  # a decommissioned name is connected first
        log.info("connecting %s again: a new incarnation joins", self.config.name)
        self._offloaded_incarnation = None
        self._offload.clear()

    def decommission_node(self, name: str) -> dict:
        """Decommission node `name` of this cluster (`cluster.node.decommission`)."""
        return decommission_node(self._store(), self.storage, name, requested_by=f"the admin API of {self.config.name}")

    def connect_node(self, name: str) -> dict:
        """Let a decommissioned node `name` join again (`cluster.node.decommission`)."""
        return connect_node(self._store(), self.storage, name)

    def status(self) -> dict:
        return {**self.identity(), "shards": self.shard_statuses()}


def liveness_options(config: NodeConfig) -> dict:
    """Where a member's liveness port listens and what its heartbeat advertises: the
    admin API's bind address, and the host of the address others reach its admin API
    at. None without crash detection, or without an advertised admin address (a port
    the others could not reach would prove nothing)."""
    from urllib.parse import urlsplit

    host = urlsplit(config.admin).hostname if config.admin else None
    if not config.crash_detection or not host or host in ("0.0.0.0", "::"):
        return {"liveness_bind": None}
    return {"liveness_bind": config.admin_bind, "liveness_host": host}
