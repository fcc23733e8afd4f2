"""uvicorn on a thread of its own, in the node's process.

The flow and the admin API share one interpreter: the server runs its own event loop
on one thread, and every answer is a copy the node hands out (`NodeControl`), so a
slow client holds no lock of the node. `start` returns once the socket listens (or
raises with the reason); `url` is the address with the real port (`port = 0` picks
a free one), which the node puts in its heartbeat.

The server guards the node against its clients: the Host and Origin checks of
browsers around the app (`gate.BrowserGate`), and, on each connection, a cap and
read deadlines (`connections.AdminConnection`), so that no client, however many
connections it opens and however slowly it sends, takes the flow's descriptors or
holds a connection for long. `limits` (default: from the process's RLIMIT_NOFILE)
sets them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import resource
import threading
import time

from repositories.log_limits import LimitedLog

from ..errors import ClusterError
from .connections import ACCEPT_BACKLOG, HEADER_BYTES, AcceptErrors, AdminConnection, ConnectionLimits
from .gate import BrowserGate
from .settings import AdminSettings

log = logging.getLogger(__name__)


class AdminServerError(ClusterError):
    """The admin API could not start (the port is taken, the certificate unreadable)."""


def descriptor_limit() -> int:
    """The process's soft RLIMIT_NOFILE (0: unlimited)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 0 if soft == resource.RLIM_INFINITY else soft


class AdminServer:
    def __init__(self, settings: AdminSettings, app, *, limits: ConnectionLimits | None = None):
        settings.check()
        self.settings = settings
        self.descriptors = descriptor_limit()
        self.limits = limits or ConnectionLimits.for_descriptors(self.descriptors)
        self.refusals = LimitedLog(log)
        self.app = BrowserGate(app, settings.hosts(), refusals=self.refusals)
        self._server = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.settings.tls else "http"
        host = self.settings.bind
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{self.port}"

    def start(self, timeout: float = 30.0) -> AdminServer:
        import uvicorn

        protocol = functools.partial(AdminConnection, limits=self.limits, refusals=self.refusals)
        # proxy_headers off: no proxy is configured, and uvicorn trusts X-Forwarded-* from
        # loopback by default, which would let any local client rewrite its scheme and address.
        # ws off: the API has no WebSocket, and an upgraded connection would leave
        # AdminConnection, its cap and its deadlines.
        config = uvicorn.Config(
            self.app,
            host=self.settings.bind,
            port=self.settings.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ssl_certfile=self.settings.tls_cert or None,
            ssl_keyfile=self.settings.tls_key or None,
            timeout_graceful_shutdown=2,
            http=protocol,
            ws="none",
            backlog=ACCEPT_BACKLOG,
            proxy_headers=False,
            timeout_keep_alive=self.limits.keep_alive_s,
            h11_max_incomplete_event_size=HEADER_BYTES,
        )
        server = uvicorn.Server(config)
        failure: list[BaseException] = []
        accept_errors = AcceptErrors(self.refusals, self.descriptors)

        async def serve_on_this_loop() -> None:
            asyncio.get_running_loop().set_exception_handler(accept_errors)
            await server.serve()

        def serve() -> None:
            try:
                asyncio.run(serve_on_this_loop())
            except BaseException as error:  # noqa: BLE001 - reported to `start`; SystemExit from a bind failure
                failure.append(error)

        self._server = server
        self._thread = threading.Thread(target=serve, name="admin-api", daemon=True)
        started = time.monotonic()
        self._thread.start()
        deadline = started + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._thread.join(timeout=1.0)
                reason = f"{type(failure[0]).__name__}: {failure[0]}" if failure else "it did not start in time"
                raise AdminServerError(
                    f"the admin API could not listen on {self.settings.bind}:{self.settings.port} "
                    f"({reason}); is the port taken? choose another in [admin] port or --admin"
                )
            time.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        log.info(
            "admin API listening on %s (%s; at most %d connections) in %.0f ms",
            self.url,
            "tokens required" if self.settings.token_file else "loopback, no tokens",
            self.limits.max_connections,
            (time.monotonic() - started) * 1000,
        )
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is None:
            return
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._server = None
