"""Clusters of real node processes on this machine, for drills and failover tests.

* `NodeProcess`: one node process (`custody node --events`, or the ledger node),
  its events (one JSON object per line on its stdout) and its log;
* `ZooKeeperViews`: shards, plans and heartbeats as ZooKeeper holds them now;
* `LedgerCluster`: nodes running the ledger workload (`ledger_runtime`);
  `flow_cluster.FlowCluster`: nodes running the sample flow.

Every wait is on an observed condition (an event, a znode, a file) with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

from cluster.services.process import ServiceError, wait_until

from ..clients import ClientFactory, HdfsSettings, ZooKeeperSettings, stop_quietly
from ..core.heartbeat import Heartbeat
from ..core.layout import ROOT, ClusterLayout
from ..core.ownership import ShardOwnership
from ..core.plans import FailoverPlan
from ..core.validation import ClusterView
from ..errors import ZnodeAccessDenied, ZnodeMissing, ZnodeNotEmpty
from ..node.events import NodeEvent
from ..zk.store import ClusterStore
from ..zk.view import read_cluster_view
from .ledger_runtime import check_ledger

# The directory the node processes run in: the project's root (the parent of the
# `cluster` package), so that `python -m cluster...` finds this very checkout.
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SESSION_TIMEOUT = 4.0
# Bounded client retries and socket timeouts, as a node must configure them: otherwise
# an hsync to a dead DataNode may wait minutes before it fails. The compose nodes run with
# the same (cluster/docker/custody-node.toml; tests/unit/test_hdfs_settings.py).
HDFS_CLIENT = {
    "dfs.client.socket-timeout": "5000",
    "dfs.client.failover.max.attempts": "1",
    "dfs.client.failover.sleep.base.millis": "100",
    "dfs.client.failover.sleep.max.millis": "200",
}


class ExitedFirst:
    """What `NodeProcess.wait` sees when the process exited before the event."""


class NodeProcess:
    def __init__(self, name: str, argv: list[str], log_path: str, *, cwd: str = PROJECT_ROOT):
        self.name = name
        self.events: list[dict] = []
        self._lock = threading.Lock()
        self.log = open(log_path, "a")
        self.process = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        # Every event also goes to <log>.events, for the post-mortem of a failed run.
        with open(self.log.name + ".events", "a") as keep:
            for line in self.process.stdout:
                keep.write(line)
                keep.flush()
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                with self._lock:
                    self.events.append(event)

    def find(self, kind: NodeEvent, **fields) -> list[dict]:
        with self._lock:
            return [e for e in self.events if e["event"] == kind and all(e.get(k) == v for k, v in fields.items())]

    def wait(self, kind: NodeEvent, timeout: float = 60.0, **fields) -> dict:
        """The latest event `kind` with `fields`; a process that exited without it fails
        the wait at once, with its log's last lines."""

        def seen():
            exited = self.process.poll() is not None
            if exited:
                self._reader.join(5)  # the events it printed before it exited
            found = self.find(kind, **fields)
            return found[-1] if found else ExitedFirst if exited else None

        event = wait_until(seen, timeout, f"{self.name}: event {kind} {fields}")
        if event is ExitedFirst:
            raise ServiceError(
                f"{self.name} exited with {self.process.returncode} before event {kind} {fields}\n{self.tail(1500)}"
            )
        return event

    @property
    def incarnation(self) -> str:
        return self.find(NodeEvent.JOINED)[-1]["incarnation"]

    def send(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait()
        self.process.stdout.close()
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self.log.close()

    def tail(self, size: int = 3000) -> str:
        with open(self.log.name, errors="replace") as log:
            return f"---- {self.name} stderr tail ----\n{log.read()[-size:]}"


class ZooKeeperViews:
    """Shards, plans and heartbeats as ZooKeeper holds them now (None when not there
    yet), through `self.store` (a `ClusterStore`)."""

    store: ClusterStore

    def shard(self, shard_id: str) -> ShardOwnership | None:
        try:
            entry = self.store.shards.read(shard_id)
        except Exception:  # noqa: BLE001 - unreadable (yet)
            return None
        return entry[0] if entry is not None else None

    def plan(self, plan_id: str) -> FailoverPlan | None:
        try:
            entry = self.store.plans.read(plan_id)
        except Exception:  # noqa: BLE001
            return None
        return entry[0] if entry is not None else None

    def shards(self) -> list[ShardOwnership]:
        return [value for value, _ in self.store.shards.all().values()]

    def heartbeats(self) -> dict[str, Heartbeat]:
        return self.store.members()

    def cluster_view(self) -> ClusterView:
        """Every znode the protocol's invariants read, in one snapshot (`cluster.zk.view`)."""
        return read_cluster_view(self.store)


def write_credentials_file(workdir, credentials: str) -> str:
    """`credentials` (`user:password`) in a 0600 file in `workdir`, as an operator keeps
    the cluster's ZooKeeper credentials (NODE.toml `[zookeeper] credentials_file`)."""
    os.makedirs(str(workdir), exist_ok=True)
    path = os.path.join(str(workdir), "zookeeper-credentials")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(credentials + "\n")
    return path


class ProcessCluster(ZooKeeperViews):
    """What both kinds of process cluster share: the services' addresses, the nodes,
    a ZooKeeper client of its own, and the close that stops them all."""

    def __init__(
        self,
        zk_hosts: str,
        hdfs_url: str,
        hdfs_root: str,
        workdir,
        hdfs_config=None,
        *,
        cluster: str = "c1",
        credentials: str | None = None,
    ):
        self.zk_hosts, self.hdfs_url, self.hdfs_root = zk_hosts, hdfs_url, hdfs_root
        self.hdfs_config = {**(hdfs_config or {}), **HDFS_CLIENT}
        self.workdir = workdir
        self.cluster = cluster
        self.layout = ClusterLayout(cluster, hdfs_root)
        self.nodes: dict[str, NodeProcess] = {}
        self.credentials_file = write_credentials_file(workdir, credentials) if credentials else None
        self.clients = ClientFactory(
            ZooKeeperSettings(zk_hosts, session_timeout=10.0, credentials=credentials),
            HdfsSettings(hdfs_url, dict(self.hdfs_config)),
        )
        self.client = self.clients.start_zookeeper()
        self.store = ClusterStore(self.client, self.layout)

    def close(self) -> None:
        for node in self.nodes.values():
            node.close()
        if self.credentials_file:
            self._remove_secured_tree()
        stop_quietly(self.client)

    def _remove_secured_tree(self) -> None:
        """Only the identity that made the cluster's znodes can remove them: the
        cluster's root, and the shared parent when it made that and it is empty."""
        for path in (self.layout.root, ROOT):
            try:
                self.store.delete(path, recursive=path != ROOT)
            except (ZnodeMissing, ZnodeNotEmpty, ZnodeAccessDenied):
                pass
            except Exception as error:  # noqa: BLE001 - a lost session leaves them; say so
                print(f"cluster {self.cluster}: could not remove {path} from ZooKeeper: {error!r}", flush=True)
                return

    def tails(self) -> str:
        return "\n".join(node.tail() for node in self.nodes.values())


class LedgerCluster(ProcessCluster):
    """Nodes running the ledger workload (`python -m cluster.drills.ledger_node`), all
    delivering to one sink directory."""

    def __init__(self, zk_hosts, hdfs_url, hdfs_root, workdir, hdfs_config=None, *, cluster: str = "c1"):
        super().__init__(zk_hosts, hdfs_url, hdfs_root, workdir, hdfs_config, cluster=cluster)
        self.sink = str(workdir / "sink")

    def start(self, name: str, *extra: str) -> NodeProcess:
        argv = [
            sys.executable,
            "-m",
            "cluster.drills.ledger_node",
            "--zk",
            self.zk_hosts,
            "--cluster",
            self.cluster,
            "--node",
            name,
            "--hdfs",
            self.hdfs_url,
            "--hdfs-root",
            self.hdfs_root,
            "--sink",
            self.sink,
            "--session-timeout",
            str(SESSION_TIMEOUT),
            *extra,
        ]
        for key, value in sorted(self.hdfs_config.items()):
            argv += ["--hdfs-config", f"{key}={value}"]
        node = NodeProcess(name, argv, str(self.workdir / f"{name}.log"))
        self.nodes[name] = node
        return node

    def admitted_by(self, incarnation: str) -> int:
        try:
            with open(os.path.join(self.sink, "admitted.log")) as file:
                return sum(1 for line in file if line.startswith(incarnation + "."))
        except FileNotFoundError:
            return 0

    def wait_all_finished(self, timeout: float = 90.0) -> dict:
        def settled():
            report = check_ledger(self.sink)
            return report if report["admitted"] and not report["lost"] else None

        return wait_until(settled, timeout, "every admitted record to be finished")
