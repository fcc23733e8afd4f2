"""NODE.toml: the configuration of a clustered node (`custody node --config NODE.toml`).

    name = "n1"                      # node name; each run is a new incarnation <name>-<epoch>
    flow = "flow.yaml"               # the flow, relative to this file
    directory = "/var/lib/custody"   # local data: content/, provenance/ (default: beside this file)

    [flow_parameters]                # #{name} in the flow; given: `node`, `data_dir`, and
    out = "/data/out"                # `out` (default <directory>/out)

    [zookeeper]
    hosts = "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"
    chroot = "/prod"                 # optional
    cluster = "main"                 # one ZooKeeper and HDFS root can hold several clusters
    session_timeout = 4.0            # seconds; a dead node is taken over after about this
    credentials_file = "/etc/custody/zookeeper"   # one line `user:password`, mode 0600
                                     # (`custody cluster credentials FILE` makes one); every
                                     # client authenticates with it (digest) and every znode it
                                     # creates is that identity's alone (cluster.zk.acl)
    insecure = false                 # true: allow running without credentials_file, every
                                     # znode world-writable (refused unless said; warned at start)

    [hdfs]
    url = "hdfs://127.0.0.1:8020"
    root = "/custody"
    io_timeout = 20.0                # seconds a write or hsync may take before the file is
                                     # given up (hdfs-native can block forever on a pipeline
                                     # whose DataNode died); the commit then rolls back
    user = "custody"                 # optional: the HDFS user (simple authentication; default:
                                     # the OS user) who owns the cluster's data, 0700/0600
    [hdfs.config]                    # hdfs-native client settings, as strings
    "dfs.client.socket-timeout" = "5000"
    [hdfs.kerberos]                  # optional, a kerberised HDFS (cluster.hdfs_identity)
    principal = "custody/host@REALM" # with keytab: the node runs kinit itself, into
    keytab = "/etc/custody/keytab"   # <directory>/krb5cc, and again every renew_interval s
    ticket_cache = ""                # or alone: a ticket cache kept fresh elsewhere (KRB5CCNAME)
    renew_interval = 3600.0

    [node]
    threads = 4                      # flow task threads per shard
    capacity_weight = 1.0            # relative size, for the leader's choice of survivor
    policy = "whole"                 # "whole" or "divvy": how a dead node's shards move
    lead = true                      # campaign for leadership
    admin = ""                       # the admin API's address others use (heartbeat, links);
                                     # default: the URL it listens on
    wal_partitions = 4               # WAL partitions of each shard (files on HDFS)
    checkpoint_interval = 60.0       # seconds between WAL checkpoints
    fence_first_wait = 0.1           # seconds between lease-recovery polls when adopting,
                                     # for the first 2 s (then doubling): block recovery
                                     # finishes on a DataNode heartbeat, seen this soon
    shutdown_timeout = 30.0          # seconds a stopping node may take to close its files;
                                     # past it, it exits as a crash would (recovery does the rest)
    absent_node_retention = 604800.0 # as leader: seconds (7 days; at least 3600) a node may be
                                     # away before the directories its adopters keep for its
                                     # sources' hand-over are deleted, with a warning
                                     # (cluster.core.decommission)

    [content]                        # this node's content, local and on HDFS (NiFi's archive)
    archive = true                   # keep unreferenced content for a while; false: delete it at once
    archive_retention = 10800.0      # seconds unreferenced content stays archived
    archive_max_usage = 0.9          # fraction of the local disk above which the archive is
                                     # aged off early, and new writes are refused

    [provenance]
    max_age = 86400.0                # seconds provenance events are kept
    max_bytes = 10737418240          # bytes of event files kept

    [spark]                          # the node's Spark session, started by the first Spark processor
    master = "local[*]"              # embedded; or spark://host:7077 for a standalone cluster
    [spark.conf]                     # any Spark setting, as strings (the node passes its
    "spark.executor.memory" = "1g"   # [hdfs.config] on as spark.hadoop.<key> under these)

    [admin]                          # the REST admin API (cluster.admin), in the node's process
    enabled = true
    bind = "127.0.0.1"               # another address needs `tokens`
    port = 8080                      # 0: any free port
    tokens = ""                      # token file, relative to this file (custody admin token)
    tls_cert = ""                    # PEM certificate and key: HTTPS (both or neither)
    tls_key = ""
    allowed_hosts = []               # names it answers to besides its bind address and
                                     # [node] admin (a Host header naming another is refused)

Unknown keys are refused by name: a misspelt setting must not be silently ignored.
The defaults shown are those of the modules that use them (`cluster.clients`,
`repositories.flowfile`, `flow.engine`, `cluster.core`, `cluster.failover.fencing`):
each default is set in one place.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field

from flow.engine import DEFAULT_THREADS
from flow.spark.session import LOCAL_MASTER
from replication.hdfs_storage import DEFAULT_IO_TIMEOUT
from repositories.content.format import DEFAULT_ARCHIVE_MAX_USAGE, DEFAULT_ARCHIVE_RETENTION_S
from repositories.flowfile import DEFAULT_CHECKPOINT_INTERVAL, DEFAULT_PARTITIONS
from repositories.provenance.config import DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES

from ..clients import DEFAULT_SESSION_TIMEOUT
from ..core.decommission import DEFAULT_ABSENT_NODE_RETENTION
from ..core.heartbeat import DEFAULT_CAPACITY_WEIGHT

DEFAULT_ADMIN_BIND = "127.0.0.1"
DEFAULT_ADMIN_PORT = 8080
MAX_THREADS = 1024  # task threads per shard: beyond, a slip (each is an OS thread), not a plan
# A node restarting (a reboot, an upgrade) must find what was kept for it: an hour at least;
# and past ten years is a slip, not a plan (decommission a node that is gone for good).
MIN_ABSENT_NODE_RETENTION, MAX_ABSENT_NODE_RETENTION = 3600.0, 10 * 365 * 86400.0
from ..core.layout import DEFAULT_HDFS_ROOT
from ..core.names import RULE, node_name_problem
from ..clients import read_credentials_file
from ..hdfs_identity import DEFAULT_RENEW_INTERVAL, HdfsIdentity, HdfsIdentityError, KerberosSettings
from ..core.planner import DEFAULT_POLICY, POLICIES
from ..zk.acl import credentials_required
from ..errors import ConfigurationRefused, ZooKeeperAccessRefused
from ..failover.fencing import DEFAULT_FIRST_WAIT
from .shutdown_deadline import DEFAULT_SHUTDOWN_TIMEOUT


class NodeConfigError(ConfigurationRefused):
    """NODE.toml is missing, unreadable or wrong; the message names the setting."""


@dataclass(frozen=True)
class NodeConfig:
    name: str
    flow: str
    directory: str
    zk_hosts: str
    cluster: str
    hdfs_url: str
    session_timeout: float = DEFAULT_SESSION_TIMEOUT
    zk_credentials: str = field(default="", repr=False)
    hdfs_root: str = DEFAULT_HDFS_ROOT
    hdfs_config: dict = field(default_factory=dict)
    hdfs_io_timeout: float = DEFAULT_IO_TIMEOUT
    hdfs_identity: HdfsIdentity = HdfsIdentity()
    flow_parameters: dict = field(default_factory=dict)
    threads: int = DEFAULT_THREADS
    capacity_weight: float = DEFAULT_CAPACITY_WEIGHT
    policy: str = DEFAULT_POLICY
    lead: bool = True
    admin: str = ""
    wal_partitions: int = DEFAULT_PARTITIONS
    checkpoint_interval: float = DEFAULT_CHECKPOINT_INTERVAL
    fence_first_wait: float = DEFAULT_FIRST_WAIT
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    absent_node_retention: float = DEFAULT_ABSENT_NODE_RETENTION
    archive: bool = True
    archive_retention: float = DEFAULT_ARCHIVE_RETENTION_S
    archive_max_usage: float = DEFAULT_ARCHIVE_MAX_USAGE
    provenance_max_age: float = DEFAULT_MAX_AGE
    provenance_max_bytes: int = DEFAULT_MAX_BYTES
    admin_enabled: bool = True
    admin_bind: str = DEFAULT_ADMIN_BIND
    admin_port: int = DEFAULT_ADMIN_PORT
    admin_tokens: str = ""
    admin_tls_cert: str = ""
    admin_tls_key: str = ""
    admin_allowed_hosts: tuple[str, ...] = ()
    spark_master: str = LOCAL_MASTER
    spark_conf: dict = field(default_factory=dict)
    path: str = ""

    @property
    def content_directory(self) -> str:
        return os.path.join(self.directory, "content")

    @property
    def provenance_directory(self) -> str:
        return os.path.join(self.directory, "provenance")

    @property
    def provenance_export_directory(self) -> str:
        """Markers of the provenance event files exported to HDFS as Parquet."""
        return os.path.join(self.directory, "provenance-export")

    @property
    def parameters(self) -> dict[str, str]:
        return {"node": self.name, "data_dir": self.directory, "out": os.path.join(self.directory, "out"),
                **self.flow_parameters}


_SECTIONS = {
    "": {"name", "flow", "directory", "flow_parameters", "zookeeper", "hdfs", "node", "content", "provenance",
         "admin", "spark"},
    "spark": {"master", "conf"},
    "admin": {"enabled", "bind", "port", "tokens", "tls_cert", "tls_key", "allowed_hosts"},
    "content": {"archive", "archive_retention", "archive_max_usage"},
    "provenance": {"max_age", "max_bytes"},
    "zookeeper": {"hosts", "chroot", "cluster", "session_timeout", "credentials_file", "insecure"},
    "hdfs": {"url", "root", "config", "io_timeout", "user", "kerberos"},
    "node": {"threads", "capacity_weight", "policy", "lead", "admin", "wal_partitions", "checkpoint_interval",
             "fence_first_wait", "shutdown_timeout", "absent_node_retention"},
}


def load_node_config(path: str, *, name: str | None = None, directory: str | None = None) -> NodeConfig:
    """NODE.toml at `path`; `name` and `directory` (absolute, or relative to the file)
    replace the file's own, so that one file can serve several nodes."""
    try:
        with open(path, "rb") as file:
            body = tomllib.load(file)
    except FileNotFoundError:
        raise NodeConfigError(f"{path}: no such node configuration file") from None
    except tomllib.TOMLDecodeError as error:
        raise NodeConfigError(f"{path}: not valid TOML: {error}") from None
    if name is not None:
        body["name"] = name
    if directory is not None:
        body["directory"] = directory
    return parse_node_config(body, path)


def parse_node_config(body: dict, path: str = "NODE.toml") -> NodeConfig:
    def fail(message: str):
        raise NodeConfigError(f"{path}: {message}")

    for section, known in _SECTIONS.items():
        table = body if not section else body.get(section, {})
        if not isinstance(table, dict):
            fail(f"[{section}] must be a table")
        unknown = sorted(set(table) - known)
        if unknown:
            where = f"[{section}]" if section else "the top level"
            fail(f"unknown setting(s) {unknown} in {where}; known: {sorted(known)}")
    zookeeper, hdfs, node = body.get("zookeeper", {}), body.get("hdfs", {}), body.get("node", {})
    content, provenance, admin = body.get("content", {}), body.get("provenance", {}), body.get("admin", {})
    spark = body.get("spark", {})

    def required(table: dict, key: str, section: str) -> str:
        value = table.get(key)
        if not isinstance(value, str) or not value.strip():
            fail(f"{section + ' ' if section else ''}{key} is required (a non-empty string)")
        return value.strip()

    def number(table: dict, key: str, default, kind, section: str, minimum=None, maximum=None):
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
            fail(f"[{section}] {key} must be {'an integer' if kind is int else 'a number'}, not {value!r}")
        if isinstance(value, float) and not math.isfinite(value):  # TOML has nan and inf; no bound refuses nan
            fail(f"[{section}] {key} must be a finite number, not {value!r}")
        if minimum is not None and value < minimum:
            fail(f"[{section}] {key} must be at least {minimum}, not {value!r}")
        if maximum is not None and value > maximum:
            fail(f"[{section}] {key} must be at most {maximum}, not {value!r}")
        return kind(value)

    def flag(table: dict, key: str, default: bool, section: str) -> bool:
        value = table.get(key, default)
        if not isinstance(value, bool):
            fail(f"[{section}] {key} must be true or false, not {value!r}")
        return value

    def fraction(table: dict, key: str, default: float, section: str) -> float:
        value = number(table, key, default, float, section, 0.0)
        if value > 1.0:
            fail(f"[{section}] {key} must be a fraction from 0 to 1, not {value!r}")
        return value

    base = os.path.dirname(os.path.abspath(path))
    name = required(body, "name", "")
    problem = node_name_problem(name)
    if problem is not None:
        fail(f"name {name!r} is refused: {problem} (a node name is {RULE})")
    flow = os.path.normpath(os.path.join(base, required(body, "flow", "")))
    directory = os.path.normpath(os.path.join(base, body.get("directory", f"{name}-data")))
    hosts = required(zookeeper, "hosts", "[zookeeper]")
    chroot = zookeeper.get("chroot", "")
    if chroot:
        if not isinstance(chroot, str) or not chroot.startswith("/"):
            fail(f"[zookeeper] chroot must start with '/', not {chroot!r}")
        hosts = hosts + chroot.rstrip("/")
    url = required(hdfs, "url", "[hdfs]")
    if not url.startswith("hdfs://"):
        fail(f"[hdfs] url must be hdfs://host:port, not {url!r}")
    policy = node.get("policy", DEFAULT_POLICY)
    if policy not in POLICIES:
        fail(f"[node] policy must be one of {list(POLICIES)}, not {policy!r}")
    parameters = body.get("flow_parameters", {})
    if not isinstance(parameters, dict):
        fail("[flow_parameters] must be a table of strings")
    hdfs_config = hdfs.get("config", {})
    if not isinstance(hdfs_config, dict):
        fail("[hdfs.config] must be a table of strings")
    lead = flag(node, "lead", True, "node")

    def path_setting(table: dict, key: str, section: str) -> str:
        value = table.get(key, "")
        if not isinstance(value, str):
            fail(f"[{section}] {key} must be a file name (a string), not {value!r}")
        return os.path.normpath(os.path.join(base, value)) if value.strip() else ""

    def zookeeper_credentials(credentials_file: str) -> str:
        # `insecure = true` allows running open; it changes nothing when credentials are given.
        insecure = flag(zookeeper, "insecure", False, "zookeeper")
        if not credentials_file:
            if not insecure:
                fail(credentials_required())
            return ""
        try:
            return read_credentials_file(credentials_file)
        except ZooKeeperAccessRefused as error:
            fail(f"[zookeeper] credentials_file: {error}")

    def hdfs_identity() -> HdfsIdentity:
        kerberos = hdfs.get("kerberos")
        if kerberos is not None:
            if not isinstance(kerberos, dict):
                fail("[hdfs.kerberos] must be a table")
            unknown = sorted(set(kerberos) - {"principal", "keytab", "ticket_cache", "renew_interval"})
            if unknown:
                fail(f"unknown setting(s) {unknown} in [hdfs.kerberos]; known: "
                     "['keytab', 'principal', 'renew_interval', 'ticket_cache']")
            keytab = path_setting(kerberos, "keytab", "hdfs.kerberos")
            cache = kerberos.get("ticket_cache", "")
            if not isinstance(cache, str):
                fail(f"[hdfs.kerberos] ticket_cache must be a string, not {cache!r}")
            kerberos = KerberosSettings(
                principal=str(kerberos.get("principal", "")), keytab=keytab,
                ticket_cache=cache or (f"FILE:{os.path.join(directory, 'krb5cc')}" if keytab else ""),
                renew_interval=number(kerberos, "renew_interval", DEFAULT_RENEW_INTERVAL, float, "hdfs.kerberos"))
        user = hdfs.get("user", "")
        if not isinstance(user, str):
            fail(f"[hdfs] user must be a user name (a string), not {user!r}")
        identity = HdfsIdentity(user=user.strip(), kerberos=kerberos)
        try:
            identity.check()
        except HdfsIdentityError as error:
            fail(str(error))
        return identity

    admin_bind = admin.get("bind", DEFAULT_ADMIN_BIND)
    if not isinstance(admin_bind, str) or not admin_bind.strip():
        fail(f"[admin] bind must be an address (a non-empty string), not {admin_bind!r}")
    admin_port = number(admin, "port", DEFAULT_ADMIN_PORT, int, "admin", 0)
    spark_master = spark.get("master", LOCAL_MASTER)
    if not isinstance(spark_master, str) or not spark_master.strip():
        fail(f"[spark] master must be local[*], local[N] or spark://host:port, not {spark_master!r}")
    spark_conf = spark.get("conf", {})
    if not isinstance(spark_conf, dict):
        fail("[spark.conf] must be a table of strings")
    if admin_port > 65535:
        fail(f"[admin] port must be a TCP port (0 to 65535), not {admin_port!r}")
    admin_allowed_hosts = admin.get("allowed_hosts", [])
    if not isinstance(admin_allowed_hosts, list) or not all(isinstance(h, str) and h.strip()
                                                            for h in admin_allowed_hosts):
        fail(f"[admin] allowed_hosts must be a list of host names, not {admin_allowed_hosts!r}")
    return NodeConfig(
        name=name, flow=flow, directory=directory, zk_hosts=hosts,
        cluster=required(zookeeper, "cluster", "[zookeeper]"), hdfs_url=url,
        session_timeout=number(zookeeper, "session_timeout", DEFAULT_SESSION_TIMEOUT, float, "zookeeper", 1.0),
        zk_credentials=zookeeper_credentials(path_setting(zookeeper, "credentials_file", "zookeeper")),
        hdfs_root=hdfs.get("root", DEFAULT_HDFS_ROOT), hdfs_config={str(k): str(v) for k, v in hdfs_config.items()},
        hdfs_io_timeout=number(hdfs, "io_timeout", DEFAULT_IO_TIMEOUT, float, "hdfs", 1.0),
        hdfs_identity=hdfs_identity(),
        flow_parameters={str(k): str(v) for k, v in parameters.items()},
        threads=number(node, "threads", DEFAULT_THREADS, int, "node", 1, MAX_THREADS),
        capacity_weight=number(node, "capacity_weight", DEFAULT_CAPACITY_WEIGHT, float, "node", 0.0),
        policy=policy, lead=lead, admin=str(node.get("admin", "")),
        wal_partitions=number(node, "wal_partitions", DEFAULT_PARTITIONS, int, "node", 1),
        checkpoint_interval=number(node, "checkpoint_interval", DEFAULT_CHECKPOINT_INTERVAL, float, "node", 1.0),
        fence_first_wait=number(node, "fence_first_wait", DEFAULT_FIRST_WAIT, float, "node", 0.05),
        shutdown_timeout=number(node, "shutdown_timeout", DEFAULT_SHUTDOWN_TIMEOUT, float, "node", 1.0),
        absent_node_retention=number(node, "absent_node_retention", DEFAULT_ABSENT_NODE_RETENTION, float, "node",
                                     MIN_ABSENT_NODE_RETENTION, MAX_ABSENT_NODE_RETENTION),
        archive=flag(content, "archive", True, "content"),
        archive_retention=number(content, "archive_retention", DEFAULT_ARCHIVE_RETENTION_S, float, "content", 0.0),
        archive_max_usage=fraction(content, "archive_max_usage", DEFAULT_ARCHIVE_MAX_USAGE, "content"),
        provenance_max_age=number(provenance, "max_age", DEFAULT_MAX_AGE, float, "provenance", 1.0),
        provenance_max_bytes=number(provenance, "max_bytes", DEFAULT_MAX_BYTES, int, "provenance", 1 << 20),
        admin_enabled=flag(admin, "enabled", True, "admin"), admin_bind=admin_bind.strip(), admin_port=admin_port,
        admin_tokens=path_setting(admin, "tokens", "admin"), admin_tls_cert=path_setting(admin, "tls_cert", "admin"),
        admin_tls_key=path_setting(admin, "tls_key", "admin"),
        admin_allowed_hosts=tuple(host.strip() for host in admin_allowed_hosts),
        spark_master=spark_master.strip(), spark_conf={str(k): str(v) for k, v in spark_conf.items()},
        path=os.path.abspath(path))
