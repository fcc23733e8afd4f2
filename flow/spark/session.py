"""The node's SparkSession: built from a master URL and Spark conf, shared by the
processors as the service "spark".

    spark = SparkSessionFactory()                          # embedded local[*]
    spark = SparkSessionFactory("spark://host:7077", {"spark.cores.max": "2"})
    services.register(SPARK_SERVICE, spark, spark.stop)    # flow.services.ServiceRegistry
    session = context.service("spark")                     # in a processor: started on first use

pyspark is imported only when a session is built: importing `flow` never loads it,
and a node whose flow does not use Spark never starts a JVM.

An embedded session (a `local` master) binds to loopback and keeps a small footprint
(`EMBEDDED_CONF`), since it shares its host with the node; any of it can be
overridden through the conf. A session for a cluster gets only the conf given (and no
console progress bars in the node's log).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_SERVICE = "spark"
LOCAL_MASTER = "local[*]"
LOOPBACK = "127.0.0.1"

EMBEDDED_CONF: Mapping[str, str] = {
    "spark.driver.host": LOOPBACK,
    "spark.driver.bindAddress": LOOPBACK,
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}
CLUSTER_CONF: Mapping[str, str] = {"spark.ui.showConsoleProgress": "false"}

_gateway_lock = threading.Lock()


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


@contextlib.contextmanager
def _fork_safe_gateway_launch():
    """pyspark starts its JVM with a Python `preexec_fn` (to ignore SIGINT). Python code
    run between fork and exec can deadlock when other threads held a lock at fork time,
    and a node always has some (hdfs-native's runtime, kazoo, the engine's pool): this
    hung a test session for ten minutes. A new session gives the JVM the same shelter
    from the terminal's Ctrl-C without running Python code in the child."""
    import pyspark.java_gateway as java_gateway

    def popen(*args, preexec_fn=None, **kwargs):
        kwargs["start_new_session"] = True
        return subprocess.Popen(*args, **kwargs)

    with _gateway_lock:
        java_gateway.Popen = popen
        try:
            yield
        finally:
            java_gateway.Popen = subprocess.Popen


def build_spark_session(
    master: str = LOCAL_MASTER, conf: Mapping[str, str] | None = None, *, app_name: str = "custody"
):
    """A SparkSession for `master` with `conf` over the defaults (`EMBEDDED_CONF` for a
    local master, `CLUSTER_CONF` otherwise). Python on the executors is this
    interpreter unless PYSPARK_PYTHON says otherwise. Spark keeps one session per
    process: if one is running already, Spark returns it (with this conf applied to
    what can still change)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if is_local(master):
        # Spark otherwise resolves the host name, which may not point at this machine.
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**(EMBEDDED_CONF if is_local(master) else CLUSTER_CONF), **(conf or {})}.items():
        builder = builder.config(key, str(value))
    with _fork_safe_gateway_launch():
        return builder.getOrCreate()


def local_session(app_name: str = "custody", conf: Mapping[str, str] | None = None):
    """An embedded `local[*]` SparkSession bound to loopback, with a small footprint."""
    return build_spark_session(LOCAL_MASTER, conf, app_name=app_name)


@dataclass(frozen=True)
class SparkSessionFactory:
    """The start and stop of the "spark" service: `factory()` builds the session,
    `factory.stop(session)` ends it (`ServiceRegistry.register(name, factory, factory.stop)`)."""

    master: str = LOCAL_MASTER
    conf: Mapping[str, str] = field(default_factory=dict)
    app_name: str = "custody"

    def __call__(self):
        return build_spark_session(self.master, self.conf, app_name=self.app_name)

    @staticmethod
    def stop(session: SparkSession) -> None:
        session.stop()

    @staticmethod
    def alive(session: SparkSession) -> bool:
        """False once the session's SparkContext stopped (its cluster manager gave up on
        it, or it was stopped): the registry then starts a new session."""
        context = session.sparkContext._jsc
        return context is not None and not context.sc().isStopped()
