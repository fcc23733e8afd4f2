"""A real HDFS on loopback: one NameNode and 1 to 3 DataNodes, from Apache Hadoop's jars.

Each daemon is a JVM started from the jars that `install.hadoop_jars()` fetched, with a
conf directory of its own (core-site.xml, hdfs-site.xml, log4j.properties) under the
work directory. The jars on Maven Central do not carry the web applications of a
Hadoop distribution, so each conf directory also holds empty `webapps/` folders: the
HTTP servers (and their /jmx servlet, which the health check reads) start without them.

Settings: those of every HDFS the project runs, which docker-compose.yml's daemons
share, are in `SETTINGS_FILE` (cluster/services/hadoop/hdfs-site.properties, each with
why): heartbeats (DataNodes every 100 ms, since the NameNode hands out block recovery,
the wait in every takeover, only in a heartbeat's reply), a dead DataNode stale after
1 s and avoided, permissions on, closed blocks synced. This harness's own:
* every address is 127.0.0.1 on a port the harness picked;
* the harness's user, who started the NameNode, is its superuser; a node with `[hdfs]
  user` writes as that user;
* safe mode ends as soon as the DataNodes have reported their blocks;
* `dfs.replication` is 2 (1 with a single DataNode). With 3 DataNodes, as the tests and
  the service stack run, one DataNode can die and every new block still finds two live
  DataNodes; with replication equal to the DataNode count, every new pipeline would
  include the dead one until the NameNode declares it dead (16 s) and every commit
  would fail until then.

Warm-up: once its DataNodes have registered (at a start, and after `restart_datanode`),
the harness makes each the primary of a block recovery (`hdfs_warmup`): a DataNode's
first one costs up to seconds, and a takeover should not be the one to pay for it.

Faults: `kill_datanode`, `restart_datanode`, `pause_datanode`, `restart_namenode`.
`java_client(...)` runs Hadoop's own FsShell, a second client independent of hdfs-native.
"""

from __future__ import annotations

import json
import logging
import subprocess
import urllib.request
from pathlib import Path

from .hdfs_client import ensure_client
from .hdfs_warmup import Warmup, warm_block_recovery
from .install import cache_dir, hadoop_jars, java_binary
from .jit import jit_options
from .network import HOST, free_ports, port_open
from .process import ManagedProcess, ServiceError, wait_until

log = logging.getLogger(__name__)

# What a DataNode logs (BlockRecoveryWorker, at INFO) as it begins a block recovery it leads.
RECOVERY_LED = b"calls recoverBlock("

_LOG4J = """log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""


# The settings of every HDFS the project runs, this harness's and docker-compose.yml's
# (cluster/docker/hdfs-site.sh reads the same file): see its header.
SETTINGS_FILE = Path(__file__).parent / "hadoop" / "hdfs-site.properties"
DAEMONS = ("namenode", "datanode", "client")


def shared_settings(daemon: str, path: Path = SETTINGS_FILE) -> dict[str, str]:
    """The settings `path` gives `daemon` (one of DAEMONS): its `name=value` lines, and
    its `<daemon>:name=value` lines. Strict, so that cluster/docker/hdfs-site.sh's plain
    `sed` and `read` make the same of it: no blank inside a line, one value per name."""
    if daemon not in DAEMONS:
        raise ValueError(f"no HDFS daemon {daemon!r}: one of {', '.join(DAEMONS)}")
    settings: dict[str, str] = {}
    seen: set[str] = set()
    for number, text in enumerate(path.read_text().splitlines(), 1):
        line = text.split("#", 1)[0].strip()
        if not line:
            continue
        qualified, equals, value = line.partition("=")
        role, _, name = qualified.rpartition(":")
        if (
            not equals
            or not name
            or not value
            or any(c.isspace() for c in line)
            or role not in ("", "namenode", "datanode")
        ):
            raise ValueError(f"{path}:{number}: not `name=value` or `namenode:`/`datanode:name=value`: {text!r}")
        if qualified in seen or (role and name in seen) or (not role and any(f"{r}:{name}" in seen for r in DAEMONS)):
            raise ValueError(f"{path}:{number}: {name} is set twice")
        seen.add(qualified)
        if role in ("", daemon):
            settings[name] = value
    return settings


def _site(properties: dict[str, object]) -> str:
    body = "".join(
        f"  <property><name>{name}</name><value>{value}</value></property>\n" for name, value in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


# Opened to Hadoop's daemons (the custody image's `hadoop-entrypoint.sh` opens the same).
JAVA_LANG_OPEN = "--add-opens=java.base/java.lang=ALL-UNNAMED"


class HdfsCluster:
    name = "hdfs"

    def __init__(
        self,
        workdir: Path,
        datanodes: int = 3,
        heap: str = "256m",
        settings: dict[str, object] | None = None,
        peak: bool = False,
    ):
        """`settings`: hdfs-site settings of this cluster's own, over the shared ones and
        the harness's, for every daemon (a test's: they are not kept for a later
        `HdfsCluster` of the same work directory). `peak`: the JIT's C2 compiler as well
        as C1 (`jit`)."""
        if not 1 <= datanodes <= 3:
            raise ValueError("the harness runs 1 to 3 DataNodes")
        self.workdir = Path(workdir) / "hdfs"
        self.datanode_count = datanodes
        self.heap = heap
        self.settings = dict(settings or {})
        self.peak = peak
        self.ports: dict[str, int] = {}
        self.namenode: ManagedProcess | None = None
        self.datanodes: list[ManagedProcess] = []
        self._recovery_log_counts: dict[int, tuple[int, int]] = {}  # DataNode -> (log offset, count)
        state = self._load_state()
        if state:
            self.ports = state["ports"]
            self.datanode_count = state["datanodes"]
            self._build_processes(state["pids"])

    # -- addresses ---------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"hdfs://{HOST}:{self.ports['namenode_rpc']}"

    @property
    def replication(self) -> int:
        return min(self.datanode_count, 2)

    @property
    def client_config(self) -> dict[str, str]:
        """Settings for hdfs-native clients of this cluster."""
        return {"dfs.replication": str(self.replication)}

    # -- lifecycle ---------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> None:
        jars = hadoop_jars()
        ensure_client(cache_dir())  # the nodes' client, with the fix its pipeline recovery needs
        if not self.ports:
            self._choose_ports()
            self._build_processes({})
        # Written at every start, not only the first: a restart of an existing work
        # directory runs with the settings of this checkout, not those it was made with.
        self._write_confs()
        self._jars = jars
        name_dir = self.workdir / "namenode" / "name"
        if not (name_dir / "current" / "VERSION").exists():
            self._format()
        self.namenode.start()
        for datanode in self.datanodes:
            datanode.start()
        self._save_state()
        self.wait_healthy(timeout)
        self.warm_block_recovery()

    def wait_healthy(self, timeout: float = 120.0, live_datanodes: int | None = None) -> None:
        expected = self.datanode_count if live_datanodes is None else live_datanodes
        # The daemons this wait counts on; one that exits (a port it could not bind) ends it.
        counted = [d for d in (self.namenode, *(self.datanodes if live_datanodes is None else ())) if d is not None]
        exited: list[ManagedProcess] = []

        def healthy_or_exited() -> bool:
            exited[:] = [daemon for daemon in counted if not daemon.alive()]
            return bool(exited) or (self._live_datanodes() == expected and not self._in_safe_mode())

        try:
            wait_until(
                healthy_or_exited,
                timeout,
                f"the NameNode to leave safe mode with {expected} live DataNode(s)",
                interval=0.25,
            )
        except ServiceError as error:
            tail = self.namenode.log_tail(15) if self.namenode else ""
            raise ServiceError(
                f"HDFS did not become healthy: {error}. NameNode log ({self.namenode.log_path}):\n{tail}"
            ) from None
        if exited:
            daemon = exited[0]
            tail = daemon.log_tail(15, from_last=r"ERROR|Exception")
            raise ServiceError(
                f"HDFS did not become healthy: its {daemon.name} exited. Its log ({daemon.log_path}):\n{tail}"
            )

    def running_datanodes(self) -> int:
        """DataNodes whose process runs (a killed one stays down until restarted)."""
        return sum(1 for datanode in self.datanodes if datanode.alive())

    def healthy(self) -> bool:
        try:
            return self._live_datanodes() == self.datanode_count and not self._in_safe_mode()
        except Exception:  # noqa: BLE001
            return False

    def stop(self) -> None:
        for datanode in self.datanodes:
            datanode.stop()
        if self.namenode:
            self.namenode.stop()

    def status(self) -> dict:
        return {
            "url": self.url,
            "namenode_pid": self.namenode.pid if self.namenode else None,
            "datanode_pids": [d.pid for d in self.datanodes],
            "live_datanodes": self._safe(self._live_datanodes),
            "healthy": self.healthy(),
        }

    # -- faults ------------------------------------------------------------------
    def kill_datanode(self, index: int) -> None:
        self.datanodes[index].kill()

    def pause_datanode(self, index: int) -> None:
        self.datanodes[index].pause()

    def resume_datanode(self, index: int) -> None:
        self.datanodes[index].resume()

    def restart_datanode(self, index: int, timeout: float = 60.0) -> None:
        datanode = self.datanodes[index]
        datanode.stop()
        datanode.start()
        self._save_state()
        # The NameNode counts the old incarnation as live for a second or two, and the
        # new process opens its ports about a second before it has registered and
        # loaded its storage: a block recovery or a write pipeline that reaches it then
        # stalls (a takeover right after this returned took 1.5 s instead of 0.4 s).
        # Back in service is what the compose healthcheck reads: registered, and the
        # active NameNode heard.
        wait_until(
            lambda: self._safe(lambda: self.datanode_registered(index)),
            timeout,
            f"DataNode {index} to register with the NameNode again",
        )
        # Other DataNodes may still be down on purpose: wait for the ones that run.
        self.wait_healthy(timeout, live_datanodes=self.running_datanodes())
        self.warm_block_recovery()

    def warm_block_recovery(self) -> Warmup | None:
        """Make every running DataNode the primary of a block recovery once
        (`hdfs_warmup`), so that the first takeover after a start does not pay for
        their first InterDatanodeProtocol calls. None with fewer than two running.
        A warm-up that fails is logged, not raised: it only saves time."""
        running = [index for index, datanode in enumerate(self.datanodes) if datanode.alive()]
        if len(running) < 2:
            return None

        try:
            warmup = warm_block_recovery(self.url, lambda: [self.recoveries_led(index) for index in running])
        except Exception as error:  # noqa: BLE001
            log.warning("warming the DataNodes' block recovery failed: %s", error)
            return None
        log.info(
            "warmed the DataNodes' block recovery in %.2f s (%d rounds; recoveries led: %s)",
            warmup.seconds,
            warmup.rounds,
            list(warmup.primaries),
        )
        if not warmup.complete:
            log.warning(
                "after %d warm-up rounds, DataNodes %s were never the primary of a block recovery",
                warmup.rounds,
                [running[i] for i, count in enumerate(warmup.primaries) if not count],
            )
        return warmup

    def datanode_registered(self, index: int) -> bool:
        """Whether DataNode `index` (the process running now) has registered with the
        NameNode and heard from it: its own /jmx shows the actor that serves the
        NameNode RUNNING and the NameNode known as active."""
        bean = self._jmx("Hadoop:service=DataNode,name=DataNodeInfo", self.ports[f"dn{index}_http"])
        actors = json.loads(bean.get("BPServiceActorInfo") or "[]")
        return bool(actors) and all(
            actor.get("ActorState") == "RUNNING" and actor.get("NamenodeHaState") == "active" for actor in actors
        )

    def stop_namenode(self) -> None:
        """HDFS down: every client call fails until `start_namenode`."""
        self.namenode.stop()

    def start_namenode(self, timeout: float = 120.0) -> None:
        self.namenode.start()
        self._save_state()
        self.wait_healthy(timeout)
        # Safe mode ends once most blocks have one reported replica; a block whose
        # replicas are not yet reported has no locations, and hdfs-native does not
        # retry such a read. Wait until every block has all of its replicas again.
        wait_until(
            lambda: (
                self._namesystem().get("LowRedundancyBlocks", 1) == 0
                and self._namesystem().get("MissingBlocks", 1) == 0
            ),
            timeout,
            "every block to be reported by its DataNodes after the NameNode restart",
        )

    def restart_namenode(self, timeout: float = 120.0) -> None:
        self.stop_namenode()
        self.start_namenode(timeout)

    def _namesystem(self) -> dict:
        return self._jmx("Hadoop:service=NameNode,name=FSNamesystem")

    def java_client(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        """Run Hadoop's FsShell (`hdfs dfs ...`): the reference Java client, for checks."""
        conf = self.workdir / "client-conf"
        argv = [
            java_binary(),
            "-Xmx256m",
            "-cp",
            f"{conf}:{hadoop_jars()}/*",
            "org.apache.hadoop.fs.FsShell",
            "-fs",
            self.url,
            *args,
        ]
        return subprocess.run(argv, capture_output=True, timeout=timeout)

    # -- internals -----------------------------------------------------------------
    def _jmx(self, query: str, port: int | None = None) -> dict:
        """The first bean `query` names on a daemon's /jmx (the NameNode's by default)."""
        return jmx_bean(port or self.ports["namenode_http"], query)

    def recoveries_led(self, index: int) -> int:
        """Block recoveries DataNode `index` has led (been the primary of), counted in its
        log (the metrics on /jmx are cached for seconds); read on from where the last
        count stopped."""
        path = self.workdir / f"datanode-{index}" / "daemon.log"
        offset, count = self._recovery_log_counts.get(index, (0, 0))
        try:
            with open(path, "rb") as log_file:
                if log_file.seek(0, 2) < offset:
                    offset, count = 0, 0  # a new log: the process was started again
                log_file.seek(offset)
                appended = log_file.read()
        except FileNotFoundError:
            return 0
        whole = appended[: appended.rfind(b"\n") + 1]  # a line still being written counts next time
        count += whole.count(RECOVERY_LED)
        self._recovery_log_counts[index] = (offset + len(whole), count)
        return count

    def live_datanodes_info(self) -> dict[str, dict]:
        """The NameNode's view of each live DataNode (its `LiveNodes` on /jmx): by
        address, with `remaining` (bytes), `blockScheduled` and the rest."""
        return live_datanodes(self.ports["namenode_http"])

    def _live_datanodes(self) -> int:
        if not port_open(self.ports["namenode_rpc"]):
            return -1
        return int(self._jmx("Hadoop:service=NameNode,name=FSNamesystemState").get("NumLiveDataNodes", -1))

    def _in_safe_mode(self) -> bool:
        return bool(self._jmx("Hadoop:service=NameNode,name=NameNodeInfo").get("Safemode"))

    @staticmethod
    def _safe(probe):
        try:
            return probe()
        except Exception:  # noqa: BLE001
            return None

    def _choose_ports(self) -> None:
        names = ["namenode_rpc", "namenode_http"]
        for index in range(self.datanode_count):
            names += [f"dn{index}_data", f"dn{index}_http", f"dn{index}_ipc"]
        self.ports = dict(zip(names, free_ports(len(names)), strict=False))

    def _write_confs(self) -> None:
        core = {"fs.defaultFS": self.url, "hadoop.tmp.dir": self.workdir / "tmp"}
        # This cluster's own: its addresses and directories, its replication, and safe mode.
        own = {
            "dfs.replication": self.replication,
            # Safe mode lasts until the DataNodes have reported (nearly) every block, as in
            # production, so "healthy" after a NameNode restart means blocks can be read;
            # no extension on top, to keep restarts in tests short.
            "dfs.namenode.safemode.threshold-pct": "0.999",
            "dfs.namenode.safemode.extension": "0",
            "dfs.namenode.rpc-address": f"{HOST}:{self.ports['namenode_rpc']}",
            "dfs.namenode.http-address": f"{HOST}:{self.ports['namenode_http']}",
            "dfs.namenode.name.dir": self.workdir / "namenode" / "name",
            "dfs.datanode.hostname": HOST,
        }
        own.update(self.settings)
        self._write_conf("namenode", core, {**shared_settings("namenode"), **own})
        self._write_conf("client-conf", core, {**shared_settings("client"), **own})
        for index in range(self.datanode_count):
            self._write_conf(
                f"datanode-{index}",
                core,
                {
                    **shared_settings("datanode"),
                    **own,
                    "dfs.datanode.data.dir": self.workdir / f"datanode-{index}" / "data",
                    "dfs.datanode.address": f"{HOST}:{self.ports[f'dn{index}_data']}",
                    "dfs.datanode.http.address": f"{HOST}:{self.ports[f'dn{index}_http']}",
                    "dfs.datanode.ipc.address": f"{HOST}:{self.ports[f'dn{index}_ipc']}",
                },
            )

    def _write_conf(self, daemon: str, core: dict, hdfs: dict) -> None:
        conf = self._conf_dir(daemon)
        for webapp in ("hdfs", "datanode", "static", "secondary", "journal"):
            (conf / "webapps" / webapp).mkdir(parents=True, exist_ok=True)
        (conf / "core-site.xml").write_text(_site(core))
        (conf / "hdfs-site.xml").write_text(_site(hdfs))
        (conf / "log4j.properties").write_text(_LOG4J)

    def _conf_dir(self, daemon: str) -> Path:
        return self.workdir / daemon if daemon == "client-conf" else self.workdir / daemon / "conf"

    def _daemon(self, daemon: str, main_class: str, pid: int | None) -> ManagedProcess:
        conf = self._conf_dir(daemon)
        # The DataNode's HTTP server (Jetty) unpacks into a directory of the JVM's temporary
        # directory that only a clean exit removes: under the daemon's own directory, a
        # killed DataNode leaves nothing behind in /tmp.
        scratch = self.workdir / daemon / "tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        argv = [
            java_binary(),
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            *jit_options(self.peak),
            "-Djava.net.preferIPv4Stack=true",
            f"-Djava.io.tmpdir={scratch}",
            # WebHDFS's JSON (Jersey 1 through JAXB) defines classes by reflection, which
            # Java 17 refuses unless java.lang is opened: without it every WebHDFS call
            # answers 500 (ExceptionInInitializerError).
            JAVA_LANG_OPEN,
            "-cp",
            f"{conf}:{hadoop_jars()}/*",
            main_class,
        ]
        return ManagedProcess.attach(
            daemon, argv, str(self.workdir / daemon / "daemon.log"), pid, env={"HADOOP_CONF_DIR": str(conf)}
        )

    def _build_processes(self, pids: dict) -> None:
        self.namenode = self._daemon(
            "namenode", "org.apache.hadoop.hdfs.server.namenode.NameNode", pids.get("namenode")
        )
        self.datanodes = [
            self._daemon(
                f"datanode-{index}", "org.apache.hadoop.hdfs.server.datanode.DataNode", pids.get(f"datanode-{index}")
            )
            for index in range(self.datanode_count)
        ]

    def _format(self) -> None:
        conf = self._conf_dir("namenode")
        argv = [
            java_binary(),
            f"-Xmx{self.heap}",
            "-cp",
            f"{conf}:{hadoop_jars()}/*",
            "org.apache.hadoop.hdfs.server.namenode.NameNode",
            "-format",
            "-force",
            "-nonInteractive",
        ]
        result = subprocess.run(argv, capture_output=True, timeout=180)
        if result.returncode != 0:
            tail = "\n".join(result.stderr.decode(errors="replace").splitlines()[-15:])
            raise ServiceError(f"formatting the NameNode failed (exit {result.returncode}):\n{tail}")

    def _state_path(self) -> Path:
        return self.workdir / "state.json"

    def _save_state(self) -> None:
        pids = {"namenode": self.namenode.pid}
        pids.update({f"datanode-{i}": d.pid for i, d in enumerate(self.datanodes)})
        self._state_path().write_text(json.dumps({"ports": self.ports, "datanodes": self.datanode_count, "pids": pids}))

    def _load_state(self) -> dict | None:
        try:
            return json.loads(self._state_path().read_text())
        except (OSError, ValueError):
            return None


def jmx_bean(http_port: int, query: str, host: str = HOST) -> dict:
    """The first bean `query` names on the /jmx of the Hadoop daemon whose HTTP server
    listens on `host:http_port` ({} when none matches)."""
    with urllib.request.urlopen(f"http://{host}:{http_port}/jmx?qry={query}", timeout=2) as response:
        beans = json.load(response)["beans"]
    return beans[0] if beans else {}


def live_datanodes(http_port: int, host: str = HOST) -> dict[str, dict]:
    """The NameNode's view of each live DataNode (`LiveNodes` of its NameNodeInfo bean),
    by address: `remaining` (bytes), `blockScheduled` and the rest."""
    info = jmx_bean(http_port, "Hadoop:service=NameNode,name=NameNodeInfo", host)
    return json.loads(info.get("LiveNodes") or "{}")


def blocks_scheduled(http_port: int, host: str = HOST) -> int:
    """Blocks the NameNode counts as scheduled on its live DataNodes and not yet
    reported finished, summed over them (each one's `blockScheduled`).

    The NameNode places a new block on a DataNode only if its free space, less its
    block size times this count, still holds the block. The count rolls every 10
    minutes, but a finished block is taken off the older half first, so while blocks
    keep finishing, one that never finishes is never taken off: a replica never
    written (Hadoop 3.4.1 places new blocks on a dead DataNode for up to 6 s), a file
    deleted while its last block was being written. A count that rises round after
    round is such a leak, and a long-running cluster would one day find its DataNodes
    refusing blocks (docs: the cluster page, what the figures need from HDFS)."""
    return sum(int(node.get("blockScheduled", 0)) for node in live_datanodes(http_port, host).values())
