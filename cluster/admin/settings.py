"""Where a node's admin API listens, and who may call it.

NODE.toml:

    [admin]
    bind = "127.0.0.1"        # the default; another address needs `tokens`
    port = 8080               # 0: any free port (the heartbeat shows the real one)
    tokens = "tokens"         # token file (see cluster.admin.tokens), relative to NODE.toml
    tls_cert = "node.pem"     # optional, both or neither
    tls_key = "node.key"
    tls_ca = "ca.pem"         # optional: who signed the members' certificates (NiFi's truststore)
    allowed_hosts = ["custody1.example.org"]   # names it answers to besides its own

`custody run ... --admin HOST:PORT [--admin-tokens FILE] [--admin-allowed-host NAME]`
for a standalone node.

The API answers only to requests whose Host is one of its names
(`cluster.admin.admission.AllowedHosts`): the bind address (for loopback, also
`localhost` and any loopback address; for 0.0.0.0 or ::, any address), the address
the node announces (`[node] admin`), and `allowed_hosts` (`"*"`: any name, for a
proxy that passes on its clients' Host).
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from dataclasses import dataclass

from ..errors import ConfigurationRefused
from ..node.config_schema import DEFAULT_ADMIN_BIND as DEFAULT_BIND
from ..node.config_schema import DEFAULT_ADMIN_PORT as DEFAULT_PORT
from .admission import AllowedHosts, HostNameRefused


class AdminSettingsRefused(ConfigurationRefused):
    """The admin settings are unsafe or incomplete; the message says what to set."""


@dataclass(frozen=True)
class AdminSettings:
    bind: str = DEFAULT_BIND
    port: int = DEFAULT_PORT
    token_file: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    tls_ca: str = ""  # the authorities trusted when asking the other members (`fan_out`)
    allowed_hosts: tuple[str, ...] = ()
    announced: str = ""  # the address the node announces to the cluster (`[node] admin`)

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert)

    def hosts(self) -> AllowedHosts:
        """The names the API answers to; raises `AdminSettingsRefused` for a bad one."""
        try:
            return AllowedHosts.of(
                self.bind, loopback=is_loopback(self.bind), names=self.allowed_hosts, announced=self.announced
            )
        except HostNameRefused as error:
            raise AdminSettingsRefused(f"[admin] allowed_hosts: {error}") from None

    def check(self) -> None:
        """Refuse what must never start: a non-loopback bind without tokens (anyone on
        the network could offload the node or read its data), or half a TLS pair."""
        if bool(self.tls_cert) != bool(self.tls_key):
            raise AdminSettingsRefused("[admin] tls_cert and tls_key go together: set both, or neither")
        self.member_trust()
        if not 0 <= self.port <= 65535:
            raise AdminSettingsRefused(f"[admin] port {self.port} is not a TCP port (0 to 65535)")
        if not self.token_file and not is_loopback(self.bind):
            raise AdminSettingsRefused(
                f"the admin API refuses to listen on {self.bind} without tokens: anyone who reaches it could "
                f"read the node's data and offload it. Create a token file (custody admin token --file FILE "
                f"--role admin --name NAME) and set [admin] tokens, or bind 127.0.0.1"
            )
        self.hosts()

    def member_trust(self) -> ssl.SSLContext:
        """What this node trusts when it asks the other members' admin APIs over https:
        the system's authorities, and those of `tls_ca`. Raises `AdminSettingsRefused`
        for a `tls_ca` that cannot be read as PEM certificates."""
        context = ssl.create_default_context()
        if self.tls_ca:
            try:
                context.load_verify_locations(cafile=self.tls_ca)
            except (OSError, ssl.SSLError) as error:
                raise AdminSettingsRefused(
                    f"[admin] tls_ca {self.tls_ca!r} cannot be read as PEM certificates: {error}"
                ) from None
        return context


def is_loopback(host: str) -> bool:
    """True for loopback addresses and names that resolve only to loopback."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if host in ("", "0.0.0.0", "::"):
        return False
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def parse_address(text: str, *, token_file: str = "", allowed_hosts=()) -> AdminSettings:
    """`HOST:PORT` (`--admin`) as settings; `[::1]:8080` for IPv6."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise AdminSettingsRefused(f"--admin needs HOST:PORT (e.g. 127.0.0.1:8080), got {text!r}")
    try:
        number = int(port)
    except ValueError:
        raise AdminSettingsRefused(f"--admin {text!r}: the port {port!r} is not a number") from None
    return AdminSettings(bind=host.strip("[]"), port=number, token_file=token_file, allowed_hosts=tuple(allowed_hosts))


def from_node_config(config) -> AdminSettings:
    """The `[admin]` table of a `cluster.node.config.NodeConfig`."""
    return AdminSettings(
        bind=config.admin_bind,
        port=config.admin_port,
        token_file=config.admin_tokens,
        tls_cert=config.admin_tls_cert,
        tls_key=config.admin_tls_key,
        tls_ca=config.admin_tls_ca,
        allowed_hosts=config.admin_allowed_hosts,
        announced=config.admin,
    )
