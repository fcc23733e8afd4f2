"""Shared fixtures: the real services, started once per test session.

* `zookeeper_ensemble`, `hdfs_cluster`, `spark_standalone`, `docker_engine`,
  `kafka_broker`, `kafka_secure_broker`: session scoped, from `cluster.services`, in
  one work directory for the whole run. `kafka_broker` is the session's broker, checked
  before each test and started again if an earlier test left it dead or hung.
* `zk_hosts` and `zk_client`: a fresh ZooKeeper chroot for each test.
* `local_store` and `hdfs_store`: a fresh, empty directory for each test, with the
  storage that holds it (`.storage`, `.root`).
* `spark_local`: the run's embedded `local[*]` SparkSession (started again if a test stopped it).
* `flow_cluster`: a `FlowCluster` (real `custody node` processes) on this test's
  chroot and HDFS directory, stopped afterwards with the nodes' log tails printed.
* `chromium`: Debian's headless Chromium (`/usr/bin/chromium`, which
  `custody services install` installs) driven by Playwright, once per module.
* `harness_services_stopped`: for a test that needs the machine to itself (the
  compose cluster: a dozen JVMs on 2 cores). It stops the ZooKeeper, HDFS, Spark
  standalone, Kafka and embedded Spark that earlier tests started. Such tests are marked
  `whole_machine` and run after every other test (`pytest_collection_modifyitems`),
  so no later test finds its services stopped.

A service that cannot start skips the tests that need it on a developer's machine,
and fails them when CI=true: in CI every service is installed, so a skip would hide
a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from repositories.storage import LocalStorage, Storage

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if IN_CI else "dev"))


def service_unavailable(name: str, error: BaseException):
    message = f"{name} could not be started: {error}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: a missing service is a failure)", pytrace=False)
    pytest.skip(message)


@contextmanager
def own_hdfs(workdir, **options) -> Iterator:
    """An HDFS of a test's own (`HdfsCluster(workdir, **options)`), started, and stopped
    when the block ends: for a test that needs settings or DataNodes the session's
    HDFS must not have."""
    from cluster.services.hdfs import HdfsCluster

    cluster = HdfsCluster(workdir, **options)
    try:
        try:
            cluster.start()
        except Exception as error:  # noqa: BLE001
            service_unavailable("HDFS", error)
        yield cluster
    finally:
        cluster.stop()


@dataclass(frozen=True)
class StoreRoot:
    storage: Storage
    root: str


@pytest.fixture(scope="session")
def services_workdir():
    path = Path(tempfile.mkdtemp(prefix="custody-services-"))
    yield path
    if not os.environ.get("CUSTODY_KEEP_SERVICES_DIR"):
        shutil.rmtree(path, ignore_errors=True)


_SESSION_SERVICES: list = []  # the harness services this session started, in order


def _started(request, workdir, factory, name):
    service = factory(workdir)
    try:
        service.start()
    except Exception as error:  # noqa: BLE001
        service.stop()
        service_unavailable(name, error)
    request.addfinalizer(service.stop)
    _SESSION_SERVICES.append(service)
    return service


@pytest.fixture(scope="session")
def zookeeper_ensemble(request, services_workdir):
    from cluster.services.zookeeper import ZooKeeperEnsemble

    return _started(request, services_workdir, ZooKeeperEnsemble, "ZooKeeper")


@pytest.fixture(scope="session")
def hdfs_cluster(request, services_workdir):
    from cluster.services.hdfs import HdfsCluster

    return _started(request, services_workdir, HdfsCluster, "HDFS")


@pytest.fixture(scope="session")
def spark_standalone(request, services_workdir):
    from cluster.services.spark import SparkStandalone

    return _started(request, services_workdir, SparkStandalone, "Spark standalone")


@pytest.fixture(scope="session")
def _kafka_session_broker(request, services_workdir):
    from cluster.services.kafka import KafkaBroker

    return _started(request, services_workdir, KafkaBroker, "Kafka")


@pytest.fixture
def kafka_broker(_kafka_session_broker):
    """The session's broker, started again first if an earlier test left it dead or not
    answering: a failure stays with the test that caused it."""
    _kafka_session_broker.serving_or_restarted()
    return _kafka_session_broker


@pytest.fixture(scope="session")
def kafka_secure_broker(request, services_workdir):
    """A second broker, for the tests of Kafka's security settings only: SASL (PLAIN,
    SCRAM) over TLS and in clear, besides PLAINTEXT (`cluster.services.kafka_security`)."""
    from cluster.services.kafka import KafkaBroker

    return _started(request, services_workdir, lambda workdir: KafkaBroker(workdir, security=True), "Secure Kafka")


@pytest.fixture(scope="session")
def docker_engine(request, services_workdir):
    from cluster.services.docker_engine import DockerEngine

    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # ryuk's image cannot be pulled here
    return _started(request, services_workdir, DockerEngine, "Docker")


@pytest.fixture(scope="session")
def _spark_local_sessions():
    made = []
    yield made
    if made:
        made[-1].stop()


@pytest.fixture
def spark_local(_spark_local_sessions):
    """The run's embedded SparkSession. A JVM holds one SparkContext, which a node under
    test may stop with itself (its session is the same one): so each test asks again,
    and gets the running session, or a new one if an earlier test stopped it."""
    from flow.spark.session import local_session

    try:
        spark = local_session("custody-tests")
    except Exception as error:  # noqa: BLE001
        service_unavailable("Spark local[*]", error)
    _spark_local_sessions.append(spark)
    return spark


@pytest.fixture
def harness_services_stopped(request, _spark_local_sessions):
    """Stop the session's ZooKeeper, HDFS, Spark and Kafka (the Docker engine stays). Only for
    tests marked `whole_machine`, which run last: the session fixtures stay cached,
    stopped, and their finalizers stop them again harmlessly."""
    if request.node.get_closest_marker("whole_machine") is None:
        pytest.fail("harness_services_stopped is for tests marked whole_machine (they run last)", pytrace=False)
    for service in _SESSION_SERVICES:
        if service.name != "docker":
            service.stop()
    for spark in _spark_local_sessions:
        spark.stop()


def pytest_collection_modifyitems(config, items):
    """Tests marked `whole_machine` run after all the others (in their own order). Before
    them, the files that hold a test marked `slow` come first, each file's tests kept
    together: `make test`'s two workers take files in this order, and a long file
    started last would leave one worker running it alone."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: (item.get_closest_marker("whole_machine") is not None, item.path not in slow_files))


@pytest.fixture
def flow_cluster(zk_hosts, hdfs_cluster, hdfs_store, tmp_path):
    from cluster.drills.flow_cluster import FlowCluster

    made = FlowCluster(zk_hosts, hdfs_cluster.url, hdfs_store.root, tmp_path, hdfs_cluster.client_config)
    yield made
    made.close()
    print(made.tails())


CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def chromium():
    """A Playwright `Browser`: Debian's Chromium, headless. Playwright's own browser
    builds are never downloaded (this machine reaches no host that serves them).
    Module scope: Playwright's sync API keeps an event loop of its own on the main
    thread while it runs, which no test outside the module should meet."""
    if not os.path.exists(CHROMIUM):
        service_unavailable(
            "Chromium",
            FileNotFoundError(f"{CHROMIUM} is missing; `custody services install` installs Debian's chromium"),
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        except Exception as error:  # noqa: BLE001
            service_unavailable("Chromium", error)
        yield browser
        browser.close()


def _unique(request) -> str:
    return f"{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def zk_hosts(request, zookeeper_ensemble):
    """A connection string with a fresh chroot of this test's own."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError

    from cluster.zk.client import RECONNECT

    chroot = f"/tests/{_unique(request)}"
    # It reconnects as promptly as the nodes do when a test cut the ensemble.
    admin = KazooClient(hosts=zookeeper_ensemble.hosts, timeout=10, connection_retry=dict(RECONNECT))
    admin.start(timeout=30)
    admin.ensure_path(chroot)
    yield zookeeper_ensemble.connection_string(chroot)
    try:
        admin.delete(chroot, recursive=True)
    except NoAuthError:
        pass  # a secured cluster's znodes that its own harness could not remove stay
    admin.stop()
    admin.close()


@pytest.fixture
def zk_client(zk_hosts):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zk_hosts, timeout=4)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def local_store(tmp_path) -> StoreRoot:
    root = tmp_path / "store"
    root.mkdir()
    return StoreRoot(LocalStorage(), str(root))


@pytest.fixture
def hdfs_store(request, hdfs_cluster) -> StoreRoot:
    from replication.hdfs_storage import HdfsStorage

    storage = HdfsStorage(hdfs_cluster.url)
    root = f"/tests/{_unique(request)}"
    storage.mkdir(root, parents=True)
    yield StoreRoot(storage, root)
    try:
        storage.delete(root, recursive=True)
    except Exception:  # noqa: BLE001 - a test may have stopped HDFS on purpose
        pass


@pytest.fixture(params=["local", "hdfs"])
def any_store(request) -> StoreRoot:
    """The same test on both backends."""
    return request.getfixturevalue(f"{request.param}_store")


@pytest.fixture
def small_tmpfs(tmp_path):
    """`small_tmpfs(size)` mounts a real tmpfs of that size (e.g. "2m") for a full-disk
    test and unmounts it afterwards. Needs root, which CI has: there, failing to mount
    is a failure."""
    mounted_points = []

    def mount(size: str) -> Path:
        mount_point = tmp_path / f"tmpfs-{len(mounted_points)}"
        mount_point.mkdir()
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], capture_output=True, text=True
        )
        if result.returncode != 0:
            service_unavailable(f"a {size} tmpfs", RuntimeError(result.stderr.strip() or "mount failed (needs root)"))
        mounted_points.append(mount_point)
        return mount_point

    yield mount
    for mount_point in mounted_points:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """`item.rep_setup` / `rep_call` / `rep_teardown`: a fixture's teardown can tell
    whether its test failed (the cluster drills then collect the nodes' stacks)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
