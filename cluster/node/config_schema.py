"""NODE.toml's schema: every section and key a clustered node's file may hold, each
declared once with its type, allowed values, default, unit and meaning
(`cluster.node.toml_schema`, after ZConfig's component schemas).

`cluster.node.config` reads a file by it into `NodeConfig`, whose defaults are the
ones declared here; `python -m cluster.reference docs/reference` renders it as the
NODE.toml reference page. A default owned by the module that uses the value (the
ZooKeeper client's session timeout, the WAL's partitions) is named here from that
module, and so is a default of another module's dataclass (`field_default`): each
value is set in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from flow.engine import DEFAULT_THREADS
from flow.spark.session import LOCAL_MASTER
from replication.hdfs_storage import DEFAULT_IO_TIMEOUT
from repositories.content.format import DEFAULT_ARCHIVE_MAX_USAGE, DEFAULT_ARCHIVE_RETENTION_S
from repositories.flowfile import DEFAULT_CHECKPOINT_INTERVAL, DEFAULT_PARTITIONS
from repositories.provenance import RolloverPolicy
from repositories.provenance.config import DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES

from ..clients import DEFAULT_SESSION_TIMEOUT
from ..core.decommission import DEFAULT_ABSENT_NODE_RETENTION
from ..core.heartbeat import DEFAULT_CAPACITY_WEIGHT
from ..core.layout import DEFAULT_HDFS_ROOT
from ..core.names import RULE, node_name_problem
from ..core.planner import DEFAULT_POLICY, POLICIES
from ..failover.fencing import DEFAULT_FIRST_WAIT
from ..hdfs_identity import MIN_RENEW_INTERVAL, KerberosSettings
from .shutdown_deadline import DEFAULT_SHUTDOWN_TIMEOUT
from .toml_schema import (
    Choice,
    FileName,
    FileNameList,
    Flag,
    HostList,
    Integer,
    Invalid,
    Key,
    Number,
    Schema,
    Section,
    StringTable,
    Text,
    field_default,
)

DEFAULT_ADMIN_BIND = "127.0.0.1"
DEFAULT_ADMIN_PORT = 8080
MAX_THREADS = 1024  # task threads per shard: beyond, a slip (each is an OS thread), not a plan
# A node restarting (a reboot, an upgrade) must find what was kept for it: an hour at least;
# and past ten years is a slip, not a plan (decommission a node that is gone for good).
MIN_ABSENT_NODE_RETENTION, MAX_ABSENT_NODE_RETENTION = 3600.0, 10 * 365 * 86400.0
# A clustered node rolls its provenance journals over into an event file, which is also
# exported to HDFS for Spark, every 10 s (NiFi's default is 30 s): the events of a
# node reach HDFS about that soon. Shorter than 0.1 s, each event file and export
# would hold a handful of events.
DEFAULT_ROLLOVER_AGE, MIN_ROLLOVER_AGE = 10.0, 0.1
MIN_PROVENANCE_BYTES = 1 << 20


@dataclass(frozen=True)
class NodeName:
    """A node's name, as `cluster.core.names` allows it."""

    table = False

    def convert(self, value, directory):
        name = Text().convert(value, directory)
        problem = node_name_problem(name)
        if problem is not None:
            raise Invalid(f"{name!r} is refused: {problem} (a node name is {RULE})")
        return name

    def describe(self) -> str:
        return f"node name: {RULE}"


SECONDS, BYTES = "seconds", "bytes"

NODE_TOML = Schema(
    (
        Section(
            "",
            help="A clustered node: `custody node --config NODE.toml` (`--name` and `--directory` replace "
            "the file's own, so one file can serve several nodes).",
            keys=(
                Key(
                    "name", NodeName(), "the node's name; each run is a new incarnation `<name>-<epoch>`", field="name"
                ),
                Key("flow", FileName(), "the flow definition", field="flow"),
                Key(
                    "directory",
                    FileName(),
                    "local data: `content/`, `provenance/`",
                    default=None,
                    default_text="`<name>-data` beside this file",
                ),
                Key(
                    "flow_parameters",
                    StringTable(),
                    "values for `#{name}` in the flow; given without being set: `node` "
                    "(the node's name), `data_dir` (its `directory`) and `out` (`<directory>/out`); a value set here "
                    "replaces them",
                    default={},
                    field="flow_parameters",
                ),
            ),
        ),
        Section(
            "zookeeper",
            help="The ZooKeeper ensemble that holds the cluster's membership, ownership and plans.",
            keys=(
                Key("hosts", Text("`host:port,...` (a non-empty string)"), "`host:port,...` of the ensemble"),
                Key(
                    "chroot",
                    Text("a znode path starting with '/'", prefix="/"),
                    "a path below which the cluster lives; the first node to start creates it when missing",
                    default="",
                ),
                Key(
                    "cluster",
                    Text(),
                    "the cluster's name: one ZooKeeper and HDFS root can hold several clusters",
                    field="cluster",
                ),
                Key(
                    "session_timeout",
                    Number(minimum=1.0),
                    "a dead node is taken over after about this; the servers' `maxSessionTimeout` must allow it",
                    default=DEFAULT_SESSION_TIMEOUT,
                    unit=SECONDS,
                    field="session_timeout",
                ),
                Key(
                    "credentials_file",
                    FileName(),
                    "one line `user:password`, mode 0600 (`custody cluster credentials "
                    "FILE` makes one); every client authenticates with it (digest) and every znode it creates is that "
                    "identity's alone",
                    default="",
                ),
                Key(
                    "insecure",
                    Flag(),
                    "true: run without `credentials_file`, every znode world-writable (refused unless "
                    "said; warned at start); with `credentials_file` it changes nothing",
                    default=False,
                ),
            ),
        ),
        Section(
            "hdfs",
            help="The HDFS that holds the cluster's content, write-ahead logs and swap files.",
            keys=(
                Key("url", Text("hdfs://host:port", prefix="hdfs://"), "the NameNode", field="hdfs_url"),
                Key(
                    "root",
                    Text("an HDFS path (a non-empty string)", blank=False),
                    "the cluster's directories are under `<root>/<cluster>`",
                    default=DEFAULT_HDFS_ROOT,
                    field="hdfs_root",
                ),
                Key(
                    "config",
                    StringTable(),
                    "hdfs-native client settings (also passed to Spark as `spark.hadoop.<key>`); "
                    "`dfs.blocksize` is the block size of the files the node creates (16 MiB unless set: "
                    "`replication.block_size` says why)",
                    default={},
                    field="hdfs_config",
                ),
                Key(
                    "io_timeout",
                    Number(minimum=1.0),
                    "how long a write or hsync may take before the file is given up "
                    "(hdfs-native can block forever on a pipeline whose DataNode died); the commit then rolls back",
                    default=DEFAULT_IO_TIMEOUT,
                    unit=SECONDS,
                    field="hdfs_io_timeout",
                ),
                Key(
                    "user",
                    Text("a user name (a string)"),
                    "the HDFS user (simple authentication) who owns the "
                    "cluster's data, 0700/0600; excludes `[hdfs.kerberos]`",
                    default="",
                    default_text="the OS user",
                ),
            ),
        ),
        Section(
            "hdfs.kerberos",
            optional=True,
            help="A kerberised HDFS (`cluster/hdfs_identity.py`): with "
            "`principal` and `keytab` the node logs in itself; with `ticket_cache` alone it uses a cache kept "
            "fresh by something else.",
            keys=(
                Key("principal", Text(), "with `keytab`: the node runs `kinit -k -t` itself", default=""),
                Key("keytab", FileName(), "the principal's keytab, mode 0600", default=""),
                Key(
                    "ticket_cache",
                    Text(),
                    "`KRB5CCNAME` of the node's HDFS clients",
                    default="",
                    default_text="with a keytab `FILE:<directory>/krb5cc`, else none",
                ),
                Key(
                    "renew_interval",
                    Number(),
                    f"time between two logins from the keytab (at least {MIN_RENEW_INTERVAL:g})",
                    default=field_default(KerberosSettings, "renew_interval"),
                    unit=SECONDS,
                ),
            ),
        ),
        Section(
            "node",
            help="The node's share of the cluster's work, and its write-ahead logs.",
            keys=(
                Key(
                    "threads",
                    Integer(1, MAX_THREADS),
                    "flow task threads per shard",
                    default=DEFAULT_THREADS,
                    field="threads",
                ),
                Key(
                    "capacity_weight",
                    Number(minimum=0.0),
                    "the node's relative size, for the leader's choice of survivor: twice the weight, twice the share",
                    default=DEFAULT_CAPACITY_WEIGHT,
                    field="capacity_weight",
                ),
                Key(
                    "policy",
                    Choice(POLICIES),
                    "how a dead node's shards move: `whole` to one survivor, `divvy` spread over several",
                    default=DEFAULT_POLICY,
                    field="policy",
                ),
                Key("lead", Flag(), "campaign for leadership", default=True, field="lead"),
                Key(
                    "crash_detection",
                    Flag(),
                    "a liveness port on the admin API's bind address (a free port), which the other members "
                    "keep a connection to: a crashed node's shards are taken over as soon as its kernel closes "
                    "them, not at its session's expiry (`cluster/core/liveness.py`); needs the admin API's "
                    "address (`admin`)",
                    default=True,
                    field="crash_detection",
                ),
                Key(
                    "admin",
                    Text(),
                    "the admin API's address others use (heartbeat, links), for an address behind NAT or a proxy",
                    default="",
                    default_text="the URL it listens on",
                    field="admin",
                ),
                Key(
                    "wal_partitions",
                    Integer(minimum=1),
                    "WAL partitions of each shard (files on HDFS)",
                    default=DEFAULT_PARTITIONS,
                    field="wal_partitions",
                ),
                Key(
                    "checkpoint_interval",
                    Number(minimum=1.0),
                    "time between WAL checkpoints",
                    default=DEFAULT_CHECKPOINT_INTERVAL,
                    unit=SECONDS,
                    field="checkpoint_interval",
                ),
                Key(
                    "fence_first_wait",
                    Number(minimum=0.05),
                    "time between lease-recovery polls when adopting, for "
                    "the first 2 s (then doubling): block recovery finishes on a DataNode heartbeat, seen this soon",
                    default=DEFAULT_FIRST_WAIT,
                    unit=SECONDS,
                    field="fence_first_wait",
                ),
                Key(
                    "shutdown_timeout",
                    Number(minimum=1.0),
                    "how long a stopping node may take to close its files; "
                    "past it, it exits as a crash would (recovery does the rest)",
                    default=DEFAULT_SHUTDOWN_TIMEOUT,
                    unit=SECONDS,
                    field="shutdown_timeout",
                ),
                Key(
                    "absent_node_retention",
                    Number(MIN_ABSENT_NODE_RETENTION, MAX_ABSENT_NODE_RETENTION),
                    "as leader: how long a node may be away before the directories its adopters keep "
                    "for its sources' hand-over are deleted, with a warning (`cluster/core/decommission.py`)",
                    default=DEFAULT_ABSENT_NODE_RETENTION,
                    unit=SECONDS,
                    field="absent_node_retention",
                ),
            ),
        ),
        Section(
            "content",
            help="The node's content, local and on HDFS (NiFi's archive).",
            keys=(
                Key(
                    "archive",
                    Flag(),
                    "keep unreferenced content for a while; false: delete it at once",
                    default=True,
                    field="archive",
                ),
                Key(
                    "archive_retention",
                    Number(minimum=0.0),
                    "how long unreferenced content stays archived",
                    default=DEFAULT_ARCHIVE_RETENTION_S,
                    unit=SECONDS,
                    field="archive_retention",
                ),
                Key(
                    "archive_max_usage",
                    Number(0.0, 1.0),
                    "the share of the local disk above which the archive is aged off early, and new writes are refused",
                    default=DEFAULT_ARCHIVE_MAX_USAGE,
                    unit="fraction",
                    field="archive_max_usage",
                ),
            ),
        ),
        Section(
            "provenance",
            help="The node's provenance repository: its retention, which a clustered node "
            "enforces as it runs, and its rollover (NiFi's rollover time and size), after which the journals "
            "are merged into an event file, indexed and exported to HDFS.",
            keys=(
                Key(
                    "max_age",
                    Number(minimum=1.0),
                    "how long provenance events are kept",
                    default=DEFAULT_MAX_AGE,
                    unit=SECONDS,
                    field="provenance_max_age",
                ),
                Key(
                    "max_bytes",
                    Integer(minimum=MIN_PROVENANCE_BYTES),
                    "how much of event files is kept",
                    default=DEFAULT_MAX_BYTES,
                    unit=BYTES,
                    field="provenance_max_bytes",
                ),
                Key(
                    "rollover_age",
                    Number(minimum=MIN_ROLLOVER_AGE),
                    "roll the journals over once they are this old",
                    default=DEFAULT_ROLLOVER_AGE,
                    unit=SECONDS,
                    field="provenance_rollover_age",
                ),
                Key(
                    "rollover_bytes",
                    Integer(minimum=MIN_PROVENANCE_BYTES),
                    "roll the journals over once they hold this much",
                    default=field_default(RolloverPolicy, "max_bytes"),
                    unit=BYTES,
                    field="provenance_rollover_bytes",
                ),
            ),
        ),
        Section(
            "spark",
            help="The node's Spark session, started by the first Spark processor.",
            keys=(
                Key(
                    "master",
                    Text("local[*], local[N] or spark://host:port (a non-empty string)", blank=False),
                    "`local[*]` embedded, or `spark://host:7077` for a standalone cluster",
                    default=LOCAL_MASTER,
                    field="spark_master",
                ),
                Key(
                    "conf",
                    StringTable(),
                    "any Spark setting (the node passes its `[hdfs.config]` on as `spark.hadoop.<key>` under these)",
                    default={},
                    field="spark_conf",
                ),
            ),
        ),
        Section(
            "python",
            help="NiFi 2 Python processors (docs/develop/python-processors.md): where they are, and where pip "
            "finds their dependencies.",
            keys=(
                Key(
                    "extensions",
                    FileNameList(),
                    "directories of NiFi Python processors; each class is a processor type of the flow, by its name",
                    default=(),
                    field="python_extensions",
                ),
                Key(
                    "index_url",
                    Text("a URL (a string)"),
                    "the package index pip installs processors' dependencies from (pip's `--index-url`; "
                    "empty: pip's own)",
                    default="",
                    field="python_index_url",
                ),
                Key(
                    "find_links",
                    FileNameList(urls=True),
                    "directories (or pages) of distributions pip may install from (pip's `--find-links`)",
                    default=(),
                    field="python_find_links",
                ),
                Key(
                    "no_index",
                    Flag(),
                    "install only from `find_links` (pip's `--no-index`)",
                    default=False,
                    field="python_no_index",
                ),
            ),
        ),
        Section(
            "admin",
            help="The REST admin API, in the node's process.",
            keys=(
                Key("enabled", Flag(), "serve it", default=True, field="admin_enabled"),
                Key(
                    "bind",
                    Text("an address (a non-empty string)", blank=False),
                    "where it listens; another address than loopback needs `tokens`",
                    default=DEFAULT_ADMIN_BIND,
                    field="admin_bind",
                ),
                Key(
                    "port",
                    Integer(0, 65535),
                    "its TCP port; 0: any free port",
                    default=DEFAULT_ADMIN_PORT,
                    field="admin_port",
                ),
                Key("tokens", FileName(), "the token file (`custody admin token`)", default="", field="admin_tokens"),
                Key(
                    "tls_cert",
                    FileName(),
                    "PEM certificate: HTTPS (with `tls_key`)",
                    default="",
                    field="admin_tls_cert",
                ),
                Key("tls_key", FileName(), "PEM key of `tls_cert`", default="", field="admin_tls_key"),
                Key(
                    "tls_ca",
                    FileName(),
                    "PEM certificates of the authorities that signed the members' admin certificates, "
                    "trusted when this node asks the other members for the cluster's processors and queues "
                    "(NiFi's truststore); unset: the system's",
                    default="",
                    field="admin_tls_ca",
                ),
                Key(
                    "allowed_hosts",
                    HostList(),
                    "names it answers to besides its bind address and `[node] admin` (a Host "
                    "header naming another is refused, 421)",
                    default=(),
                    field="admin_allowed_hosts",
                ),
            ),
        ),
    )
)
