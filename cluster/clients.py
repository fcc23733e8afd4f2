"""One factory for every ZooKeeper and HDFS client the product makes.

The clustered node, the CLI, the leader's collector, the drills (and the admin API
and Spark, as they come) all get their clients here, from one node's settings, so
that whatever reaches one client reaches every client: the ensemble and chroot,
the session timeout, ZooKeeper credentials (digest auth, and the ACL on every znode
created: `cluster.zk.acl`), the HDFS client settings, identity (`cluster.hdfs_identity`)
and write deadline.

    clients = ClientFactory.from_node_config(config)   # or ClientFactory(ZooKeeperSettings(...), HdfsSettings(...))
    client = clients.start_zookeeper()                 # a started client (`cluster.zk.client`)
    storage = clients.hdfs_storage()                    # `replication.hdfs_storage.HdfsStorage`
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass, field

from replication.hdfs_storage import DEFAULT_IO_TIMEOUT, HdfsStorage

from .errors import ClusterError, ZooKeeperAccessRefused, ZooKeeperUnavailable
from .hdfs_identity import HdfsIdentity, apply_identity
from .zk.acl import digest_acl
from .zk.client import granted_session_timeout, new_client, start_client, stop_quietly

# `granted_session_timeout` and `stop_quietly` are part of this factory's interface: a
# client it made is checked and stopped with them.
__all__ = [
    "DEFAULT_SESSION_TIMEOUT",
    "ClientFactory",
    "HdfsSettings",
    "ServiceUnreachable",
    "ZooKeeperSettings",
    "granted_session_timeout",
    "identity_acl",
    "make_credentials_file",
    "parse_credentials",
    "read_credentials_file",
    "stop_quietly",
]

DEFAULT_SESSION_TIMEOUT = 4.0  # seconds; a dead node is taken over after about this


class ServiceUnreachable(ClusterError):
    """ZooKeeper (or HDFS) did not answer; the message names the address and the wait."""


@dataclass(frozen=True)
class ZooKeeperSettings:
    hosts: str  # "h1:2181,h2:2181[/chroot]"
    session_timeout: float = DEFAULT_SESSION_TIMEOUT
    connect_timeout: float = 30.0  # seconds `start_zookeeper` waits for a session
    credentials: str | None = field(default=None, repr=False)  # "user:password": digest auth and ACLs


@dataclass(frozen=True)
class HdfsSettings:
    url: str  # "hdfs://host:port"
    config: dict[str, str] = field(default_factory=dict)  # hdfs-native client settings (dfs.* keys)
    io_timeout: float | None = DEFAULT_IO_TIMEOUT
    identity: HdfsIdentity = HdfsIdentity()  # the HDFS user or Kerberos principal (cluster.hdfs_identity)


@dataclass(frozen=True)
class ClientFactory:
    zookeeper: ZooKeeperSettings | None = None
    hdfs: HdfsSettings | None = None

    @classmethod
    def from_node_config(cls, config) -> ClientFactory:
        """From a `cluster.node.config.NodeConfig`."""
        return cls(
            ZooKeeperSettings(config.zk_hosts, config.session_timeout, credentials=config.zk_credentials or None),
            HdfsSettings(config.hdfs_url, dict(config.hdfs_config), config.hdfs_io_timeout, config.hdfs_identity),
        )

    def zookeeper_client(self, *, read_only: bool = False):
        """A new, unstarted ZooKeeper client with this node's settings, which records the
        session timeout the server grants (`granted_session_timeout`)."""
        settings = self._zookeeper()
        # Every znode this client creates is the identity's alone (cluster.zk.acl).
        acl = identity_acl(settings.credentials) if settings.credentials else None
        return new_client(
            settings.hosts, settings.session_timeout, read_only=read_only, credentials=settings.credentials, acl=acl
        )

    def start_zookeeper(self, *, read_only: bool = False, timeout: float | None = None):
        """A started ZooKeeper client; `ServiceUnreachable` (the client closed again) when
        no member of the ensemble answers within `timeout` (default: the settings')."""
        settings = self._zookeeper()
        wait = settings.connect_timeout if timeout is None else timeout
        client = self.zookeeper_client(read_only=read_only)
        try:
            start_client(client, wait)
        except ZooKeeperUnavailable:
            raise ServiceUnreachable(
                f"cannot reach ZooKeeper at {settings.hosts} within {wait:.0f}s; "
                "check that the ensemble is up and the address is right"
            ) from None
        return client

    def hdfs_storage(self) -> HdfsStorage:
        """The storage protocol on this node's HDFS, as this node's HDFS identity."""
        settings = self._hdfs()
        apply_identity(settings.identity)
        return HdfsStorage(settings.url, dict(settings.config), io_timeout=settings.io_timeout)

    def _zookeeper(self) -> ZooKeeperSettings:
        if self.zookeeper is None:
            raise ClusterError("no ZooKeeper is configured for this client factory")
        return self.zookeeper

    def _hdfs(self) -> HdfsSettings:
        if self.hdfs is None:
            raise ClusterError("no HDFS is configured for this client factory")
        return self.hdfs


def parse_credentials(text: str, where: str) -> tuple[str, str]:
    """(user, password) from `user:password` (one line; surrounding blanks ignored)."""
    line = text.strip()
    user, colon, password = line.partition(":")
    if not colon or not user or not password or "\n" in line:
        raise ZooKeeperAccessRefused(f"{where} must hold one line `user:password` (both non-empty)")
    return user, password


def read_credentials_file(path: str) -> str:
    """The `user:password` line of `path`; refused when another user may read the file."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        raise ZooKeeperAccessRefused(f"cannot read the ZooKeeper credentials file {path}: {error.strerror}") from None
    if mode & 0o077:
        raise ZooKeeperAccessRefused(
            f"the ZooKeeper credentials file {path} is readable by others (mode {mode:o}); chmod 600 {path}"
        )
    user, password = parse_credentials(text, f"the ZooKeeper credentials file {path}")
    return f"{user}:{password}"


def make_credentials_file(path: str, user: str = "custody") -> None:
    """A new credentials file at `path` (`user:` and 48 random hex digits, mode 0600), for
    `[zookeeper] credentials_file`; `ZooKeeperAccessRefused` if `path` exists (a cluster's
    nodes share one identity: another file would lock the others out)."""
    if not user or ":" in user or any(character.isspace() for character in user):
        raise ZooKeeperAccessRefused(f"the user name {user!r} must be non-empty, without ':' or blanks")
    credentials = f"{user}:{secrets.token_hex(24)}"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ZooKeeperAccessRefused(
            f"{path} exists already: keep it (every node of a cluster uses the same "
            "credentials), or remove it first to make new ones"
        ) from None
    except OSError as error:
        raise ZooKeeperAccessRefused(f"cannot create the ZooKeeper credentials file {path}: {error.strerror}") from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(credentials + "\n")
        file.flush()
        os.fsync(file.fileno())


def identity_acl(credentials: str) -> list:
    """The ACL that gives the digest identity of `credentials` every right, and nobody
    else anything."""
    user, password = parse_credentials(credentials, "ZooKeeper credentials")
    return digest_acl(user, password)
