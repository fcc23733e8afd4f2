"""All the services of a work directory together: install, start, status, stop.

This is what `custody services ...`, the README's main command, the test fixtures and
CI all use. Services start in parallel threads (each is a few JVMs on 2 cores, so
this roughly halves the wall time) and each reports its own start time.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .docker_engine import DockerEngine
from .hdfs import HdfsCluster
from .hdfs_client import ensure_client
from .install import cache_dir, ensure_debian_packages, hadoop_jars, kafka_jars
from .kafka import KafkaBroker
from .spark import SparkStandalone
from .zookeeper import ZooKeeperEnsemble

SERVICE_NAMES = ("zookeeper", "hdfs", "spark", "docker", "kafka")


def default_workdir() -> Path:
    """$CUSTODY_WORKDIR, or `.work/services` beside the checkout's pyproject.toml."""
    if "CUSTODY_WORKDIR" in os.environ:
        return Path(os.environ["CUSTODY_WORKDIR"])
    here = Path(__file__).resolve()
    for candidate in here.parents:
        if (candidate / "pyproject.toml").exists():
            return candidate / ".work" / "services"
    return Path.home() / ".custody" / "services"


def install_all() -> None:
    """Everything the services need that is not yet on this machine."""
    ensure_debian_packages()
    hadoop_jars()
    ensure_client(cache_dir())
    kafka_jars()


@dataclass
class ServiceStack:
    workdir: Path = field(default_factory=default_workdir)
    datanodes: int = 3
    peak: bool = False  # the JVMs' JIT with C2 as well as C1 (`jit`)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.services = {
            "zookeeper": ZooKeeperEnsemble(self.workdir, peak=self.peak),
            "hdfs": HdfsCluster(self.workdir, datanodes=self.datanodes, peak=self.peak),
            "spark": SparkStandalone(self.workdir),
            "docker": DockerEngine(self.workdir),
            "kafka": KafkaBroker(self.workdir, peak=self.peak),
        }

    def start(self, names=SERVICE_NAMES) -> dict[str, dict]:
        """Start the named services in parallel. Returns, per service, its start time in
        seconds or the error that stopped it."""

        def start_one(name: str) -> dict:
            began = time.monotonic()
            try:
                self.services[name].start()
            except Exception as error:  # noqa: BLE001 - reported per service
                return {"started": False, "error": str(error), "seconds": time.monotonic() - began}
            return {"started": True, "seconds": round(time.monotonic() - began, 2)}

        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            results = dict(zip(names, pool.map(start_one, names), strict=False))
        return results

    def status(self, names=SERVICE_NAMES) -> dict[str, dict]:
        """Each named service's status; one never started in this work directory (it
        has no ports or processes recorded yet) is reported as such, not as a crash."""
        return {name: self._status_of(name) for name in names}

    def _status_of(self, name: str) -> dict:
        try:
            return self.services[name].status()
        except Exception as error:  # noqa: BLE001 - a status must always answer
            return {
                "healthy": False,
                "error": f"not running from {self.workdir} ({type(error).__name__}: {error}); "
                f"start it with `custody services up --only {name}`",
            }

    def stop(self, names=SERVICE_NAMES) -> None:
        for name in names:
            self.services[name].stop()
