"""uvicorn on a thread of its own, in the node's process.

The flow and the admin API share one interpreter: the server runs its own event loop
on one thread, and every answer is a copy the node hands out (`NodeControl`), so a
slow client holds no lock of the node. `start` returns once the socket listens (or
raises with the reason); `url` is the address with the real port (`port = 0` picks
a free one), which the node puts in its heartbeat.
"""

from __future__ import annotations

import logging
import threading
import time

from ..errors import ClusterError
from .settings import AdminSettings

log = logging.getLogger(__name__)


class AdminServerError(ClusterError):
    """The admin API could not start (the port is taken, the certificate unreadable)."""


class AdminServer:
    def __init__(self, settings: AdminSettings, app):
        settings.check()
        self.settings = settings
        self.app = app
        self._server = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.settings.tls else "http"
        host = self.settings.bind
        host = f"[{host}]" if ":" in host else host
        return f"{scheme}://{host}:{self.port}"

    def start(self, timeout: float = 30.0) -> "AdminServer":
        import uvicorn

        config = uvicorn.Config(self.app, host=self.settings.bind, port=self.settings.port, log_level="warning",
                                access_log=False, lifespan="off", ssl_certfile=self.settings.tls_cert or None,
                                ssl_keyfile=self.settings.tls_key or None, timeout_graceful_shutdown=2)
        server = uvicorn.Server(config)
        failure: list[BaseException] = []

        def serve() -> None:
            try:
                server.run()
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
                raise AdminServerError(f"the admin API could not listen on {self.settings.bind}:{self.settings.port} "
                                       f"({reason}); is the port taken? choose another in [admin] port or --admin")
            time.sleep(0.01)
        self.port = server.servers[0].sockets[0].getsockname()[1]
        log.info("admin API listening on %s (%s) in %.0f ms", self.url,
                 "tokens required" if self.settings.token_file else "loopback, no tokens",
                 (time.monotonic() - started) * 1000)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is None:
            return
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._server = None
