"""Recovery after a restart, and the listing of every resource file present.

The FlowFile repository knows which claims are live; the content repository does
not. So a restart sets the claimant counts from the live claims, and whatever no live
claim references is what the previous run left behind: a resource no claim points
into is an orphaned write claim, destroyed (not archived: nothing ever committed it);
bytes past the last live claim of a resource are cut off where the storage can
truncate (local disk) and left unreferenced where it cannot (HDFS).

Checksum files go with their resource files: an orphan's is destroyed with it; a live
resource's loses the records past the last live claim where the resource file is cut
(and a torn or NUL tail, a crash's remains); a checksum file whose resource file is
gone and which no live claim needs is destroyed.

After a FlowFile WAL accepted damage (`keep_orphans`), "no live claim" may mean "its
FlowFile's record was lost", not "nothing ever committed it": then nothing is
destroyed or cut. Orphaned resources go to the archive (with their checksum files),
where they stay for the archive's retention, and live resources keep their bytes past
the last live claim, so that an operator can still recover the lost FlowFiles' content.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from repositories.claims import ContentClaim, InvalidClaimError, ResourceClaim
from repositories.storage import StorageError

from .checksums import checksum_file_length
from .claimants import counts_of
from .resource_io import FoundResource, ResourceIO
from .resources import ResourceTable

log = logging.getLogger(__name__)


@dataclass
class RecoveryReport:
    destroyed: list[ResourceClaim] = field(default_factory=list)
    truncated_bytes: int = 0
    missing: list[ResourceClaim] = field(default_factory=list)
    unsafe: list[str] = field(default_factory=list)
    kept: list[ResourceClaim] = field(default_factory=list)  # orphans archived instead (keep_orphans)
    kept_bytes: int = 0  # their bytes, and those past the last live claim left in place


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    resource: ResourceClaim
    length: int
    archived: bool
    checksummed: bool = False  # it has a checksum file (content format 1)


def recover(
    table: ResourceTable,
    roots: Mapping[str, str],
    resource_io: ResourceIO,
    live_claims: Iterable[ContentClaim],
    *,
    keep_orphans: bool = False,
    now: float = 0.0,
) -> RecoveryReport:
    """Set claimant counts from `live_claims`, then clean up what none references
    (see the module docstring), or with `keep_orphans` archive it (stamped `now`) and
    cut nothing. Resources this repository has open are left alone."""
    live = list(live_claims)
    counts = counts_of(live)
    ends: dict[ResourceClaim, int] = {}
    for claim in live:
        ends[claim.resource] = max(ends.get(claim.resource, 0), claim.offset + claim.length)
    report = RecoveryReport()
    live_checksums: list[tuple[str, ResourceClaim, int]] = []
    table.claimants.set_counts(counts)
    seen: set[ResourceClaim] = set()
    in_use = table.open_resources()
    scanned = list(_scan(roots, resource_io))
    have_files = {resource for _c, _r, found, resource in scanned if resource is not None and not found.checksums}
    checksum_files: dict[ResourceClaim, FoundResource] = {}
    for _container, root, found, resource in scanned:
        if resource is None:
            report.unsafe.append(f"{root}/{found.section}/{found.name}")
            continue
        if resource in in_use:
            continue
        if found.checksums:
            if resource not in have_files and resource not in counts:
                resource_io.delete(root, resource, found.archived)  # its resource file is gone
            elif not found.archived:
                checksum_files[resource] = found
            continue
        if found.archived:
            with table.lock:
                table.archived.setdefault(resource, (found.modified, found.size))
            seen.add(resource)
            continue
        if resource not in counts:
            if keep_orphans:
                resource_io.archive(root, resource)
                with table.lock:
                    table.archived[resource] = (now, found.size)
                report.kept.append(resource)
                report.kept_bytes += found.size
                continue
            resource_io.delete(root, resource, False)
            report.destroyed.append(resource)
            continue
        seen.add(resource)
        end = ends[resource]
        if keep_orphans:
            report.kept_bytes += max(found.size - end, 0)
            continue
        if found.size > end and resource_io.can_truncate:
            resource_io.truncate(root, resource, end)
            report.truncated_bytes += found.size - end
        if resource_io.can_truncate:
            live_checksums.append((root, resource, end))
    for root, resource, end in live_checksums:
        if resource in checksum_files:
            _cut_checksums(resource_io, root, resource, end)
    report.missing = sorted((r for r in counts if r not in seen), key=lambda r: r.relative_path)
    if report.destroyed or report.truncated_bytes or report.missing:
        log.info(
            "%s recovered: %d orphaned resources destroyed, %d orphaned bytes cut, %d referenced resources missing",
            table.name,
            len(report.destroyed),
            report.truncated_bytes,
            len(report.missing),
        )
    if keep_orphans:
        log.warning(
            "%s recovered after WAL damage: %d orphaned resources archived and %d bytes kept that no "
            "FlowFile references now (the lost FlowFiles' content), for the archive's retention",
            table.name,
            len(report.kept),
            report.kept_bytes,
        )
    return report


def _cut_checksums(resource_io: ResourceIO, root: str, resource: ResourceClaim, end: int) -> None:
    """Cut the checksum records past `end`, where the resource file was cut (local disk)."""
    handle, size = resource_io.open_checksums(root, resource, False)
    try:
        keep = checksum_file_length(handle, size, end)
    finally:
        handle.close()
    if keep is not None and keep < size:
        try:
            resource_io.truncate_checksums(root, resource, keep)
        except StorageError as error:
            log.warning("could not cut the checksum file of %s to %d bytes: %s", resource.relative_path, keep, error)


def list_resources(roots: Mapping[str, str], resource_io: ResourceIO) -> dict[ResourceClaim, ResourceInfo]:
    """Every resource file present (live and archived), by scanning the containers."""
    scanned = [
        (found, resource) for _container, _root, found, resource in _scan(roots, resource_io) if resource is not None
    ]
    checksummed = {resource for found, resource in scanned if found.checksums}
    return {
        resource: ResourceInfo(resource, found.size, found.archived, resource in checksummed)
        for found, resource in scanned
        if not found.checksums
    }


def _scan(roots: Mapping[str, str], resource_io: ResourceIO):
    """(container, root, found file, its ResourceClaim or None if the file is unsafe
    or its name is no resource id) for every file in every container."""
    for container, root in roots.items():
        for found in resource_io.scan(root):
            resource = None
            if not found.unsafe:
                try:
                    resource = ResourceClaim(container, found.section, found.name)
                except InvalidClaimError:
                    pass
            yield container, root, found, resource
