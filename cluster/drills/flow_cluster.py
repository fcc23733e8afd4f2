"""A cluster of real `custody node` processes running the sample flow
(examples/cluster.yaml), for the failover tests and drills of the flow workload.

Each node gets a NODE.toml and a data directory of its own; all of them deliver to
one sink directory, as nodes deliver to one real destination, where PutFile's
naming by FlowFile identity makes a zombie's half-done delivery and the adopter's
retry one file (`checker.check_cluster` says what counts). Events come from `--events`
(JSON lines on stdout); ownership, plans and heartbeats are read from ZooKeeper.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from cluster.services.process import ServiceError, wait_until

from ..core.ownership import ShardState
from ..node.events import NodeEvent
from .checker import ClusterReport, check_cluster
from .harness import PROJECT_ROOT, SESSION_TIMEOUT, NodeProcess, ProcessCluster, ZooKeeperViews
from .sink import SinkDirectory, SinkView

FLOW = os.path.join(PROJECT_ROOT, "examples", "cluster.yaml")
SWAPPED_QUEUE = "rewrite/success/put"
# A write, hsync or close stuck on a pipeline whose DataNode died is given up after this
# (NODE.toml [hdfs] io_timeout; 20 s by default): hdfs-native 0.14.7's release waited on
# such a pipeline for ever; the nodes' build with custody's fix rebuilds it on the
# DataNodes left (cluster/services/hdfs_client.py), and the deadline stays for what
# nothing answers (a frozen DataNode). The compose nodes run with the same (cluster/docker/custody-node.toml;
# tests/unit/test_hdfs_settings.py), and README "A DataNode's death" says why 1.5 s: a
# healthy hsync took at most 0.5 s in the drills on two loaded cores, and a DataNode's
# death pauses a node's commits for about this long, then one WAL roll.
IO_TIMEOUT = 1.5


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(str(value))


def _shards_in_flight(shards, live: set[str]) -> list:
    """The shards a settled cluster has none of: neither retired nor a live member's
    own home shard (a split shard counts once it has children)."""
    return [
        s
        for s in shards
        if s.state is not ShardState.RETIRED
        and not (s.owner in live and s.shard == s.owner)
        and (s.state is not ShardState.SPLIT or s.children)
    ]


class FlowWorkloadViews(ZooKeeperViews):
    """The sample flow's workload as a drill sees it, wherever the nodes run: queues
    from the heartbeats, shards from ZooKeeper, deliveries from the sink (the
    class that mixes this in gives `store` and `sink_view`: a `SinkDirectory`, or the
    Kafka workload's output topic)."""

    sink_view: SinkView
    work_queue = SWAPPED_QUEUE  # the queue where a node's backlog builds up (the Kafka workload's: its own)

    def prepare_round(self) -> None:
        """Nothing: the nodes' sources make the workload's FlowFiles themselves."""

    def more_work(self) -> bool:
        return False  # a new incarnation makes more

    def sink_duplicates(self) -> dict[str, list[str]]:
        """Checked after every fault (`SinkDirectory.duplicates`)."""
        return self.sink_view.duplicates()

    def delivered(self) -> int:
        return self.sink_view.delivered()

    def queued(self, incarnation: str, queue: str | None = None, *, shard: str | None = None) -> int:
        """What `incarnation` has queued in `queue` (by default `work_queue`) of `shard`
        (by default its home shard)."""
        beat = self.heartbeats().get(incarnation)
        key = f"{shard or incarnation}/{queue or self.work_queue}"
        return beat.queues[key].count if beat is not None and key in beat.queues else 0

    def swapped(self, incarnation: str, queue: str | None = None) -> int:
        """FlowFiles of `queue` in the swap files the WAL of `incarnation`'s home shard
        records, as its admin API says (0 while it cannot say). A listing of the swap
        directory is not that: a file being written is not recorded yet, and a file
        swapped in stays listed until it is deleted."""
        beat = self.heartbeats().get(incarnation)
        if beat is None or not beat.admin:
            return 0
        try:
            with urllib.request.urlopen(f"{beat.admin}/api/v1/node/queues", timeout=5) as answer:
                shards = json.load(answer)
        except urllib.error.HTTPError:
            raise  # it answered, and not as its API says: a bug, not a node still starting
        except OSError:
            return 0
        return next(
            (
                figures["swapped_count"]
                for figures in shards.get(incarnation, [])
                if figures["queue"] == (queue or self.work_queue)
            ),
            0,
        )

    def settled(self) -> bool:
        """Every node's home shard made all its FlowFiles and every queue is empty; every
        shard of a dead incarnation is retired; the sink has all it was sent (a Kafka
        workload's records still unread by the cluster are in no queue)."""
        beats = self.heartbeats()
        if not beats or any(beat.queued_count for beat in beats.values()):
            return False
        return not _shards_in_flight(self.shards(), set(beats)) and not self.sink_view.pending()

    def wait_settled(self, timeout: float = 120.0, quiet: float = 3.0) -> None:
        """Settled, and still settled with nothing new delivered `quiet` seconds later: a
        source that yielded after a failure may not have made all its FlowFiles yet."""
        seen: dict = {}

        def quiescent():
            if not self.settled():
                seen.clear()
                return False
            delivered, now = self.delivered(), time.monotonic()
            if seen.get("delivered") != delivered:
                seen.update(delivered=delivered, since=now)
            return now - seen["since"] >= quiet

        try:
            wait_until(quiescent, timeout, "every FlowFile to be delivered and every dead shard retired")
        except ServiceError as error:
            raise ServiceError(f"{error}; still unsettled: {self.unsettled()}") from error

    def unsettled(self) -> str:
        """What keeps `settled` false, for the message of a settle that timed out: each
        member's queued FlowFiles and its heartbeat's age, each shard not yet retired."""
        try:
            beats, shards = self.heartbeats(), self.shards()
        except Exception as error:  # noqa: BLE001 - the message must still be made
            return f"ZooKeeper could not be read ({type(error).__name__}: {error})"
        now = time.time()
        members = [
            f"{name} {beat.queued_count} queued {sorted(k for k, q in beat.queues.items() if q.count)}, "
            f"heartbeat {now - beat.sent_at:.0f}s old"
            for name, beat in sorted(beats.items())
        ]
        stuck = [
            f"{s.shard} {s.state.name.lower()} owned by {s.owner}" + ("" if s.owner in beats else " (not a member)")
            for s in _shards_in_flight(shards, set(beats))
        ]
        pending = self.sink_view.pending()
        return (
            "; ".join(members or ["no member in ZooKeeper"])
            + (f"; shards: {', '.join(stuck)}" if stuck else "")
            + (f"; {pending} sent and not delivered yet" if pending else "")
        )


_WARNED = re.compile(r" (WARNING|ERROR|CRITICAL) ")


class FlowCluster(ProcessCluster, FlowWorkloadViews):
    """The nodes run secured, as an operator runs them: with ZooKeeper credentials of
    their own (a new identity per cluster), so every znode under the cluster's root is
    theirs alone; `credentials=None` runs them world-open."""

    def __init__(
        self,
        zk_hosts,
        hdfs_url,
        hdfs_root,
        workdir,
        hdfs_config=None,
        *,
        cluster="c1",
        credentials: str | None = "generate",
        sink_view: SinkView | None = None,
    ):
        if credentials == "generate":
            credentials = f"custody-{cluster}:{secrets.token_hex(16)}"
        super().__init__(zk_hosts, hdfs_url, hdfs_root, workdir, hdfs_config, cluster=cluster, credentials=credentials)
        self.directories: dict[str, str] = {}
        self.sink = str(workdir / "sink")
        self.sink_view = sink_view or SinkDirectory(self.sink)
        self._storage = None

    def unsettled(self) -> str:
        """`FlowWorkloadViews.unsettled`, and the last warning or error each node logged:
        why a queue does not drain, in the one message a failed run keeps."""
        lines = [f"{name}'s last warning: {last}" for name, last in sorted(self.last_warnings().items())]
        return "; ".join([super().unsettled(), *lines])

    def last_warnings(self, window: int = 1 << 16) -> dict[str, str]:
        """Each node's last WARNING, ERROR or CRITICAL log line (its first 300 characters)."""
        found: dict[str, str] = {}
        for name, node in self.nodes.items():
            try:
                with open(node.log.name, "rb") as log:
                    log.seek(max(0, os.path.getsize(node.log.name) - window))
                    lines = log.read().decode("utf-8", "replace").splitlines()
            except OSError:
                continue
            last = next((line for line in reversed(lines) if _WARNED.search(line)), None)
            if last is not None:
                found[name] = last[:300]
        return found

    def write_config(
        self,
        name: str,
        *,
        count: int = 300,
        weight: float = 1.0,
        policy: str = "whole",
        threads: int = 2,
        put_batch: int = 10,
        sections: dict[str, dict] | None = None,
        flow: str = FLOW,
        parameters: dict[str, str] | None = None,
    ) -> str:
        """NODE.toml for node `name`, running `flow` (the sample flow by default) with
        more flow `parameters`; `sections` adds tables (e.g. {"content": {"archive": False}})."""
        directory = str(self.workdir / name)
        self.directories[name] = directory
        lines = [
            f"name = {_toml_value(name)}",
            f"flow = {_toml_value(flow)}",
            f"directory = {_toml_value(directory)}",
            "",
            "[flow_parameters]",
            f"count = {_toml_value(str(count))}",
            f"out = {_toml_value(self.sink)}",
            f"put_batch = {_toml_value(str(put_batch))}",
            *(f"{key} = {_toml_value(str(value))}" for key, value in (parameters or {}).items()),
            "",
        ]
        tables = {
            "zookeeper": {
                "hosts": self.zk_hosts,
                "cluster": self.cluster,
                "session_timeout": SESSION_TIMEOUT,
                **({"credentials_file": self.credentials_file} if self.credentials_file else {"insecure": True}),
            },
            "hdfs": {"url": self.hdfs_url, "root": self.hdfs_root, "io_timeout": IO_TIMEOUT},
            "hdfs.config": dict(sorted(self.hdfs_config.items())),
            "node": {
                "threads": threads,
                "capacity_weight": weight,
                "policy": policy,
                "wal_partitions": 1,
                "checkpoint_interval": 30.0,
            },
            "admin": {"port": 0},  # every node's admin API on a free port of its own (heartbeats show which)
        }
        for section, table in (sections or {}).items():
            tables[section] = {**tables.get(section, {}), **table}
        for section, table in tables.items():
            lines += [
                f"[{section}]",
                *(f"{json.dumps(str(key))} = {_toml_value(value)}" for key, value in table.items()),
                "",
            ]
        path = str(self.workdir / f"{name}.toml")
        with open(path, "w") as out:
            out.write("\n".join(lines))
        return path

    def start(self, name: str, *, once: bool = False, **config) -> NodeProcess:
        """Node `name` on `config` (`write_config`); `once`: the process exits when its
        incarnation ends (`custody node --once`) instead of rejoining as a new one."""
        path = (
            self.write_config(name, **config)
            if config or name not in self.directories
            else str(self.workdir / f"{name}.toml")
        )
        argv = [sys.executable, "-m", "cluster.cli", "node", "--config", path, "--events"]
        if once:
            argv.append("--once")
        node = NodeProcess(name, argv, str(self.workdir / f"{name}.log"))
        self.nodes[name] = node
        return node

    def start_joined(self, names, *, timeout: float = 90.0, **config) -> list[NodeProcess]:
        """Start a node for each name with the same `config`; return once each joined."""
        nodes = [self.start(name, **config) for name in names]
        for node in nodes:
            node.wait(NodeEvent.JOINED, timeout=timeout)
        return nodes

    # -- ZooKeeper views (shards, plans, heartbeats: ZooKeeperViews) --------------------------
    def swap_files(self, shard_id: str) -> list[str]:
        if self._storage is None:
            self._storage = self.clients.hdfs_storage()
        directory = self.layout.swap_directory(self.layout.shard_directory(shard_id))
        try:
            return [entry for entry in self._storage.list(directory)]
        except Exception:  # noqa: BLE001 - fenced or collected meanwhile
            return []

    def first_outputs(self, shard: str) -> list[float]:
        return [
            e["at"]
            for node in self.nodes.values()
            for e in node.find(NodeEvent.FIRST_OUTPUT, shard=shard)
            if not e.get("home")
        ]

    # -- checking ------------------------------------------------------------------------
    def dump_stacks(self) -> None:
        """Every running node prints its threads' stacks to its log (SIGUSR1), for the
        post-mortem of a failed round."""
        sizes = {}
        for node in self.nodes.values():
            if node.process.poll() is None:
                sizes[node.name] = os.path.getsize(node.log.name)
                node.process.send_signal(signal.SIGCONT)
                node.process.send_signal(signal.SIGUSR1)
        try:
            wait_until(
                lambda: all(os.path.getsize(self.nodes[name].log.name) > size for name, size in sizes.items()),
                10,
                "the nodes to print their stacks",
            )
        except Exception:  # noqa: BLE001 - a post-mortem aid only
            pass

    def stop_all(self, timeout: float = 60.0) -> None:
        """Stop every node on purpose (SIGTERM: leave the cluster, close the repositories).
        A node still running `timeout` seconds later (past its own shutdown deadline)
        is killed, and the ServiceError raised then names it."""
        for node in self.nodes.values():
            if node.process.poll() is None:
                node.process.send_signal(signal.SIGCONT)
                node.process.terminate()
        deadline = time.monotonic() + timeout
        late = []
        for node in self.nodes.values():
            try:
                node.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                late.append(node.name)
                node.process.kill()
                node.process.wait()
        if late:
            raise ServiceError(
                f"nodes still running {timeout:.0f}s after SIGTERM, killed: {', '.join(late)} "
                "(their logs say what they waited on)"
            )

    def check(self) -> ClusterReport:
        """Once settled: the queues as the heartbeats say, then every node stopped and
        its sink and provenance read."""
        beats = self.heartbeats()
        self.stop_all()
        return check_cluster(
            [self.sink],
            [os.path.join(d, "provenance") for d in self.directories.values()],
            source_component="generate",
            wal_counts={name: beat.queued_count for name, beat in beats.items()},
        )

    def close(self) -> None:
        super().close()
        if self._storage is not None:
            self._storage.close()
