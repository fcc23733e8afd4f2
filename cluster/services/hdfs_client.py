"""The nodes' HDFS client: hdfs-native's release, built from its source with one fix.

hdfs-native 0.14.7, its latest release, recovers a write pipeline when one of its
DataNodes dies (the dead one left out, the packets it had not acknowledged sent again to
the others), but the recovery never ends when the task reading the acknowledgements is
the one that saw the death: `Pipeline::shutdown` waits for the task that sends packets,
which waits for a next packet on a channel whose sender the pipeline itself still holds.
An hsync in flight when a DataNode of its pipeline died never returned; custody's
`[hdfs] io_timeout` ended it, the file was given up and the WAL rolled: the pause of a
DataNode's death (docs/operate/failures.md). `hdfs_native/pipeline-shutdown.patch`
drops that sender first; the hsync then returns once the pipeline is rebuilt on the
DataNodes left, in milliseconds.

`ensure_client` (run by `custody services install` and before the harness starts HDFS)
builds the patched release once per patch: the release's source through pip, the patch
applied with `git apply`, the wheel built with maturin and Rust's cargo (from rustup:
hdfs-native needs a newer Rust than Debian's) into `<cache>/hdfs-native/`, then
installed into the running Python. Its version, `0.14.7+custody.1`, still satisfies
`constraints.txt` (a local label is ignored by `==`), so pip keeps it. The custody
image installs the same wheel, which `ensure_client` also puts in the checkout's
`cluster/docker/hdfs-client/` (the image's build context is the checkout; Debian 12's
Docker Engine refuses a second one). Processes started before the install keep the
client they loaded."""

from __future__ import annotations

import fcntl
import filecmp
import hashlib
import logging
import os
import shutil
import sys
import tarfile
import tempfile
from importlib import metadata, resources
from pathlib import Path

from .process import ServiceError, run_checked

log = logging.getLogger(__name__)

RELEASE = "0.14.7"
PATCH = "pipeline-shutdown.patch"
# The version the patch gives the build (its local label), by which an installed client
# is known to be the patched one: a change to the patch raises the label with it.
PATCHED_VERSION = f"{RELEASE}+custody.1"
# The built wheel's directory under the cache: the wheel alone, and the patch's digest.
WHEEL_DIRECTORY = "hdfs-native"
DIGEST_FILE = "patch.sha256"
# Where the custody image's Dockerfile copies the wheel from, in the checkout.
IMAGE_DIRECTORY = Path("cluster", "docker", "hdfs-client")


def patch_text() -> bytes:
    return resources.files("cluster.services").joinpath(f"hdfs_native/{PATCH}").read_bytes()


def installed_version() -> str | None:
    try:
        return metadata.version("hdfs-native")
    except metadata.PackageNotFoundError:
        return None


def ensure_client(cache: Path) -> Path:
    """The patched client's wheel (built if missing or built from another patch),
    installed into this Python if another hdfs-native is. One process at a time builds
    and installs (a lock file in the wheel's directory); the others then find it done."""
    directory = cache / WHEEL_DIRECTORY
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(patch_text()).hexdigest()
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wheel = _built_wheel(directory, digest)
        if wheel is None:
            wheel = _build(directory, digest)
        if installed_version() != PATCHED_VERSION:
            run_checked(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)],
                "installing the patched hdfs-native",
            )
            log.info("installed the patched hdfs-native %s (%s)", PATCHED_VERSION, wheel.name)
        checkout = checkout_root()
        if checkout is not None:
            stage(wheel, checkout / IMAGE_DIRECTORY)
    return wheel


def checkout_root() -> Path | None:
    """The checkout this module runs from (the directory of docker-compose.yml), or None
    for an installed custody."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "docker-compose.yml").exists() else None


def stage(wheel: Path, directory: Path) -> Path:
    """`wheel` copied into `directory` (atomically), alone there (earlier builds' wheels removed)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / wheel.name
    if not target.exists() or not filecmp.cmp(wheel, target, shallow=False):
        staged = directory / f".{wheel.name}.{os.getpid()}"
        shutil.copyfile(wheel, staged)
        os.replace(staged, target)
    for old in directory.glob("hdfs_native-*.whl"):
        if old != target:
            old.unlink()
    return target


def _built_wheel(directory: Path, digest: str) -> Path | None:
    wheels = sorted(directory.glob("hdfs_native-*.whl"))
    digest_file = directory / DIGEST_FILE
    if len(wheels) == 1 and digest_file.exists() and digest_file.read_text().strip() == digest:
        return wheels[0]
    return None


def _build(directory: Path, digest: str) -> Path:
    env = {**os.environ, "PATH": f"{_cargo_directory()}{os.pathsep}{os.environ.get('PATH', '')}"}
    log.info("building hdfs-native %s with %s (Rust; a few minutes, once) ...", RELEASE, PATCH)
    with tempfile.TemporaryDirectory(prefix="custody-hdfs-native-") as build:
        build_path = Path(build)
        run_checked(
            [
                *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"),
                *("--no-binary", "hdfs-native", "-d", str(build_path / "sdist"), f"hdfs-native=={RELEASE}"),
            ],
            f"downloading hdfs-native {RELEASE}'s source",
            env,
        )
        (archive,) = (build_path / "sdist").glob("hdfs_native-*.tar.gz")
        with tarfile.open(archive) as sdist:
            sdist.extractall(build_path, filter="data")
        source = build_path / f"hdfs_native-{RELEASE}"
        (build_path / PATCH).write_bytes(patch_text())
        # A patch tool outside any repository, even one around the temporary directory.
        no_repository = {**env, "GIT_CEILING_DIRECTORIES": str(build_path)}
        run_checked(["git", "apply", str(build_path / PATCH)], f"applying {PATCH}", no_repository, cwd=source)
        out = build_path / "wheel"
        run_checked(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)],
            "building the patched hdfs-native",
            env,
        )
        (built,) = out.glob("hdfs_native-*.whl")
        wheel = stage(built, directory)
    (directory / DIGEST_FILE).write_text(digest + "\n")
    log.info("built %s", wheel)
    return wheel


def _cargo_directory() -> str:
    """The directory of Rust's cargo: on PATH, or rustup's default (`$CARGO_HOME/bin`)."""
    found = shutil.which("cargo")
    if found:
        return str(Path(found).parent)
    rustup = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin"
    if (rustup / "cargo").exists():
        return str(rustup)
    raise ServiceError(
        f"building the nodes' HDFS client (hdfs-native {RELEASE} with custody's fix) needs Rust's cargo, "
        "1.85 or later, which is not installed: install it with rustup (curl https://sh.rustup.rs -sSf | sh), "
        "then run again"
    )
