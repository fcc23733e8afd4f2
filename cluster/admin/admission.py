"""What the admin API admits before it routes a request: the rules, pure (no I/O).

A browser is the client the node cannot trust: any web page its operator opens can
make it send requests to 127.0.0.1. Two rules keep such pages out, as Jupyter's
server keeps them out of a notebook server on loopback:

  Host    A page can make its own name resolve to 127.0.0.1 (DNS rebinding): the
          browser then sends the node requests with `Host: attacker.example` and
          lets the page read the answers, as answers of its own site. The node
          answers only to its own names (`AllowedHosts`): its bind address; for a
          loopback bind `localhost` and any loopback address; for a wildcard bind
          (0.0.0.0, ::) any address; the name it announces to the cluster
          (`[node] admin`); and the names the operator lists (`[admin] allowed_hosts`,
          `*` for any). An IP address cannot be rebound, so a wildcard bind takes
          any. A request without Host (HTTP/1.0) is from no browser: it passes.

  Origin  A page cannot read the answer to a cross-site POST, but the browser sends
          it: a form, or a fetch with a "simple" content type such as text/plain,
          which needs no preflight. Browsers name the sending page in `Origin` on
          every request but GET and HEAD, so a request of another method whose
          Origin is present and is not the node itself is refused (`cross_site`).
          The comparison is host and port, as Jupyter compares an Origin with the
          Host: a TLS proxy in front changes the scheme, not the name. Clients that
          are no browser (curl, the CLI, Prometheus) send no Origin.

And the body a request declares (`declared_body_length`), read from its headers
before any of the body is.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from dataclasses import dataclass

SAFE_METHODS = frozenset({"GET", "HEAD"})
ANY_HOST = "*"
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
# A Content-Length longer than this is past any cap (2**63 has 19 digits): never converted.
_MAX_LENGTH_DIGITS = 18


class HostNameRefused(ValueError):
    """A configured host name is not a bare name or address; the message says why."""


def normal_host(text: str) -> str:
    """A host name or address as the rules compare it: lower case, no trailing dot,
    an IPv6 address without brackets and compressed. Raises `HostNameRefused` for
    anything that is not a bare name or address (a scheme, a port, a path)."""
    host = text.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == ANY_HOST:
        return host
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not host or any(c in host for c in "/:@?#[] \t") or not all(c.isalnum() or c in "-._" for c in host):
        raise HostNameRefused(
            f"{text!r} is not a host name or address (write it bare: no scheme, port or path, "
            f"e.g. custody1.example.org or 10.0.0.5)"
        )
    return host


def split_host_header(value: str) -> tuple[str, int | None] | None:
    """(host, port or None) of a Host header (`name`, `name:8080`, `[::1]:8080`), the
    host normalised; None when it is malformed."""
    value = value.strip()
    if value.startswith("["):
        host, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") > 1:
        return None  # an IPv6 address must be bracketed in a Host header
    else:
        host, colon, port_text = value.partition(":")
        port_text = port_text if colon else None
    port = None
    if port_text is not None:
        if not port_text.isdigit() or len(port_text) > 5 or int(port_text) > 65535:
            return None
        port = int(port_text)
    try:
        return normal_host(host), port
    except HostNameRefused:
        return None


def host_of_url(url: str) -> str | None:
    """The host of an address a node announces (`http://custody1:8080`, or `10.0.0.1:8080`
    without a scheme), normalised; None when it names none."""
    text = url.strip()
    if not text:
        return None
    parsed = urllib.parse.urlsplit(text if "//" in text else f"//{text}")
    try:
        return normal_host(parsed.hostname) if parsed.hostname else None
    except HostNameRefused:
        return None


@dataclass(frozen=True)
class AllowedHosts:
    """The names a node's admin API answers to (see the module's docstring).

    `bind` is the address it listens on, `loopback` whether that is loopback only
    (the caller resolves names; this class never does), `names` the names and
    addresses the operator configured and the one the node announces."""

    bind: str
    loopback: bool
    names: frozenset[str] = frozenset()

    @classmethod
    def of(cls, bind: str, *, loopback: bool, names=(), announced: str = "") -> AllowedHosts:
        """Raises `HostNameRefused` for a configured name that is not one."""
        extra = {normal_host(name) for name in names}
        announced_host = host_of_url(announced)
        if announced_host is not None:
            extra.add(announced_host)
        return cls(bind.strip().lower(), loopback, frozenset(extra))

    @property
    def wildcard(self) -> bool:
        return self.bind in WILDCARD_BINDS

    def allows(self, host_header: str | None) -> bool:
        if host_header is None:
            return True  # HTTP/1.0 without Host: no browser sends that
        if ANY_HOST in self.names:
            return True
        split = split_host_header(host_header)
        if split is None:
            return False
        host = split[0]
        if host in self.names:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return (host == "localhost" and (self.loopback or self.wildcard)) or host == self.bind
        if self.wildcard or (self.loopback and address.is_loopback):
            return True
        try:
            return address == ipaddress.ip_address(self.bind.strip("[]"))
        except ValueError:
            return False

    def describe(self) -> str:
        """The names, for a refusal's message."""
        if ANY_HOST in self.names:
            return "any name"
        if self.wildcard:
            served = ["any IP address", "localhost"]
        elif self.loopback:
            served = [self.bind, "localhost", "any loopback address"]
        else:
            served = [self.bind]
        served += sorted(self.names - {self.bind, "localhost"})
        return ", ".join(dict.fromkeys(served))


def same_origin(origin: str, host_header: str | None) -> bool:
    """Whether `Origin` names the host and port the request was sent to (its Host)."""
    if host_header is None:
        return False
    parsed = urllib.parse.urlsplit(origin.strip())
    if parsed.scheme not in _DEFAULT_PORTS or not parsed.hostname or parsed.path or parsed.query:
        return False  # "null" (a sandboxed frame, a file), or not an origin at all
    try:
        origin_host, origin_port = normal_host(parsed.hostname), parsed.port or _DEFAULT_PORTS[parsed.scheme]
    except (HostNameRefused, ValueError):
        return False
    split = split_host_header(host_header)
    if split is None:
        return False
    host, port = split
    # A Host without a port is the Origin's scheme's default (80, or 443 behind a TLS proxy).
    return (host, port or _DEFAULT_PORTS[parsed.scheme]) == (origin_host, origin_port)


def cross_site(method: str, origin: str | None, host_header: str | None) -> bool:
    """A request a browser sent from another site's page, which may change state."""
    return method.upper() not in SAFE_METHODS and origin is not None and not same_origin(origin, host_header)


def declared_body_length(content_length: str | None, transfer_encoding: str | None) -> int | None:
    """The body's length as the headers declare it: 0 without either header, None
    when it is known only once read (chunked). A length too long to be any cap's is
    read as 2**63, never converted."""
    if transfer_encoding is not None:
        return None
    if content_length is None:
        return 0
    text = content_length.strip()
    if not text.isdigit():
        return None  # the HTTP layer refuses it before this; else it is counted as read
    text = text.lstrip("0") or "0"
    return int(text) if len(text) <= _MAX_LENGTH_DIGITS else 1 << 63
