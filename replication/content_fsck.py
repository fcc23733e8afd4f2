"""Find and repair damaged or disagreeing content replicas (`custody content fsck`).

Every copy of every resource (on each replica, live or archived) is read once and
checked against its own checksum file (`ContentRepository.check_resource`). What
decides is the checksum, never which copy is longer or which replica comes first:

* The reference copy is a *verified* one (every block matches its checksum), the one
  whose checksum records reach furthest; ties go to the earlier replica.
* Each other replica's copy is then one of:
    `missing`  - the replica has no such resource;
    `damaged`  - blocks that do not match their checksums, checksum records that are
                 damaged or missing, a resource file that ends before its records do;
                 `blocks` lists each bad range of the resource file;
    `short`    - verified, but its records stop before the reference's (a tail that
                 never reached it);
    `differs`  - verified, but its records say other bytes than the reference's: two
                 self-consistent copies that disagree; reported, never repaired (no
                 checksum can say which is right);
    `state`    - archived on one side, live on the other: reported only, the next
                 collect on the live side settles it.
* `--repair` rewrites `missing`, `damaged` and `short` copies from the reference, the
  checksum file with them (`ContentRepository.install_resource`: temporary names,
  synced, renamed). With no verified copy there is nothing to repair from: every
  copy's damage is reported and left as it is.
* Resources written before checksums (content format 0) cannot be verified: they are
  counted as `unverified`, which is not a failure. Their copies are still compared
  byte for byte, and a difference is reported, never repaired, since no checksum can
  say which copy is right.

Resources a live repository still has open for writing are skipped: their tails are
still moving.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from repositories.claims import ResourceClaim
from repositories.content.repository import ContentRepository
from repositories.content.store import READ_CHUNK
from repositories.content.verification import DAMAGED, UNVERIFIED, VERIFIED, ResourceCheck

NOTES = ("state",)  # kinds of problem that do not make a replica set unhealthy


@dataclass
class FsckProblem:
    resource: str
    replica: str
    kind: str
    detail: str
    repaired: bool = False
    blocks: list[str] = field(default_factory=list)  # bad ranges of the resource file, for `damaged`


@dataclass
class FsckReport:
    replicas: list[str]
    checked: int = 0
    skipped: int = 0
    verified: int = 0  # resources with at least one copy whose every block matches its checksum
    problems: list[FsckProblem] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)  # resources of format 0: no checksums

    @property
    def ok(self) -> bool:
        return all(problem.repaired or problem.kind in NOTES for problem in self.problems)

    def to_dict(self) -> dict:
        return {
            "replicas": self.replicas,
            "checked": self.checked,
            "skipped": self.skipped,
            "verified": self.verified,
            "unverified": self.unverified,
            "ok": self.ok,
            "problems": [asdict(problem) for problem in self.problems],
        }


def fsck_replicas(
    replicas: Sequence[ContentRepository], *, repair: bool = False, skip: set[ResourceClaim] | None = None
) -> FsckReport:
    report = FsckReport([replica.name for replica in replicas])
    listings = [replica.list_resources() for replica in replicas]
    every = set().union(*listings)
    for resource in sorted(every, key=lambda r: r.relative_path):
        if skip and resource in skip:
            report.skipped += 1
            continue
        report.checked += 1
        checks = {
            index: replica.check_resource(resource)
            for index, (replica, listing) in enumerate(zip(replicas, listings, strict=False))
            if resource in listing
        }
        verified = [index for index, check in checks.items() if check.status == VERIFIED]
        if verified:
            report.verified += 1
            _against_reference(
                replicas, resource, checks, max(verified, key=lambda i: (checks[i].covered, -i)), report, repair
            )
        elif all(check.status == UNVERIFIED for check in checks.values()):
            report.unverified.append(resource.relative_path)
            _compare_unverified(replicas, resource, checks, report)
        else:
            for index, replica in enumerate(replicas):
                check = checks.get(index)
                problem = (
                    _damaged(check, "no replica holds a verified copy: nothing to repair it from")
                    if check is not None
                    else FsckProblem(
                        resource.relative_path,
                        replica.name,
                        "missing",
                        "no replica holds a verified copy to repair it from",
                    )
                )
                report.problems.append(problem)
    return report


def _against_reference(
    replicas: Sequence[ContentRepository],
    resource: ResourceClaim,
    checks: dict[int, ResourceCheck],
    reference_index: int,
    report: FsckReport,
    repair: bool,
) -> None:
    reference = checks[reference_index]
    source = replicas[reference_index]
    for index, replica in enumerate(replicas):
        if index == reference_index:
            continue
        check = checks.get(index)
        if check is None:
            problem = FsckProblem(
                resource.relative_path, replica.name, "missing", f"{reference.length} bytes on {source.name}"
            )
        elif check.status != VERIFIED:
            problem = _damaged(check, f"{source.name} holds a verified copy")
        elif check.records != reference.records[: len(check.records)]:
            report.problems.append(
                FsckProblem(
                    resource.relative_path,
                    replica.name,
                    "differs",
                    f"its checksums say other bytes than {source.name}'s, and both copies verify: not repaired, "
                    "compare them by hand",
                )
            )
            continue
        elif check.covered < reference.covered:
            problem = FsckProblem(
                resource.relative_path,
                replica.name,
                "short",
                f"checksummed to byte {check.covered} of {reference.covered}",
            )
        else:
            if check.archived != reference.archived:
                report.problems.append(
                    FsckProblem(
                        resource.relative_path,
                        replica.name,
                        "state",
                        f"archived={check.archived} here, {reference.archived} on {source.name}",
                    )
                )
            continue
        if repair:
            _install(source, replica, resource, reference.archived)
            problem.repaired = True
        report.problems.append(problem)


def _damaged(check: ResourceCheck, detail: str) -> FsckProblem:
    blocks = [failure.describe() for failure in check.failures]
    if check.status == UNVERIFIED:
        blocks = ["no checksum file"]
    return FsckProblem(
        check.resource.relative_path, check.replica, DAMAGED, f"{len(blocks)} bad range(s); {detail}", blocks=blocks
    )


def _install(source: ContentRepository, target: ContentRepository, resource: ResourceClaim, archived: bool) -> None:
    handle, _size = source.open_resource(resource)
    try:
        checksums, _checksum_size = source.open_resource(resource, checksums=True)
        try:
            target.install_resource(resource, handle, archived=archived, checksums=checksums)
        finally:
            checksums.close()
    finally:
        handle.close()


def _compare_unverified(
    replicas: Sequence[ContentRepository], resource: ResourceClaim, checks: dict[int, ResourceCheck], report: FsckReport
) -> None:
    """Copies of a format 0 resource, compared byte for byte with the longest one:
    differences are reported, never repaired (no checksum says which copy is right)."""
    reference_index = max(checks, key=lambda i: (checks[i].length, -i))
    reference, source = checks[reference_index], replicas[reference_index]
    unverifiable = "written before checksums, so no copy can be trusted over another: not repaired"
    for index, replica in enumerate(replicas):
        if index == reference_index:
            continue
        check = checks.get(index)
        if check is None:
            report.problems.append(
                FsckProblem(
                    resource.relative_path,
                    replica.name,
                    "missing",
                    f"{reference.length} bytes on {source.name}; {unverifiable}",
                )
            )
        elif _digest(replica, resource, check.length) != _digest(source, resource, check.length):
            report.problems.append(
                FsckProblem(
                    resource.relative_path,
                    replica.name,
                    "differs",
                    f"first {check.length} bytes differ from {source.name}; {unverifiable}",
                )
            )
        elif check.length < reference.length:
            report.problems.append(
                FsckProblem(
                    resource.relative_path,
                    replica.name,
                    "short",
                    f"{check.length} of {reference.length} bytes; {unverifiable}",
                )
            )


def _digest(repository: ContentRepository, resource: ResourceClaim, length: int) -> str:
    handle, _size = repository.open_resource(resource)
    digest = hashlib.sha256()
    remaining = length
    try:
        while remaining > 0:
            chunk = handle.read(min(READ_CHUNK, remaining))
            if not chunk:
                break
            digest.update(chunk)
            remaining -= len(chunk)
    finally:
        handle.close()
    return digest.hexdigest()
