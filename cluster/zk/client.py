"""The kazoo clients the product makes: made here, so that kazoo stays in `cluster.zk`.

`cluster.clients.ClientFactory` carries a node's ZooKeeper settings (ensemble, session
timeout, credentials) and calls `new_client` and `start_client`; nothing else makes a
client, but `close_session`, with which a drill ends a node's session from outside.

A client made here records the session timeout the server granted at each connect
(`granted_session_timeout`): ZooKeeper clamps it to the servers' [minSessionTimeout,
maxSessionTimeout], and a node that timed its own expiry by a longer one would work on
after the ensemble declared it dead.

A client made here also tries the ensemble again about once a second while it cannot
reach it (`RECONNECT`: pauses of at most 1.4 s with kazoo's jitter), as ZooKeeper's
own Java client does (a random pause of up to a second between servers). kazoo's
default doubles the pause up to an hour: after an outage of a minute a node waited
about as long again before it tried, and learnt only then that its session had
expired.
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.protocol.serialization import Connect

from .kazoo_errors import KAZOO_ERRORS, translate

log = logging.getLogger(__name__)

_GRANTED = "custody_granted_session_timeout"
# kazoo's connection retry (`KazooRetry`'s arguments): for ever, from 0.1 s doubling to 1 s
# (each pause drawn within 40 % of that).
RECONNECT = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0}


def new_client(
    hosts: str,
    session_timeout: float,
    *,
    read_only: bool = False,
    credentials: str | None = None,
    acl: list | None = None,
):
    """A new, unstarted client of `hosts` ("h1:2181,h2:2181[/chroot]"). With
    `credentials` ("user:password") it authenticates by digest, and every znode it
    creates carries `acl` (`acl.digest_acl`: the identity alone)."""
    secured = {"auth_data": [("digest", credentials)], "default_acl": acl} if credentials else {}
    client = KazooClient(
        hosts=hosts, timeout=session_timeout, read_only=read_only, connection_retry=dict(RECONNECT), **secured
    )
    _record_granted_timeout(client)
    return client


def start_client(client: KazooClient, timeout: float) -> None:
    """Start `client`; when no member of the ensemble answers within `timeout` seconds,
    `cluster.errors.ZooKeeperUnavailable`, the client closed again."""
    try:
        client.start(timeout=timeout)
    except KAZOO_ERRORS as error:
        stop_quietly(client)
        raise translate(error, "connecting") from error


def ensure_chroot(client: KazooClient, acl: list | None, timeout: float = 10.0) -> None:
    """Create the chroot of a started `client` ("h1:2181/custody-prod": every path it
    uses lives under /custody-prod) when it is missing, as a Kafka broker creates its
    chroot: through a second client of the same ensemble without the chroot,
    authenticated as `client` is, the chroot's znodes carrying `acl` (None: ZooKeeper's
    open default). A client without a chroot: nothing to do."""
    chroot = getattr(client, "chroot", None)
    if not chroot or client.exists("/"):
        return
    hosts = ",".join(f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in client.hosts)
    root = KazooClient(hosts=hosts, timeout=timeout, auth_data=list(client.auth_data), connection_retry=dict(RECONNECT))
    try:
        root.start(timeout=timeout)
        root.ensure_path(chroot, acl=acl)
        log.info("created the ZooKeeper chroot %s", chroot)
    except KAZOO_ERRORS as error:
        raise translate(error, "creating the chroot", chroot) from error
    finally:
        stop_quietly(root)


def close_session(
    hosts: str, session_id: int, password: bytes, *, session_timeout: float, timeout: float = 30.0
) -> None:
    """End the session `session_id` for whoever holds it, as ZooKeeper ends an expired
    one: attach a second connection to it and close that (closing a session ends it
    for every connection). `ZooKeeperError` when the attach fails (the server may have
    moved the session back to its own connection first: try again)."""
    intruder = KazooClient(hosts=hosts, timeout=session_timeout, client_id=(session_id, password))
    try:
        intruder.start(timeout=timeout)
        intruder.stop()
    except KAZOO_ERRORS as error:
        raise translate(error, "closing a session", f"0x{session_id:x}") from error
    finally:
        stop_quietly(intruder)


def session_of(client: KazooClient) -> tuple[int, bytes] | None:
    """The client's session id and password; None while it has none (not connected)."""
    return client.client_id


def quiet_connection_logs() -> None:
    """Leave out of the log the info lines of clients connecting and closing (a drill's
    own client is not progress); warnings stay."""
    logging.getLogger("kazoo.client").setLevel(logging.WARNING)


def is_connected(client: KazooClient) -> bool:
    """Whether the client is connected now (its session may still be lost later)."""
    return client.connected


def granted_session_timeout(client: KazooClient) -> float | None:
    """The session timeout (seconds) the ZooKeeper server granted at the last connect,
    which it may have clamped to its [minSessionTimeout, maxSessionTimeout]; None
    before the first connect or for a client not made here."""
    return getattr(client, _GRANTED, None)


def _record_granted_timeout(client: KazooClient) -> None:
    # kazoo negotiates the session timeout in its connection handler and keeps the
    # granted value to itself (a local of `ConnectionHandler._connect`). The handler
    # sends the Connect request through `_invoke`: wrapping it is the one place the
    # answer passes. If a kazoo release moves it, say so once and grant nothing.
    connection = getattr(client, "_connection", None)
    invoke = getattr(connection, "_invoke", None)
    if invoke is None:
        log.warning(
            "this kazoo release hides the granted session timeout; the node cannot check that "
            "ZooKeeper kept the one it asked for"
        )
        return

    def invoke_recording(timeout, request, xid=None):
        result = invoke(timeout, request, xid)
        if isinstance(request, Connect):
            setattr(client, _GRANTED, result[0].time_out / 1000.0)
        return result

    connection._invoke = invoke_recording


def stop_quietly(client: KazooClient) -> None:
    """Stop and close a client, whatever state it is in."""
    try:
        client.stop()
    except Exception:  # noqa: BLE001 - a client that never started
        pass
    try:
        client.close()
    except Exception:  # noqa: BLE001
        pass
