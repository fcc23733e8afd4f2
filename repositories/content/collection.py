"""Collection: archive what nobody references, age the archive off, refuse writes when full.

A resource nobody references (claimant count 0) and nobody can append to any more
(not open) is archived by `collect()`, or destroyed when the archive is disabled.
`age_off()` deletes archived resources by age and, while a container's usage is above
the policy's maximum, oldest first (the choice is `archive.select_for_age_off`'s).
A new resource is refused up front (`ContentRepositoryFull`) while its container's
usage is above the maximum, after trying to age off the archive.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from repositories.claims import ResourceClaim
from repositories.storage import StorageError, StorageFileNotFound

from .archive import ArchivedResource, Usage, select_for_age_off
from .config import ContentRepositoryConfig
from .errors import ContentRepositoryFull
from .resource_io import ResourceIO
from .resources import ResourceTable

log = logging.getLogger(__name__)


@dataclass
class CollectReport:
    archived: list[ResourceClaim] = field(default_factory=list)
    destroyed: list[ResourceClaim] = field(default_factory=list)


class ResourceCollector:
    """Archive, age-off and the usage check of one repository's containers.

    `_usage_cache` (container -> (measured at, usage)) is unguarded: a race only
    measures the usage twice."""

    def __init__(
        self,
        table: ResourceTable,
        roots: Mapping[str, str],
        resource_io: ResourceIO,
        config: ContentRepositoryConfig,
        *,
        clock: Callable[[], float],
        usage_probe: Callable[[str], Usage | None],
    ):
        self._table, self._roots, self._io = table, roots, resource_io
        self._policy = config.archive
        self._usage_check_interval = config.usage_check_interval_s
        self._clock, self._usage_probe = clock, usage_probe
        self._usage_cache: dict[str, tuple[float, Usage | None]] = {}

    def collect(self) -> CollectReport:
        """Archive (or destroy) every resource that nobody references and nobody can
        append to any more."""
        table = self._table
        report = CollectReport()
        with table.lock:
            ready = [
                r for r in table.zero if r not in table.open and r not in table.closing and table.claimants.get(r) == 0
            ]
            table.zero.difference_update(ready)
        for resource in ready:
            root = self._roots[resource.container]
            try:
                if self._policy.enabled:
                    size = self._size_of(root, resource)
                    self._io.archive(root, resource)
                    with table.lock:
                        table.archived[resource] = (self._clock(), size)
                    report.archived.append(resource)
                else:
                    self._io.delete(root, resource, False)
                    report.destroyed.append(resource)
            except StorageFileNotFound:
                report.destroyed.append(resource)  # already gone (e.g. failed before create)
            except StorageError as error:
                with table.lock:
                    table.zero.add(resource)  # try again next time
                log.warning("%s: could not archive %s: %s", table.name, resource.relative_path, error)
        return report

    def _size_of(self, root: str, resource: ResourceClaim) -> int:
        handle, size = self._io.open_read(root, resource, False)
        handle.close()
        return size

    def age_off(self, container: str | None = None) -> list[ResourceClaim]:
        """Delete archived resources past retention, and oldest-first while a
        container's usage is above the maximum."""
        table = self._table
        deleted: list[ResourceClaim] = []
        now = self._clock()
        for name in [container] if container else list(self._roots):
            root = self._roots[name]
            with table.lock:
                entries = [
                    ArchivedResource(r, at, size) for r, (at, size) in table.archived.items() if r.container == name
                ]
            usage = self._measure(name, fresh=True) if self._policy.max_usage is not None else None
            for entry in select_for_age_off(entries, now, self._policy, usage):
                resource = entry.key
                try:
                    self._io.delete(root, resource, True)
                except StorageError as error:
                    log.warning("%s: could not age off %s: %s", table.name, resource.relative_path, error)
                    continue
                with table.lock:
                    table.archived.pop(resource, None)
                deleted.append(resource)
        return deleted

    def archived(self) -> dict[ResourceClaim, float]:
        with self._table.lock:
            return {resource: at for resource, (at, _size) in self._table.archived.items()}

    def _measure(self, container: str, *, fresh: bool = False) -> Usage | None:
        now = self._clock()
        cached = self._usage_cache.get(container)
        if not fresh and cached and now - cached[0] < self._usage_check_interval:
            return cached[1]
        usage = self._usage_probe(self._roots[container])
        self._usage_cache[container] = (now, usage)
        return usage

    def check_capacity(self, container: str) -> None:
        """Raise `ContentRepositoryFull` if the container is above the maximum usage
        even after an age-off."""
        limit = self._policy.max_usage
        if limit is None:
            return
        usage = self._measure(container)
        if usage is None or usage.fraction <= limit:
            return
        self.age_off(container)
        usage = self._measure(container, fresh=True)
        if usage is not None and usage.fraction > limit:
            raise ContentRepositoryFull(
                f"content container {container!r} ({self._roots[container]}) is "
                f"{usage.fraction:.1%} full, above the maximum of {limit:.0%}, and the archive "
                "holds nothing more to age off: writes are refused until space is freed",
                path=self._roots[container],
            )
