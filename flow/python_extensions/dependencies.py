"""Installing a Python processor's `ProcessorDetails.dependencies` with pip.

Each processor with dependencies gets an environment of its own, a directory made by
`pip install --target DIR` with the node's own interpreter:
`<cache>/python-extensions/<Class>-<version>-<hash>`, the hash taken over the
requirements and the interpreter's version, so a changed requirement gets a new
directory and an unchanged one is installed once. The environment is built in a
temporary directory beside it and renamed into place when pip succeeds: a directory
of that name is always complete. When pip cannot install (no package index in reach, a
requirement the index does not have), the load is refused with one error giving the
exact command to run.

Where pip looks is the node's to say (`PipIndex`: NODE.toml `[python] index_url`,
`find_links`, `no_index`), passed to pip as its own options.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from .discovery import ProcessorSource
from .errors import DependenciesUnavailable

ENVIRONMENTS = "python-extensions"
PIP_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class PipIndex:
    """Where pip finds packages: `index_url` (pip's --index-url; "" its own default),
    `find_links` (directories or pages of distributions, --find-links) and `no_index`
    (--no-index: only `find_links`)."""

    index_url: str = ""
    find_links: tuple[str, ...] = ()
    no_index: bool = False

    def options(self) -> list[str]:
        options = ["--index-url", self.index_url] if self.index_url else []
        for link in self.find_links:
            options += ["--find-links", link]
        return options + (["--no-index"] if self.no_index else [])


def environment_name(source: ProcessorSource) -> str:
    digest = hashlib.sha256("\n".join([sys.version, *sorted(source.dependencies)]).encode("utf-8")).hexdigest()[:12]
    version = "".join(c if c.isalnum() or c in ".-_" else "_" for c in source.version) or "0"
    return f"{source.class_name}-{version}-{digest}"


def pip_command(target: str, requirements: tuple[str, ...], index: PipIndex) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--target",
        target,
        *index.options(),
        *requirements,
    ]


def ensure_environment(source: ProcessorSource, cache_directory: str, index: PipIndex) -> str | None:
    """The directory holding `source`'s dependencies, installed now if they are not yet;
    None for a processor without any. Raises `DependenciesUnavailable` with the pip
    command when pip fails."""
    if not source.dependencies:
        return None
    root = os.path.join(cache_directory, ENVIRONMENTS)
    target = os.path.join(root, environment_name(source))
    if os.path.isdir(target):
        return target
    os.makedirs(root, exist_ok=True)
    building = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}-", dir=root)
    command = pip_command(building, source.dependencies, index)
    shown = shlex.join(pip_command(target, source.dependencies, index))
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(building, ignore_errors=True)
        raise DependenciesUnavailable(
            f"python extension {source.path}: pip did not install {source.class_name}'s dependencies "
            f"{list(source.dependencies)} within {PIP_TIMEOUT_S:g} s; run where a package index is in "
            f"reach:\n  {shown}",
            shown,
        ) from None
    if completed.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        lines = [line for line in (completed.stderr or completed.stdout).splitlines() if line.strip()]
        reason = lines[-1].strip() if lines else f"exit status {completed.returncode}"
        raise DependenciesUnavailable(
            f"python extension {source.path}: cannot install {source.class_name}'s dependencies "
            f"{list(source.dependencies)} ({reason}); install them where a package index is in reach, "
            f"with:\n  {shown}\nthen load the flow again",
            shown,
        )
    try:
        os.rename(building, target)
    except OSError:
        # Another node or process renamed its own complete copy first: keep that one.
        shutil.rmtree(building, ignore_errors=True)
        if not os.path.isdir(target):
            raise
    return target
