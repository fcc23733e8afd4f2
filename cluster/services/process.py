"""One daemon process that the harness started: its command, log file and pid.

Processes start in a session of their own so that a signal meant for a daemon
(SIGKILL, SIGSTOP for the drills) never reaches the test runner, and so that they
outlive `custody services up` when it runs detached. A process can be re-adopted
from its pid alone (`ManagedProcess.attach`), which is how `custody services status`
and `down` find daemons started by an earlier command.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

FROM_LAST_MAX = 80  # lines a log tail shows at most from its last matching line (`log_tail`)


class ServiceError(RuntimeError):
    """A service could not be installed, started or health-checked. The message names
    the service, what failed, and where its log is."""


@dataclass
class ManagedProcess:
    name: str
    argv: Sequence[str]
    log_path: str
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    pid: int | None = None
    _popen: subprocess.Popen | None = field(default=None, repr=False)

    @classmethod
    def attach(
        cls, name: str, argv: Sequence[str], log_path: str, pid: int | None, env=None, cwd=None
    ) -> ManagedProcess:
        return cls(name=name, argv=list(argv), log_path=log_path, env=env, cwd=cwd, pid=pid)

    def start(self) -> None:
        if self.alive():
            return
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        environment = dict(os.environ)
        environment.update(self.env or {})
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._popen = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment,
                cwd=self.cwd,
                start_new_session=True,
            )
        self.pid = self._popen.pid

    def alive(self) -> bool:
        if self.pid is None:
            return False
        if self._popen is not None:
            return self._popen.poll() is None
        return pid_alive(self.pid)

    def signal(self, signum: int) -> None:
        if self.pid is not None and self.alive():
            os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL and reap: the abrupt death the drills inject."""
        self.signal(signal.SIGKILL)
        self._wait_dead(10.0)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL if the process has not gone after `timeout` seconds."""
        if not self.alive():
            self._reap()
            return
        self.signal(signal.SIGCONT)  # a paused process cannot handle SIGTERM
        self.signal(signal.SIGTERM)
        if not self._wait_dead(timeout):
            self.kill()

    def _wait_dead(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._popen is not None:
                try:
                    self._popen.wait(timeout=max(0.0, min(0.2, deadline - time.monotonic())))
                    return True
                except subprocess.TimeoutExpired:
                    continue
            if not self.alive():
                return True
            time.sleep(0.05)
        return not self.alive()

    def _reap(self) -> None:
        if self._popen is not None:
            self._popen.poll()

    def log_tail(self, lines: int = 30, *, from_last: str | None = None) -> str:
        """The log's last `lines` lines; with `from_last` (a regular expression), from
        the last line that matches it if that is further back (a JVM's exception, above
        its stack), at most `FROM_LAST_MAX` lines."""
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - 64 * 1024))
                text = handle.read().decode(errors="replace")
        except OSError:
            return "(no log yet)"
        found = text.splitlines()
        start = len(found) - lines
        if from_last is not None:
            pattern = re.compile(from_last)
            matching = [index for index, line in enumerate(found) if pattern.search(line)]
            if matching:
                start = min(start, max(matching[-1], len(found) - FROM_LAST_MAX))
        return "\n".join(found[max(start, 0) :])


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs: another user's does, a zombie does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not is_zombie(pid)


def is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().split(b") ", 1)[1][:1] == b"Z"
    except (OSError, IndexError):
        return False


def wait_until(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.1) -> object:
    """Poll `condition` until it returns a truthy value; raise ServiceError naming `what`
    when `timeout` seconds pass. Exceptions from `condition` count as "not yet"."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as error:  # noqa: BLE001 - a probe failing means "not yet"
            last_error = error
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            raise ServiceError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)


def run_checked(
    argv: Sequence[str], what: str, env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None
) -> None:
    """Run `argv` to its end; if it fails, a `ServiceError` naming `what`, its exit code
    and the last 20 lines it printed (or that its program is not installed)."""
    try:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    except FileNotFoundError as error:
        raise ServiceError(f"{what} failed: {argv[0]} is not installed ({error.strerror})") from None
    if result.returncode != 0:
        tail = "\n".join(result.stdout.decode(errors="replace").splitlines()[-20:])
        raise ServiceError(f"{what} failed with exit code {result.returncode}:\n{tail}")
