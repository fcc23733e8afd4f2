"""Find and repair content replicas that disagree (`custody content fsck`).

For every resource file present on any replica, the reference copy is the longest
one (ties go to the earlier replica: local first). Every other replica must hold the
same bytes:

* `missing`  - the replica has no such resource (e.g. a crash before it was written);
* `short`    - the replica's copy is a strict prefix of the reference (a tail that
               never reached it: harmless if no claim covers it, repaired anyway);
* `differs`  - same resource, different bytes (damage): repaired from the reference;
* `state`    - archived on one side, live on the other: reported only, the next
               collect on the live side settles it.

Repair writes the reference bytes to the replica under a temporary name, syncs, and
renames it over the target (`ContentRepository.install_resource`). Resources a live
repository still has open for writing are skipped: their tails are still moving.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from repositories.claims import ResourceClaim
from repositories.content.repository import ContentRepository
from repositories.content.store import READ_CHUNK


@dataclass
class FsckProblem:
    resource: str
    replica: str
    kind: str
    detail: str
    repaired: bool = False


@dataclass
class FsckReport:
    replicas: list[str]
    checked: int = 0
    skipped: int = 0
    problems: list[FsckProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(problem.repaired or problem.kind == "state" for problem in self.problems)

    def to_dict(self) -> dict:
        return {"replicas": self.replicas, "checked": self.checked, "skipped": self.skipped,
                "ok": self.ok, "problems": [asdict(problem) for problem in self.problems]}


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
        copies = [(index, listing[resource]) for index, listing in enumerate(listings) if resource in listing]
        reference_index, reference = max(copies, key=lambda item: (item[1].length, -item[0]))
        source = replicas[reference_index]
        prefix_digests: dict[int, str] = {}

        def reference_digest(length: int) -> str:
            if length not in prefix_digests:
                prefix_digests[length] = _digest(source, resource, length)
            return prefix_digests[length]

        for index, replica in enumerate(replicas):
            if index == reference_index:
                continue
            info = listings[index].get(resource)
            problem = None
            if info is None:
                problem = FsckProblem(resource.relative_path, replica.name, "missing",
                                      f"{reference.length} bytes on {source.name}")
            else:
                mine = _digest(replica, resource, info.length)
                theirs = reference_digest(info.length)
                if mine != theirs:
                    problem = FsckProblem(resource.relative_path, replica.name, "differs",
                                          f"first {info.length} bytes differ from {source.name}")
                elif info.length < reference.length:
                    problem = FsckProblem(resource.relative_path, replica.name, "short",
                                          f"{info.length} of {reference.length} bytes")
                elif info.archived != reference.archived:
                    report.problems.append(FsckProblem(
                        resource.relative_path, replica.name, "state",
                        f"archived={info.archived} here, {reference.archived} on {source.name}"))
            if problem is None:
                continue
            if repair:
                handle, _size = source.open_resource(resource)
                try:
                    replica.install_resource(resource, handle, archived=reference.archived)
                    problem.repaired = True
                finally:
                    handle.close()
            report.problems.append(problem)
    return report
