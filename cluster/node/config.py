"""NODE.toml: the configuration of a clustered node (`custody node --config NODE.toml`).

    name = "n1"
    flow = "flow.yaml"                # relative to this file
    [zookeeper]
    hosts = "127.0.0.1:2181"
    cluster = "main"
    credentials_file = "zookeeper"    # `custody cluster credentials FILE` makes one
    [hdfs]
    url = "hdfs://127.0.0.1:8020"

Every section and key, its type, default and meaning are declared once, in
`cluster.node.config_schema`; the file is read by walking that schema, `NodeConfig`
takes its defaults from it, and docs/reference/node-toml.md is rendered from it.
What is left here is what one key cannot say alone: the chroot joined to the hosts,
the ZooKeeper credentials read from their file, the HDFS identity checked whole, the
data directory named after the node.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field

from replication.block_size import block_size_setting

from ..clients import read_credentials_file
from ..errors import ConfigurationRefused, ZooKeeperAccessRefused
from ..hdfs_identity import HdfsIdentity, HdfsIdentityError, KerberosSettings
from ..zk.acl import credentials_required
from .config_schema import NODE_TOML
from .toml_schema import Invalid

DEFAULT = NODE_TOML.defaults()  # NodeConfig field -> the default its key declares


class NodeConfigError(ConfigurationRefused):
    """NODE.toml is missing, unreadable or wrong; the message names the setting."""


@dataclass(frozen=True)
class NodeConfig:
    """What a NODE.toml says, as the node uses it: the fields its keys fill (see each
    key's `field` in `config_schema`) and those derived from several keys."""

    name: str
    flow: str
    directory: str
    zk_hosts: str  # [zookeeper] hosts, with the chroot after them
    cluster: str
    hdfs_url: str
    session_timeout: float = DEFAULT["session_timeout"]
    zk_credentials: str = field(default="", repr=False)  # read from [zookeeper] credentials_file
    hdfs_root: str = DEFAULT["hdfs_root"]
    hdfs_config: dict = field(default_factory=dict)
    hdfs_io_timeout: float = DEFAULT["hdfs_io_timeout"]
    hdfs_identity: HdfsIdentity = HdfsIdentity()  # [hdfs] user, or [hdfs.kerberos]
    flow_parameters: dict = field(default_factory=dict)
    threads: int = DEFAULT["threads"]
    capacity_weight: float = DEFAULT["capacity_weight"]
    policy: str = DEFAULT["policy"]
    lead: bool = DEFAULT["lead"]
    admin: str = DEFAULT["admin"]
    wal_partitions: int = DEFAULT["wal_partitions"]
    checkpoint_interval: float = DEFAULT["checkpoint_interval"]
    fence_first_wait: float = DEFAULT["fence_first_wait"]
    shutdown_timeout: float = DEFAULT["shutdown_timeout"]
    absent_node_retention: float = DEFAULT["absent_node_retention"]
    archive: bool = DEFAULT["archive"]
    archive_retention: float = DEFAULT["archive_retention"]
    archive_max_usage: float = DEFAULT["archive_max_usage"]
    provenance_max_age: float = DEFAULT["provenance_max_age"]
    provenance_max_bytes: int = DEFAULT["provenance_max_bytes"]
    provenance_rollover_age: float = DEFAULT["provenance_rollover_age"]
    provenance_rollover_bytes: int = DEFAULT["provenance_rollover_bytes"]
    admin_enabled: bool = DEFAULT["admin_enabled"]
    admin_bind: str = DEFAULT["admin_bind"]
    crash_detection: bool = DEFAULT["crash_detection"]
    admin_port: int = DEFAULT["admin_port"]
    admin_tokens: str = DEFAULT["admin_tokens"]
    admin_tls_cert: str = DEFAULT["admin_tls_cert"]
    admin_tls_key: str = DEFAULT["admin_tls_key"]
    admin_tls_ca: str = DEFAULT["admin_tls_ca"]
    admin_allowed_hosts: tuple[str, ...] = DEFAULT["admin_allowed_hosts"]
    spark_master: str = DEFAULT["spark_master"]
    spark_conf: dict = field(default_factory=dict)
    python_extensions: tuple[str, ...] = DEFAULT["python_extensions"]
    python_index_url: str = DEFAULT["python_index_url"]
    python_find_links: tuple[str, ...] = DEFAULT["python_find_links"]
    python_no_index: bool = DEFAULT["python_no_index"]
    path: str = ""  # the file, absolute

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
        return {
            "node": self.name,
            "data_dir": self.directory,
            "out": os.path.join(self.directory, "out"),
            **self.flow_parameters,
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
    """The settings of a NODE.toml read as `body`, from the file at `path`; a mistake is
    a `NodeConfigError` that starts with the path and names the setting."""
    base = os.path.dirname(os.path.abspath(path))
    try:
        values = NODE_TOML.read(body, directory=base)
        top, zookeeper, hdfs = values[""], values["zookeeper"], values["hdfs"]
        directory = top["directory"] or os.path.normpath(os.path.join(base, f"{top['name']}-data"))
        derived = dict(
            directory=directory,
            zk_hosts=zookeeper["hosts"] + zookeeper["chroot"].rstrip("/"),
            zk_credentials=_zookeeper_credentials(zookeeper),
            hdfs_identity=_hdfs_identity(hdfs["user"], values["hdfs.kerberos"], directory),
        )
        _check_hdfs_config(hdfs["config"])
    except Invalid as error:
        raise NodeConfigError(f"{path}: {error}") from None
    filled = {key.field: values[section.name][key.name] for section, key in NODE_TOML.keys() if key.field}
    return NodeConfig(**filled, **derived, path=os.path.abspath(path))


def _check_hdfs_config(config: dict[str, str]) -> None:
    """The `[hdfs.config]` settings Custody itself reads, checked now, not at the first
    file a node creates."""
    try:
        block_size_setting(config)
    except ValueError as error:
        raise Invalid(f"[hdfs.config] {error}") from None


def _zookeeper_credentials(zookeeper: dict) -> str:
    """`user:password` from [zookeeper] credentials_file; "" for a cluster that runs
    open, which `insecure = true` must say (it changes nothing when credentials are given)."""
    if not zookeeper["credentials_file"]:
        if not zookeeper["insecure"]:
            raise Invalid(credentials_required())
        return ""
    try:
        return read_credentials_file(zookeeper["credentials_file"])
    except ZooKeeperAccessRefused as error:
        raise Invalid(f"[zookeeper] credentials_file: {error}") from None


def _hdfs_identity(user: str, kerberos: dict | None, directory: str) -> HdfsIdentity:
    """Who the node is to HDFS: the simple-authentication `user`, or [hdfs.kerberos],
    whose ticket cache with a keytab is the node's own, in its `directory`."""
    if kerberos is not None:
        cache = kerberos["ticket_cache"] or (f"FILE:{os.path.join(directory, 'krb5cc')}" if kerberos["keytab"] else "")
        kerberos = KerberosSettings(
            principal=kerberos["principal"],
            keytab=kerberos["keytab"],
            ticket_cache=cache,
            renew_interval=kerberos["renew_interval"],
        )
    identity = HdfsIdentity(user=user, kerberos=kerberos)
    try:
        identity.check()
    except HdfsIdentityError as error:
        raise Invalid(str(error)) from None
    return identity
