"""`ServiceRegistry`: the node-level services that processors share, by name: a
SparkSession, an HDFS client, a controller service in NiFi's sense.

    services = ServiceRegistry()
    spark = SparkSessionFactory("local[*]", {"spark.driver.memory": "1g"})
    services.register("spark", spark, spark.stop)              # nothing starts yet
    engine = TraditionalEngine(graph, shard, content, provenance, services=services)
    ...                                                        # a processor: context.service("spark")
    engine.stop()
    services.close()                                           # reverse start order

The node creates the registry, registers what its configuration names, and passes it
to its engines, which put it in every `ProcessContext`. A service starts on its first
lookup, not when it is registered, so a node whose flow never asks for Spark never
starts a JVM. A start that fails is not remembered: the next lookup tries again (an
HDFS NameNode that was down may be up). Starts and stops are logged with how long
they took.

Lock plan: `_lock` guards the registrations, the start order (`_started`) and
`_closed`, and is never held while a service starts or stops. Each registration has
its own `starting` lock, held while its factory runs, so a slow start (a JVM) holds up
only the lookups of that one service. `close` takes every `starting` lock in turn
after it has marked the registry closed, so a start under way finishes first and is
stopped with the others, in reverse start order.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .errors import ServiceError, UnknownService

log = logging.getLogger(__name__)


def close_service(service: Any) -> None:
    """The default stop: the service's own `close()`, if it has one."""
    close = getattr(service, "close", None)
    if callable(close):
        close()


class _Registration:
    __slots__ = ("name", "start", "stop", "alive", "starting", "service", "started")

    def __init__(
        self, name: str, start: Callable[[], Any], stop: Callable[[Any], None], alive: Callable[[Any], bool] | None
    ):
        self.name = name
        self.start = start
        self.stop = stop
        self.alive = alive
        self.starting = threading.Lock()
        self.service: Any = None
        self.started = False  # guarded by the registry's _lock


class ServiceRegistry:
    """Shared services by name, each started once, lazily; thread-safe (see the lock plan)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._registrations: dict[str, _Registration] = {}
        self._started: list[_Registration] = []
        self._closed = False

    def register(
        self,
        name: str,
        start: Callable[[], Any],
        stop: Callable[[Any], None] | None = None,
        *,
        alive: Callable[[Any], bool] | None = None,
    ) -> None:
        """Make `name` available: `start()` builds the service on its first lookup, and
        `stop(service)` ends it at `close` (by default the service's `close()`). With
        `alive`, a lookup that finds `alive(service)` false (a SparkSession whose context
        stopped when its master went away) stops what is left of it and starts a new one.
        Raises `ServiceError` for a name already registered or a closed registry."""
        with self._lock:
            if self._closed:
                raise ServiceError(f"cannot register service {name!r}: the registry of services is closed")
            if name in self._registrations:
                raise ServiceError(f"service {name!r} is already registered")
            self._registrations[name] = _Registration(name, start, stop or close_service, alive)

    def names(self) -> list[str]:
        """The registered names, started or not, sorted."""
        with self._lock:
            return sorted(self._registrations)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._registrations

    def started(self) -> list[str]:
        """The names of the services running now, in the order they started."""
        with self._lock:
            return [registration.name for registration in self._started]

    def get(self, name: str, *, asked_by: str | None = None) -> Any:
        """The service `name`, started now if this is its first lookup. Raises
        `UnknownService` (naming the registered ones) for a name never registered,
        `ServiceError` when the start fails or the registry is closed. `asked_by` (a
        processor id) only goes into those errors and the start's log line."""
        with self._lock:
            registration = self._registrations.get(name)
            if registration is None:
                raise UnknownService(name, self._registrations, asked_by)
            self._check_open(name)
            if registration.started and self._alive(registration):
                return registration.service
        with registration.starting:
            with self._lock:
                self._check_open(name)
                if registration.started and self._alive(registration):  # another thread started it meanwhile
                    return registration.service
            self._retire(registration, "it is no longer alive; stopping what is left of it and starting it again")
            began = self._clock()
            log.info("service %r: starting%s", name, f" (first asked for by {asked_by})" if asked_by else "")
            try:
                service = registration.start()
            except Exception as error:
                took = self._clock() - began
                log.error("service %r: failed to start after %.2f s: %s", name, took, error)
                raise ServiceError(
                    f"service {name!r} failed to start after {took:.2f} s: {type(error).__name__}: {error}"
                ) from error
            with self._lock:
                registration.service, registration.started = service, True
                self._started.append(registration)
            log.info("service %r: started in %.2f s", name, self._clock() - began)
            return service

    def discard(self, name: str, reason: str) -> None:
        """Stop the running service `name` now (`reason` goes into the log); the next
        lookup starts a new one. Nothing happens when it is not running."""
        with self._lock:
            registration = self._registrations.get(name)
        if registration is None:
            return
        with registration.starting:
            self._retire(registration, f"discarded ({reason}); the next lookup starts a new one")

    def _retire(self, registration: _Registration, why: str) -> None:
        """Take a running service out of use and stop it (the caller holds its `starting`
        lock, so no lookup starts another meanwhile); nothing when it is not running."""
        with self._lock:
            if not registration.started:
                return
            service = registration.service
            registration.service, registration.started = None, False
            self._started.remove(registration)
        log.warning("service %r: %s", registration.name, why)
        try:
            registration.stop(service)
        except Exception:  # noqa: BLE001 - it is being replaced; the new one matters
            log.exception("service %r: stopping the one taken out of use failed", registration.name)

    @staticmethod
    def _alive(registration: _Registration) -> bool:
        if registration.alive is None:
            return True
        try:
            return bool(registration.alive(registration.service))
        except Exception:  # noqa: BLE001 - a liveness check that fails says "not alive"
            return False

    def _check_open(self, name: str) -> None:
        if self._closed:
            raise ServiceError(
                f"service {name!r} is not available: the registry of services is closed (the node is stopping)"
            )

    def close(self) -> None:
        """Stop every started service, the last started first; a stop that raises is
        logged and the others still stop. From the moment it is called no lookup or
        registration works. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            registrations = list(self._registrations.values())
        for registration in registrations:
            with registration.starting:  # a start under way finishes, and is stopped below
                pass
        with self._lock:
            started, self._started = self._started[::-1], []
        for registration in started:
            began = self._clock()
            try:
                registration.stop(registration.service)
            except Exception:  # noqa: BLE001 - the rest must still stop
                log.exception("service %r: its stop failed after %.2f s", registration.name, self._clock() - began)
            else:
                log.info("service %r: stopped in %.2f s", registration.name, self._clock() - began)
            with self._lock:
                registration.service, registration.started = None, False
