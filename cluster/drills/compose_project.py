"""A running docker-compose project of Custody's cluster, seen and hurt through the
Docker API: what a drill needs to inject faults into containers and read what the
nodes did.

    project = ComposeProject.attach("custody")     # ComposeNotRunning if it is not up
    project.nodes                                  # {"n1": "custody1", ...}: node -> service
    project.kill("custody1"); project.start("custody1")
    project.signal("custody2", "SIGSTOP"); project.signal("custody2", "SIGCONT")
    project.disconnect("custody3"); project.reconnect("custody3")   # a network partition
    project.events("custody1", NodeEvent.JOINED)   # the node's --events lines, parsed
    project.volume_directory("custody-out")        # where the engine keeps a volume
    project.run_beside("custody1", "/var/lib/custody", ["python3", "-m", "..."])  # a one-off container

Services are found by the labels Compose puts on containers
(`com.docker.compose.project`, `com.docker.compose.service`); a custody node is a
service whose command carries `--name <node>`. The nodes print their events as JSON
lines on stdout (`--events`), which the engine keeps in the container's log across
restarts; they are read from there. Volumes are read where the engine keeps them
(its `Mountpoint`), which needs the rights of the engine's own user: the drill says so
when it cannot.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import TYPE_CHECKING

from ..node.events import NodeEvent
from .log_cursor import LogCursor

if TYPE_CHECKING:
    from docker import DockerClient

PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
EVENTS_REFRESH = 0.25  # seconds the events read are reused before the engine is asked for new lines


class ComposeNotRunning(Exception):
    """The compose project is not there, or not running enough to drill."""


class ComposeProject:
    def __init__(self, name: str, client: DockerClient):
        self.name, self.client = name, client
        self._events: dict[str, tuple[float, list[dict]]] = {}
        self._cursors: dict[str, LogCursor] = {}  # how far each service's log was read
        self._container_ids: dict[str, str] = {}
        self._lock = threading.Lock()
        self.nodes = self._node_services()

    @classmethod
    def attach(cls, name: str) -> ComposeProject:
        """The running project `name`: `ComposeNotRunning` (saying what to run) if the
        engine cannot be reached or no container of the project runs."""
        import docker
        from docker.errors import DockerException

        try:
            client = docker.from_env()
            client.ping()
        except DockerException as error:
            raise ComposeNotRunning(
                f"cannot reach the Docker engine ({error}); start it, or set DOCKER_HOST"
            ) from error
        running = client.containers.list(filters={"label": f"{PROJECT_LABEL}={name}"})
        if not running:
            raise ComposeNotRunning(
                f"compose project {name!r} has no running container: start it with "
                f"`docker compose -p {name} up -d --wait` (or name another with --project)"
            )
        return cls(name, client)

    # -- containers --------------------------------------------------------------------------
    def container(self, service: str):
        """The service's container, running or not (Compose keeps one per service here)."""
        found = self.client.containers.list(
            all=True, filters={"label": [f"{PROJECT_LABEL}={self.name}", f"{SERVICE_LABEL}={service}"]}
        )
        if not found:
            raise ComposeNotRunning(f"compose project {self.name!r} has no container for service {service!r}")
        return found[0]

    def services(self) -> list[str]:
        containers = self.client.containers.list(all=True, filters={"label": f"{PROJECT_LABEL}={self.name}"})
        return sorted({c.labels[SERVICE_LABEL] for c in containers})

    def _node_services(self) -> dict[str, str]:
        nodes = {}
        for service in self.services():
            args = self.container(service).attrs["Args"] or []
            if "--name" in args[:-1]:
                nodes[args[args.index("--name") + 1]] = service
        return dict(sorted(nodes.items()))

    def status(self, service: str) -> str:
        """ "running", "paused", "exited", ... as the engine says now."""
        container = self.container(service)
        container.reload()
        return container.status

    # -- faults --------------------------------------------------------------------------------
    def kill(self, service: str) -> None:
        """SIGKILL the service's main process. The engine treats it as stopped on
        purpose: its restart policy does not bring it back; `start` does."""
        self.container(service).kill()

    def start(self, service: str) -> None:
        self.container(service).start()

    def stop(self, service: str, timeout: float = 30.0) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds: the node hands over and leaves."""
        self.container(service).stop(timeout=int(timeout))

    def signal(self, service: str, name: str) -> None:
        """Send a signal to the service's main process (`docker kill --signal`). SIGSTOP
        and SIGCONT reach it although it is the container's init. A hung node is a
        SIGSTOP of its process, not `docker pause`: the cgroup v1 freezer fails ("unable
        to freeze") when a task of the container does not reach a freezable point in
        time, as one in the middle of an fsync may not; a SIGSTOP cannot fail, and takes
        effect when the task is back from the kernel."""
        self.container(service).kill(signal=name)

    def unpause(self, service: str) -> None:
        """Thaw a container someone froze with `docker pause`."""
        self.container(service).unpause()

    def networks(self, service: str) -> list[str]:
        container = self.container(service)
        container.reload()
        return sorted(container.attrs["NetworkSettings"]["Networks"])

    def disconnect(self, service: str) -> list[str]:
        """Cut the container off every network it is on (its process runs on, and loses
        ZooKeeper, HDFS and the other nodes); returns them, for `reconnect`."""
        names = self.networks(service)
        container = self.container(service)
        for network in names:
            self.client.networks.get(network).disconnect(container)
        return names

    def reconnect(self, service: str, networks: list[str]) -> None:
        """Put the container back on `networks`, under its service name (and host name)
        again, as Compose attached it."""
        container = self.container(service)
        aliases = [service] + (
            [container.attrs["Config"]["Hostname"]]
            if container.attrs["Config"].get("Hostname") not in (None, service)
            else []
        )
        for network in networks:
            self.client.networks.get(network).connect(container, aliases=aliases)

    # -- what the nodes said ---------------------------------------------------------------------
    def events(self, service: str, kind: NodeEvent | None = None, **fields) -> list[dict]:
        """The node's events (JSON lines on its stdout, across its restarts), oldest
        first; only those of `kind` whose fields equal `fields`, if given."""
        with self._lock:
            read_at, parsed = self._events.get(service, (0.0, []))
            if time.monotonic() - read_at > EVENTS_REFRESH:
                cursor = self._cursors.setdefault(service, LogCursor())
                parsed = parsed + parse_events("\n".join(cursor.take(self._stdout_since(service, cursor.since()))))
                self._events[service] = (time.monotonic(), parsed)
        return [
            e
            for e in parsed
            if (kind is None or e["event"] == kind) and all(e.get(key) == value for key, value in fields.items())
        ]

    def _stdout_since(self, service: str, since: int) -> str:
        """The service's stdout from second `since` on, each line with its timestamp
        (`log_cursor`); its container is looked up again only when it is not found."""
        from docker.errors import NotFound

        container_id = self._container_ids.get(service)
        if container_id is not None:
            try:
                return self._logs(container_id, since)
            except NotFound:
                pass
        container_id = self._container_ids[service] = self.container(service).id
        return self._logs(container_id, since)

    def _logs(self, container_id: str, since: int) -> str:
        raw = self.client.api.logs(container_id, stdout=True, stderr=False, timestamps=True, since=since or None)
        return raw.decode(errors="replace")

    def log_tail(self, service: str, size: int = 3000) -> str:
        return self.container(service).logs(stdout=True, stderr=True, tail=200).decode(errors="replace")[-size:]

    # -- volumes -----------------------------------------------------------------------------------
    def volume_directory(self, volume: str) -> str:
        """Where the engine keeps the project's volume `volume` (as named in the compose
        file); `ComposeNotRunning` if it is missing or this user cannot read it."""
        from docker.errors import NotFound

        try:
            mountpoint = self.client.volumes.get(f"{self.name}_{volume}").attrs["Mountpoint"]
        except NotFound as error:
            raise ComposeNotRunning(f"compose project {self.name!r} has no volume {volume!r}") from error
        if not os.access(mountpoint, os.R_OK | os.X_OK):
            raise ComposeNotRunning(
                f"cannot read volume {volume!r} at {mountpoint}: the drill reads the nodes' "
                "output and provenance where the engine keeps them; run it as root"
            )
        return mountpoint

    def read_file(self, service: str, path: str) -> str:
        """The text of `path` inside the service's running container, read by the
        container's own user (`ComposeNotRunning` when it cannot be read)."""
        code, output = self.container(service).exec_run(["cat", path], stdout=True, stderr=True)
        text = (output or b"").decode(errors="replace")
        if code != 0:
            raise ComposeNotRunning(f"cannot read {path} in {service}: {text.strip()[-300:]}")
        return text

    def run_beside(self, service: str, path: str, command: list[str]) -> str:
        """Run `command` in a new container of the service's image, with the volume the
        service has at `path` mounted there, and no network; return what it printed on
        stdout (`ComposeNotRunning` with its output if it failed)."""
        from docker.errors import ContainerError

        container = self.container(service)
        mounts = [m for m in container.attrs["Mounts"] if m.get("Destination") == path and m.get("Name")]
        if not mounts:
            raise ComposeNotRunning(f"service {service!r} has no volume at {path}")
        try:
            output = self.client.containers.run(
                container.attrs["Config"]["Image"],
                command,
                entrypoint=[],
                volumes={mounts[0]["Name"]: {"bind": path, "mode": "rw"}},
                network_mode="none",
                remove=True,
                stdout=True,
                stderr=False,
            )
        except ContainerError as error:
            raise ComposeNotRunning(
                f"{' '.join(command)} beside {service} failed: {(error.stderr or b'').decode(errors='replace')[-500:]}"
            ) from error
        return output.decode(errors="replace")

    def published_port(self, service: str, port: int) -> int:
        container = self.container(service)
        container.reload()
        bindings = (container.attrs["NetworkSettings"]["Ports"] or {}).get(f"{port}/tcp") or []
        if not bindings:
            raise ComposeNotRunning(f"service {service!r} publishes no host port for {port}")
        return int(bindings[0]["HostPort"])

    def close(self) -> None:
        self.client.close()


def parse_events(text: str) -> list[dict]:
    """The events (`--events` JSON lines) in what a node printed, oldest first; every
    other line is skipped."""
    events = []
    for line in text.splitlines():
        if line.startswith('{"event"'):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events
