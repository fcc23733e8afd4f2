"""Spark for tests: a standalone master and worker started from the pyspark wheel's
own `bin/spark-class`, and the environment a driver needs to use them
(`spark_environment`). Sessions are the product's to build (`flow.spark.session`):
the harness imports nothing of the product.

The standalone daemons bind to 127.0.0.1 on harness-chosen ports, keep small heaps,
and do their scratch work under the work directory. Python code that runs on the
worker uses the interpreter of the process that submits it (PYSPARK_PYTHON).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import urllib.request
from pathlib import Path

from .install import java_binary
from .network import HOST, free_ports
from .process import ManagedProcess, ServiceError, is_zombie, wait_until


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def spark_environment(workdir: Path | None = None) -> dict[str, str]:
    env = {
        "SPARK_HOME": spark_home(),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_DAEMON_MEMORY": "256m",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "JAVA_HOME": str(Path(os.path.realpath(java_binary())).parent.parent),
    }
    if workdir is not None:
        env["SPARK_LOG_DIR"] = str(workdir)
        env["SPARK_WORKER_DIR"] = str(workdir / "work")
    return env


def executor_pids(worker_port: int) -> list[int]:
    """Executor processes launched by the worker on `worker_port` (an executor names its
    worker's address on its command line) that are still running."""
    marker = f"spark://Worker@{HOST}:{worker_port}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as stream:
                argv = stream.read()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if b"CoarseGrainedExecutorBackend" in argv and marker in argv and not is_zombie(int(entry)):
            found.append(int(entry))
    return found


class SparkStandalone:
    name = "spark"

    def __init__(self, workdir: Path, worker_cores: int = 1, worker_memory: str = "768m"):
        self.workdir = Path(workdir) / "spark"
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.ports: dict[str, int] = {}
        self.master: ManagedProcess | None = None
        self.worker: ManagedProcess | None = None
        state = self._load_state()
        if state:
            self.ports = state["ports"]
            self._build(state["pids"])

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.ports['master']}"

    def start(self, timeout: float = 120.0) -> None:
        if not self.ports:
            names = ["master", "master_ui", "worker", "worker_ui"]
            self.ports = dict(zip(names, free_ports(len(names)), strict=False))
            self._build({})
        (self.workdir / "work").mkdir(parents=True, exist_ok=True)
        self.master.start()
        self.worker.start()
        self._save_state()
        try:
            wait_until(self.healthy, timeout, "the Spark master to list one ALIVE worker", interval=0.25)
        except ServiceError as error:
            raise ServiceError(f"{error}. Master log: {self.master.log_path}\n{self.master.log_tail(10)}") from None

    def healthy(self) -> bool:
        try:
            return self._alive_workers() >= 1
        except Exception:  # noqa: BLE001
            return False

    def stop(self) -> None:
        """Stop the whole cluster, executors included. The master goes first: a worker
        that is shutting down kills its executors, and a master still up answers each
        such death by asking the dying worker for a new executor, which it may launch
        before it exits, an orphan that runs an application's tasks on with no cluster."""
        for process in (self.master, self.worker):
            if process:
                process.stop()
        if self.ports:
            for pid in executor_pids(self.ports["worker"]):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            wait_until(lambda: not executor_pids(self.ports["worker"]), 15, "the worker's executors to exit")

    def kill_worker(self) -> None:
        self.worker.kill()

    def status(self) -> dict:
        alive = None
        try:
            alive = self._alive_workers()
        except Exception:  # noqa: BLE001
            pass
        return {
            "master": self.master_url,
            "master_pid": self.master.pid if self.master else None,
            "worker_pid": self.worker.pid if self.worker else None,
            "alive_workers": alive,
            "healthy": bool(alive),
        }

    def _alive_workers(self) -> int:
        with urllib.request.urlopen(f"http://{HOST}:{self.ports['master_ui']}/json/", timeout=2) as response:
            data = json.load(response)
        return sum(1 for worker in data.get("workers", []) if worker.get("state") == "ALIVE")

    def _build(self, pids: dict) -> None:
        spark_class = os.path.join(spark_home(), "bin", "spark-class")
        env = spark_environment(self.workdir)
        self.master = ManagedProcess.attach(
            "spark-master",
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                HOST,
                "--port",
                str(self.ports["master"]),
                "--webui-port",
                str(self.ports["master_ui"]),
            ],
            str(self.workdir / "master.log"),
            pids.get("master"),
            env=env,
        )
        self.worker = ManagedProcess.attach(
            "spark-worker",
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                HOST,
                "--port",
                str(self.ports["worker"]),
                "--webui-port",
                str(self.ports["worker_ui"]),
                "--cores",
                str(self.worker_cores),
                "--memory",
                self.worker_memory,
                "--work-dir",
                str(self.workdir / "work"),
                self.master_url,
            ],
            str(self.workdir / "worker.log"),
            pids.get("worker"),
            env=env,
        )

    def _state_path(self) -> Path:
        return self.workdir / "state.json"

    def _save_state(self) -> None:
        self._state_path().write_text(
            json.dumps({"ports": self.ports, "pids": {"master": self.master.pid, "worker": self.worker.pid}})
        )

    def _load_state(self) -> dict | None:
        try:
            return json.loads(self._state_path().read_text())
        except (OSError, ValueError):
            return None
