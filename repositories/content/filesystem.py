"""The FileSystem content repository: containers are local directories (one per disk).

    repository = open_filesystem_content_repository({"disk1": "/data1/content",
                                                     "disk2": "/data2/content"})

Writes are striped round-robin over the containers; each container is prepared with
its 1024 section directories. Usage (for the archive's usage rule and the refusal of
writes above the maximum) is the container's device usage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from .archive import Usage
from .config import ContentRepositoryConfig
from .hooks import ContentHooks
from .repository import ContentRepository
from .resource_io import LocalResourceIO


def open_filesystem_content_repository(
    directories: Mapping[str, str] | list[str],
    config: ContentRepositoryConfig | None = None,
    *,
    clock: Callable[[], float] = time.time,
    usage_probe: Callable[[str], Usage | None] | None = None,
    name: str = "local",
    hooks: ContentHooks | None = None,
) -> ContentRepository:
    """`directories` maps container names to directories; a plain list names them
    `container-0`, `container-1`, ... in order."""
    if not isinstance(directories, Mapping):
        directories = {f"container-{index}": path for index, path in enumerate(directories)}
    return ContentRepository(
        directories, LocalResourceIO(), config, clock=clock, usage_probe=usage_probe, name=name, hooks=hooks
    )
