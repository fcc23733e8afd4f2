"""NiFi's JVM: found (Java 21+), started as NiFi's bootstrap starts it, waited for, stopped.

The JVM runs `org.apache.nifi.NiFi` with lib/*.jar and conf/ on the class path and
the system properties NiFi's bootstrap passes (nifi.properties' path, the log
directory, the management server's address), plus bootstrap.conf's JVM arguments.
`NiFiProcess` is a context manager: leaving it, normally or by an error, stops the
JVM (SIGTERM, then SIGKILL after a deadline), so that no run leaves a JVM behind;
and should the benchmark's process die without leaving it (SIGKILL), the kernel
sends the JVM SIGTERM (`dies_with_this_process`, Linux's parent-death signal).
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from cluster.node.parent_death import dies_with_this_process

from .configuration import BOOTSTRAP_JAVA_ARGUMENTS, write_configuration

JVM_DIRECTORY = Path("/usr/lib/jvm")
MINIMUM_JAVA = 21


class NiFiStartError(RuntimeError):
    """NiFi did not start; the message holds the end of its log."""


def java_major(release_text: str) -> int | None:
    """The major version in a JDK's `release` file (JAVA_VERSION="25.0.3" -> 25; "1.8.0" -> 8)."""
    match = re.search(r'^JAVA_VERSION="([0-9]+)(?:\.([0-9]+))?', release_text, re.MULTILINE)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java(root: Path = JVM_DIRECTORY, minimum: int = MINIMUM_JAVA) -> tuple[Path, int]:
    """The newest JDK under `root` of at least `minimum`: (its java, its major version)."""
    found = []
    for home in sorted(root.iterdir()) if root.is_dir() else []:
        release = home / "release"
        java = home / "bin" / "java"
        if home.is_symlink() or not release.is_file() or not java.is_file():
            continue
        major = java_major(release.read_text(errors="replace"))
        if major is not None and major >= minimum:
            found.append((major, java))
    if not found:
        raise NiFiStartError(
            f"NiFi 2 needs Java {minimum} or newer and none was found under {root}; "
            f"install one (e.g. a Temurin {minimum}+ JDK) there"
        )
    major, java = max(found)
    return java, major


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class NiFiProcess:
    """One NiFi JVM for a benchmark run in `run` (its conf, repositories and logs)."""

    def __init__(self, home: Path, run: Path, java: Path, start_timeout: float = 300.0):
        self.home = home
        self.run = run
        self.java = java
        self.start_timeout = start_timeout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/nifi-api"
        self.process: subprocess.Popen | None = None

    def command(self, properties: Path, management_port: int) -> list[str]:
        lib = self.home / "lib"
        class_path = ":".join([*sorted(str(jar) for jar in lib.glob("*.jar")), str(properties.parent)])
        return [
            str(self.java),
            "--class-path",
            class_path,
            f"-Dorg.apache.nifi.bootstrap.config.log.dir={self.run / 'logs'}",
            f"-Dnifi.properties.file.path={properties}",
            f"-Dorg.apache.nifi.management.server.address=127.0.0.1:{management_port}",
            f"-Dlogback.configurationFile={properties.parent / 'logback.xml'}",
            *BOOTSTRAP_JAVA_ARGUMENTS,
            "org.apache.nifi.NiFi",
        ]

    def __enter__(self) -> NiFiProcess:
        properties = write_configuration(self.run, self.home, self.port, secrets.token_hex(16))
        output = open(self.run / "logs" / "nifi-jvm.out", "wb")  # noqa: SIM115 (closed with the process)
        try:
            self.process = subprocess.Popen(
                dies_with_this_process(self.command(properties, free_port())),
                cwd=self.run,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            output.close()
        try:
            self._wait_for_api()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _wait_for_api(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise NiFiStartError(f"NiFi exited with {self.process.returncode} while starting:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/flow/about", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1)
        raise NiFiStartError(f"NiFi's REST API did not answer within {self.start_timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for name in ("nifi-jvm.out", "nifi-app.log"):
            path = self.run / "logs" / name
            if path.exists():
                parts.append(f"--- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(parts)

    def cpu_seconds(self) -> float | None:
        """User plus system CPU seconds the JVM has used, from /proc/PID/stat."""
        if self.process is None:
            return None
        try:
            with open(f"/proc/{self.process.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (NiFi's shutdown hook stops the flow), SIGKILL if it is still there after `timeout`."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        except ProcessLookupError:
            pass
