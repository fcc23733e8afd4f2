"""The standalone node: one flow, one shard, local repositories; no ZooKeeper, no HDFS.

    node = StandaloneNode(load_flow("flow.yaml", {"data_dir": d}), d)
    node.start()          # recovers everything the last run left (even after kill -9)
    ...
    node.stop()           # clean: tasks finish their sessions, WAL checkpoint, close

Layout of the data directory:

    node.lock                 one node per data directory (flock)
    run-states.json           the processors an operator stopped (`run_states`): they
                              start stopped after a restart
    shards/local/wal/         the shard's FlowFile write-ahead log
    shards/local/swap/        its swap files
    shards/local/swap-quarantine/  swap files that could not be read, moved aside (never
                              deleted: replace one with a good copy to have it read)
    content/                  the content repository (container "local")
    provenance/               the provenance repository

Start order (recovery): shard (WAL, then swapped queues registered from swap-file
summaries) -> content (claimant counts from every live and swapped claim; orphaned
content destroyed) -> provenance (interrupted merges finished) -> provenance outbox
reconciled -> engine. The clustered node (`cluster.node.clustered`) opens each of its
shards on HDFS the same way (`shard_opening`), and runs the same engine
(`flow.engine.TraditionalEngine`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from flow.definition import FlowDefinition
from flow.engine import DEFAULT_THREADS, TraditionalEngine
from flow.errors import QueueRecoveryError
from flow.graph import FlowGraph
from flow.loading import load_flow
from flow.shard import QueueShard, ShardFiles, ShardRecovery
from flow.spark.session import LOCAL_MASTER
from flow.spark.staging import SparkStaging
from flow.unreadable_swap import DEFAULT_FIRST_RETRY_MS, DEFAULT_MAX_RETRY_MS, RetryBackoff
from flow.workers import SOLE_WORKER, Worker
from repositories.claims import ContentClaim
from repositories.content import (
    LOCAL_PACKED_RESOURCE_SIZE,
    ContentRepositoryConfig,
    ContentRepositoryError,
    open_filesystem_content_repository,
)
from repositories.flowfile import DEFAULT_CHECKPOINT_INTERVAL, DEFAULT_PARTITIONS, WriteAheadLogError
from repositories.provenance import ProvenanceConfig, ProvenanceError, ProvenanceRepository, RolloverPolicy
from repositories.storage import LocalStorage
from repositories.storage.local import make_private_directories
from repositories.swap import SwapError

from ..errors import ClusterError
from .control import Conflict, NodeControl, NodeState, NotFound, OffloadRefused
from .directory_lock import DirectoryLocked, release_directory_lock, take_directory_lock
from .maintenance import DEFAULT_AGE_OFF_INTERVAL, DEFAULT_COLLECT_INTERVAL, ContentMaintenance
from .measures import NodeMeasures, shard_measures
from .run_states import LocalRunStates, RunStatesUnreadable
from .shard_opening import OpenedShard, open_node_shard
from .shared_services import node_services

log = logging.getLogger(__name__)


class NodeError(ClusterError):
    """The node could not start or stop cleanly; the message says why and what to do."""


@dataclass(frozen=True)
class NodeSettings:
    name: str = "standalone"  # what the admin API and the logs call it
    threads: int = DEFAULT_THREADS
    wal_partitions: int = DEFAULT_PARTITIONS
    checkpoint_interval_s: float = DEFAULT_CHECKPOINT_INTERVAL
    collect_interval_s: float = DEFAULT_COLLECT_INTERVAL
    age_off_interval_s: float = DEFAULT_AGE_OFF_INTERVAL
    provenance_rollover_s: float = 30.0
    provenance_outbox: bool = True
    # Start on a FlowFile WAL damaged in a way no crash explains, losing what the damage
    # lost (by default the start is refused: `repositories.flowfile.damage`).
    accept_wal_damage: bool = False
    # A swap file that cannot be read is retried after this, doubling up to the maximum.
    swap_retry_first_s: float = DEFAULT_FIRST_RETRY_MS / 1000
    swap_retry_max_s: float = DEFAULT_MAX_RETRY_MS / 1000
    spark_master: str = LOCAL_MASTER
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    # Which of its node's worker processes this node is (`custody run --workers`,
    # `cluster.node.workers`): its sources take their part of the input by it.
    worker: Worker = SOLE_WORKER


class StandaloneNode:
    """Lock plan: `_lifecycle` serialises start and stop; everything else belongs to
    the engine, the shard and the repositories."""

    def __init__(
        self, definition: FlowDefinition, data_dir: str, settings: NodeSettings | None = None, *, spark_session=None
    ):
        """`spark_session`: a SparkSession the caller owns, for the flow's Spark processors
        (the node leaves it running); by default the node starts its own from `settings`
        when a processor first asks for it, and stops it with the node."""
        self.definition = definition
        self._spark_session = spark_session
        self.data_dir = os.path.abspath(data_dir)
        self.settings = settings or NodeSettings()
        self._lifecycle = threading.Lock()
        self._lock_file = None
        self._maintenance: ContentMaintenance | None = None
        self.shard = self.content = self.provenance = self.engine = self.graph = self.services = None
        self.recovery: dict = {}
        self._run_states = LocalRunStates(self.data_dir, self.settings.name)
        self.started = False
        self.admin_url: str | None = None  # set by whoever serves its admin API

    @classmethod
    def from_file(cls, flow_path: str, data_dir: str, settings: NodeSettings | None = None) -> StandaloneNode:
        data_dir = os.path.abspath(data_dir)
        return cls(load_flow(flow_path, {"data_dir": data_dir}), data_dir, settings)

    def start(self, *, paused: bool = False) -> None:
        """Recover and run. With `paused`, recover only; `resume()` starts the engine."""
        with self._lifecycle:
            if self.started:
                return
            make_private_directories(self.data_dir)
            self._take_directory_lock()
            try:
                self._open_and_recover()
            except BaseException as error:
                self._close_quietly()
                self._release_directory_lock()
                refused = _recovery_refused(self.data_dir, error)
                if refused is not None:
                    raise refused from error
                raise
            self.started = True
            log.info("node recovered %s with flow %r: %s", self.data_dir, self.definition.name, self.recovery)
        if not paused:
            self.resume()

    def resume(self) -> None:
        with self._lifecycle:
            if not self.started or self._maintenance is not None:
                return
            self.engine.start()
            self._maintenance = ContentMaintenance(
                self.content,
                collect_interval=self.settings.collect_interval_s,
                age_off_interval=self.settings.age_off_interval_s,
                name="node-maintenance",
            ).start()

    def _take_directory_lock(self) -> None:
        try:
            self._lock_file = take_directory_lock(self.data_dir)
        except DirectoryLocked as error:
            raise NodeError(str(error)) from None

    def _release_directory_lock(self) -> None:
        release_directory_lock(self._lock_file)
        self._lock_file = None

    def _open_and_recover(self) -> None:
        settings = self.settings
        self.graph = FlowGraph(self.definition)
        shard_directory = os.path.join(self.data_dir, "shards", "local")
        make_private_directories(os.path.dirname(shard_directory))
        started = time.monotonic()
        files = ShardFiles(
            "local",
            LocalStorage(),
            shard_directory,
            partitions=settings.wal_partitions,
            checkpoint_interval=settings.checkpoint_interval_s,
            accept_damage=settings.accept_wal_damage,
        )
        opened = open_node_shard(
            files,
            self.graph.queues.values(),
            foreign=False,
            opened=self._shard_opened,
            content=self._recover_content,
            provenance=self._open_provenance,
            retry_backoff=RetryBackoff(
                round(settings.swap_retry_first_s * 1000), round(settings.swap_retry_max_s * 1000)
            ),
        )
        self.services = node_services(
            settings.name,
            SparkStaging(files.storage, os.path.join(self.data_dir, "spark"), "file://"),
            spark_master=settings.spark_master,
            spark_conf=settings.spark_conf,
            spark_session=self._spark_session,
        )
        stopped = self._run_states.stopped("local")
        if stopped:
            log.info(
                "processors %s start stopped, as an operator left them (%s)",
                ", ".join(sorted(stopped)),
                self._run_states.path,
            )
        self.engine = TraditionalEngine(
            self.graph,
            self.shard,
            self.content,
            self.provenance,
            threads=settings.threads,
            outbox=settings.provenance_outbox,
            services=self.services,
            stopped=stopped,
            worker=settings.worker,
        )
        self.recovery = self._recovery_figures(opened, time.monotonic() - started)
        missing = opened.content.missing
        if missing:
            log.error(
                "content resources referenced by FlowFiles are missing: %s", [r.relative_path for r in missing[:10]]
            )

    def _shard_opened(self, shard: QueueShard) -> None:
        self.shard = shard  # from now on, a failed start closes its WAL (`_close_quietly`)

    def _recover_content(self, shard: QueueShard, shard_report: ShardRecovery):
        """The content repository, recovered from the claims the recovered shard holds."""
        # Damage accepted now, or by `custody wal fsck --accept-damage` since the last
        # start: the content no FlowFile references any more may be a lost FlowFile's.
        damage_reports = shard.wal.damage_reports()
        # Start from a fresh snapshot: the journals the last run left (up to a whole
        # checkpoint interval of them) are not replayed again after the next crash.
        shard.wal.checkpoint()
        # Content syncs once per session commit (group commit), not once per claim;
        # large claims share resource files (`LOCAL_PACKED_RESOURCE_SIZE`).
        self.content = open_filesystem_content_repository(
            {"local": os.path.join(self.data_dir, "content")},
            ContentRepositoryConfig(sync_on_close=False, packed_resource_size=LOCAL_PACKED_RESOURCE_SIZE),
        )
        live_claims = shard_report.live_claims
        if shard_report.swap_files_without_claims:
            # The content some swapped FlowFiles hold is unknown until their swap file is
            # read: every resource present is kept whole, as if claimed once more (until
            # the next start), and the file's own claims are counted when it is read.
            log.warning(
                "%d swap files were registered without their content claims (%s): all content present is "
                "kept until the next start",
                len(shard_report.swap_files_without_claims),
                ", ".join(shard_report.swap_files_without_claims[:3]),
            )
            live_claims = live_claims + [
                ContentClaim(info.resource, 0, info.length)
                for info in self.content.list_resources().values()
                if not info.archived
            ]
        content_report = self.content.recover(live_claims, keep_orphans=bool(damage_reports))
        shard_report.live_claims = []
        shard.claims_found = self._count_claims
        for report in damage_reports:
            shard.wal.damage_handled(report)
        return content_report

    def _open_provenance(self) -> ProvenanceRepository:
        self.provenance = ProvenanceRepository(
            ProvenanceConfig(
                containers=(os.path.join(self.data_dir, "provenance"),),
                rollover=RolloverPolicy(max_age_s=self.settings.provenance_rollover_s),
            )
        )
        return self.provenance

    @staticmethod
    def _recovery_figures(opened: OpenedShard, seconds: float) -> dict:
        """What the start recovered, for the status (`recovery`) and its log line."""
        shard_report, content_report = opened.recovery, opened.content
        wal_report = opened.shard.wal.last_recovery
        return {
            "flowfiles": shard_report.flowfiles,
            "swap_files": shard_report.swap_files,
            "swapped_flowfiles": shard_report.swapped_flowfiles,
            "orphaned_swap_files": len(shard_report.orphaned_swap_files),
            "orphaned_swap_files_kept": len(shard_report.orphaned_swap_files_kept),
            "unreadable_swap_files": len(shard_report.unreadable_swap_files),
            "swap_files_without_claims": len(shard_report.swap_files_without_claims),
            "orphaned_content_resources": len(content_report.destroyed),
            "orphaned_content_bytes_cut": content_report.truncated_bytes,
            "missing_content_resources": len(content_report.missing),
            "wal_cuts": len(wal_report.cuts),
            "wal_damage": len(wal_report.damage),
            "wal_transactions_lost": wal_report.transactions_lost,
            "wal_updates_lost_at_least": wal_report.updates_lost,
            "orphaned_content_resources_kept": len(content_report.kept),
            "orphaned_content_bytes_kept": content_report.kept_bytes,
            "provenance_events_replayed": opened.provenance_replayed,
            "seconds": round(seconds, 3),
        }

    def _count_claims(self, claims) -> None:
        """Claims of a swap file registered without them, read at last: claimants now."""
        for claim in claims:
            self.content.increment(claim)

    def stop(self, timeout: float = 60.0) -> None:
        with self._lifecycle:
            if not self.started:
                return
            self.started = False
            if self._maintenance is not None:
                self.engine.stop(timeout)
                self._maintenance.stop(timeout)
            try:
                self.shard.wal.checkpoint()
            except Exception:  # noqa: BLE001 - the journals still hold everything
                log.exception("final WAL checkpoint failed; the next start replays the journals")
            self._close_quietly()
            self._release_directory_lock()
            log.info("node stopped cleanly")

    def _close_quietly(self) -> None:
        for what, close in (
            ("the WAL", lambda: self.shard.wal.close()),
            ("the provenance repository", lambda: self.provenance.close()),
            ("the content repository", self._close_content),
            ("the shared services", lambda: self.services.close()),
        ):
            try:
                close()
            except AttributeError:
                pass  # never opened
            except Exception:  # noqa: BLE001
                log.exception("closing %s failed", what)

    def _close_content(self) -> None:
        # Retire every resource first (nothing writes any more), so that the collect
        # reclaims the unreferenced ones now rather than at the next start.
        self.content.sync(retire=True)
        self.content.collect()
        self.content.close()

    def status(self) -> dict:
        return {
            "data_dir": self.data_dir,
            "flow": self.definition.name,
            "recovery": self.recovery,
            **(self.engine.status() if self.engine else {}),
        }

    # -- what NodeControl sees ----------------------------------------------------------------
    def control(self) -> NodeControl:
        return NodeControl(self)

    def identity(self) -> dict:
        return {
            "node": self.settings.name,
            "kind": "standalone",
            "data_dir": self.data_dir,
            "flow": self.definition.name,
            "admin": self.admin_url,
        }

    def node_state(self) -> str:
        if not self.started:
            return NodeState.STARTING if self.engine is None else NodeState.STOPPING
        return NodeState.RUNNING if self._maintenance is not None else NodeState.STARTING

    def readiness(self) -> list[str]:
        state = self.node_state()
        return [] if state == NodeState.RUNNING else [f"the node is {state}"]

    def shard_statuses(self) -> dict[str, dict]:
        engine = self.engine
        if engine is None:
            return {}
        return {"local": {"epoch": 0, "home": True, "recovery": dict(self.recovery), **engine.status()}}

    def engines(self) -> dict[str, object]:
        engine = self.engine
        return {"local": engine} if engine is not None and self.started else {}

    def replay_shard(self) -> str | None:
        return "local"

    def run_states(self) -> LocalRunStates:
        """Where the operators' processor run states are kept: a file of the data directory."""
        return self._run_states

    def provenance_repository(self):
        return self.provenance

    def measures(self) -> NodeMeasures:
        engine = self.engine
        return NodeMeasures(shards={"local": shard_measures(engine)} if engine is not None else {})

    def repository_directories(self) -> dict[str, str]:
        return {
            "content": os.path.join(self.data_dir, "content"),
            "provenance": os.path.join(self.data_dir, "provenance"),
            "wal": os.path.join(self.data_dir, "shards"),
        }

    def cluster_status(self):
        raise NotFound(f"the standalone node on {self.data_dir} is in no cluster; `custody node` runs a clustered one")

    def offload(self) -> None:
        raise OffloadRefused(
            f"the standalone node on {self.data_dir} has no cluster to hand its FlowFiles to; "
            "stop it (SIGTERM) and its next start resumes them"
        )

    def owns_nothing(self) -> bool:
        return False

    def connect(self) -> None:
        raise Conflict(f"the standalone node on {self.data_dir} is in no cluster to connect to")

    def decommission_node(self, name: str) -> dict:
        raise NotFound(f"the standalone node on {self.data_dir} is in no cluster: it knows no node {name!r}")

    def connect_node(self, name: str) -> dict:
        raise NotFound(f"the standalone node on {self.data_dir} is in no cluster: it knows no node {name!r}")

    def check_flow(self, document: dict):
        raise Conflict(
            f"the standalone node on {self.data_dir} takes no deploy: restart it with the new flow file "
            "(custody run --flow)"
        )

    publish_flow = check_flow

    def cluster_flow_version(self) -> str | None:
        return self.cluster_status()

    def wait_until(self, predicate, timeout: float, poll: float = 0.05) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(poll)
        return predicate()


# What a start can meet in a data directory, and what recovers it (the error says which file).
_RECOVERY_ERRORS = (
    (WriteAheadLogError, "the FlowFile WAL"),
    (SwapError, "a swap file"),
    (QueueRecoveryError, "the queues"),
    (ContentRepositoryError, "the content repository"),
    (ProvenanceError, "the provenance repository"),
    (RunStatesUnreadable, "the processors' run states"),
    (OSError, "the data directory"),
)


def _recovery_refused(data_dir: str, error: BaseException) -> NodeError | None:
    """A recovery error as the one line `custody run` prints (its own message keeps what
    happened and what to do), or None for anything else (a bug: its trace is wanted)."""
    for kind, what in _RECOVERY_ERRORS:
        if isinstance(error, kind):
            text = " ".join(str(error).split()) or type(error).__name__
            return NodeError(f"cannot recover {what} in {data_dir}: {text}")
    return None
