"""Where the cluster keeps things: ZooKeeper paths and HDFS directories.

ZooKeeper, under `/custody/<cluster>/` (below the client's chroot, if any):

    nodes/<incarnation>        ephemeral, JSON heartbeat (`heartbeat.Heartbeat`)
    leader/                    kazoo `Election`
    shards/<shard-id>          persistent, JSON `ownership.ShardOwnership`, CAS only
    plans/<dead incarnation>   persistent, JSON `plans.FailoverPlan`, written before acted on
    counters/incarnation       kazoo `Counter`: the start epoch of every incarnation
    flow                       persistent, the cluster's flow (`flows.FlowSnapshot` JSON),
                               written by a rolling deploy; a node starting an
                               incarnation runs it
    kafka/<processor>/<topic>:<partition>
                               persistent, JSON `kafka_holds.PartitionHold`: the shard
                               that reads a Kafka partition, CAS only

HDFS, under the configured root:

    <root>/<cluster>/shards/<shard-id>/wal/          the shard's FlowFile WAL
    <root>/<cluster>/shards/<shard-id>/swap/         the shard's swap files
    <root>/<cluster>/shards/<shard-id>/flow.json     the flow it was written under
    <root>/<cluster>/shards/<shard-id>-fenced-<e>/   the same, after fencing at epoch e
    <root>/<cluster>/content/<incarnation>/          the content an incarnation wrote
                                                     (`cluster.node.content`)
    <root>/<cluster>/probes/<node>                   a node's write probe before it joins
                                                     (`cluster.failover.preflight`)
    <root>/<cluster>/provenance/node=<node>/hour=<h>/  every node's provenance events as
                                                     Parquet, for Spark
                                                     (`repositories.provenance.parquet_export`)
    <root>/<cluster>/spark/<shard>/<processor>/<batch>-e<epoch>/  a Spark processor's batch,
                                                     staged for its job (`flow.spark.staging`)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

ROOT = "/custody"  # every cluster's znodes are under /custody/<cluster>
DEFAULT_HDFS_ROOT = "/custody"  # and its HDFS directories under <root>/<cluster>, by default there too
FENCED_MARK = "-fenced-"
_EPOCH = re.compile(r"0|[1-9][0-9]*")  # as `str(epoch)` writes it: ASCII digits, no leading zero


class ShardDirectoryName(NamedTuple):
    """What the name of a directory under `shards/` says: the shard, and the epoch it
    was fenced at (None: the directory its first owner created)."""

    shard: str
    fenced_epoch: int | None


@dataclass(frozen=True)
class ClusterLayout:
    cluster: str
    hdfs_root: str = DEFAULT_HDFS_ROOT

    def __post_init__(self) -> None:
        if not self.cluster or "/" in self.cluster:
            raise ValueError(f"a cluster name is one non-empty path segment, not {self.cluster!r}")

    # -- ZooKeeper ----------------------------------------------------------------
    @property
    def root(self) -> str:
        return f"{ROOT}/{self.cluster}"

    @property
    def nodes(self) -> str:
        return f"{self.root}/nodes"

    def node(self, incarnation: str) -> str:
        return f"{self.nodes}/{incarnation}"

    @property
    def leader(self) -> str:
        return f"{self.root}/leader"

    @property
    def shards(self) -> str:
        return f"{self.root}/shards"

    def shard(self, shard_id: str) -> str:
        return f"{self.shards}/{shard_id}"

    @property
    def plans(self) -> str:
        return f"{self.root}/plans"

    def plan(self, plan_id: str) -> str:
        return f"{self.plans}/{plan_id}"

    @property
    def flow(self) -> str:
        return f"{self.root}/flow"

    @property
    def incarnation_counter(self) -> str:
        return f"{self.root}/counters/incarnation"

    def zookeeper_paths(self) -> list[str]:
        """The persistent parents every member ensures at start."""
        return [self.nodes, self.leader, self.shards, self.plans]

    # -- HDFS -----------------------------------------------------------------------
    @property
    def hdfs_shards(self) -> str:
        return f"{self.hdfs_root.rstrip('/')}/{self.cluster}/shards"

    @property
    def hdfs_cluster(self) -> str:
        return f"{self.hdfs_root.rstrip('/')}/{self.cluster}"

    @property
    def hdfs_content(self) -> str:
        return f"{self.hdfs_cluster}/content"

    @property
    def hdfs_provenance(self) -> str:
        return f"{self.hdfs_cluster}/provenance"

    @property
    def hdfs_spark(self) -> str:
        """Where the shards' Spark batches are staged (`flow.spark.staging`), by shard."""
        return f"{self.hdfs_cluster}/spark"

    def probe_file(self, node: str) -> str:
        return f"{self.hdfs_cluster}/probes/{node}"

    def shard_directory(self, shard_id: str) -> str:
        return f"{self.hdfs_shards}/{shard_id}"

    def fenced_directory(self, shard_id: str, epoch: int) -> str:
        return f"{self.hdfs_shards}/{self.shard_directory_name(shard_id, epoch)}"

    @staticmethod
    def shard_directory_name(shard_id: str, fenced_epoch: int | None = None) -> str:
        """`<shard>`, or `<shard>-fenced-<epoch>` once fenced at `fenced_epoch`: the one
        way these names are written, so that `parse_shard_directory_name` reads each
        back. ValueError for a shard or epoch it could not read back (node names rule
        such shards out: `names`)."""
        name = shard_id if fenced_epoch is None else f"{shard_id}{FENCED_MARK}{fenced_epoch}"
        if ClusterLayout.parse_shard_directory_name(name) != (shard_id, fenced_epoch):
            raise ValueError(f"no shard directory is named for shard {shard_id!r} fenced at {fenced_epoch!r}")
        return name

    @staticmethod
    def parse_shard_directory_name(name: str) -> ShardDirectoryName | None:
        """The shard and fenced epoch a directory under `shards/` is named for, or None
        for a name `shard_directory_name` never writes (empty, more than one path
        segment, a fenced mark without a shard or without an epoch as `str` writes it,
        or with a second mark). Fencing picks a shard's current directory by it, so a
        name it takes wrongly would hand a shard another shard's data."""
        if not name or "/" in name:
            return None
        shard, mark, epoch = name.rpartition(FENCED_MARK)
        if not mark:
            return ShardDirectoryName(name, None)
        if not shard or FENCED_MARK in shard or not _EPOCH.fullmatch(epoch):
            return None
        return ShardDirectoryName(shard, int(epoch))

    def path_in_shard(self, location: str, shard_id: str) -> str | None:
        """The part of `location` below a directory of `shard_id` under any of its names
        (the original, or fenced at any epoch): `swap/x` for `.../n1-4-fenced-6/swap/x`;
        None for a location below no directory of the shard. A path recorded before a
        fence renamed the directory is found under the new name by it."""
        prefix = f"{self.hdfs_shards}/"
        if not location.startswith(prefix):
            return None
        name, slash, rest = location[len(prefix) :].partition("/")
        parsed = self.parse_shard_directory_name(name)
        if not slash or parsed is None or parsed.shard != shard_id:
            return None
        return rest

    @staticmethod
    def wal_directory(shard_directory: str) -> str:
        return f"{shard_directory}/wal"

    @staticmethod
    def swap_directory(shard_directory: str) -> str:
        return f"{shard_directory}/swap"

    @staticmethod
    def flow_file(shard_directory: str) -> str:
        """The flow the shard was written under (`flows.FlowSnapshot`, as JSON)."""
        return f"{shard_directory}/flow.json"
