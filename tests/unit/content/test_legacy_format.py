"""Content the previous release wrote (format 0: no checksum files) stays readable.

tests/data/content-v0 was written by commit 92d5b5c (its README says how): two
replicas of one container, three resource files, one of them archived. This release
reads every claim of it byte for byte, counts it as unverified in fsck (which is not
a failure), writes new, checksummed claims beside it, and never repairs one old copy
from another, since no checksum says which one is right.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from replication.content_fsck import fsck_replicas
from replication.replicating_content import ReplicatingContentRepository
from repositories.claims import ContentClaim, ResourceClaim
from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository
from repositories.content.format import CHECKSUM_SUFFIX, must_have_checksums

DATA = Path(__file__).resolve().parents[2] / "data" / "content-v0"
CONFIG = ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))


def payload(seed: int, size: int) -> bytes:
    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // 32 + 1))[:size]


def recorded_claims(data: Path = DATA) -> list[tuple[ContentClaim, int, bool]]:
    rows = json.loads((data / "claims.json").read_text())
    return [
        (
            ContentClaim(ResourceClaim(row["container"], row["section"], row["id"]), row["offset"], row["length"]),
            row["seed"],
            row["archived"],
        )
        for row in rows
    ]


@pytest.fixture
def copy(tmp_path):
    """A copy of the old content (the checked-in files stay as the old release left them)."""
    shutil.copytree(DATA, tmp_path / "content-v0")
    return tmp_path / "content-v0"


def open_replica(directory: Path, name: str):
    return open_filesystem_content_repository({"c": str(directory / name)}, CONFIG, name=name)


def test_the_data_is_what_the_old_release_wrote():
    claims = recorded_claims()
    assert len(claims) == 10 and len({claim.resource for claim, _seed, _archived in claims}) == 3
    assert not any(must_have_checksums(claim.resource) for claim, _seed, _archived in claims)
    assert not [path for path in DATA.rglob("*") if path.name.endswith(CHECKSUM_SUFFIX)]


def read_back_every_claim(copy: Path, data: Path, verified) -> tuple:
    """Recover both replicas of `copy` (a copy of `data`) and read every recorded claim
    byte for byte from each and through both; `verified(claim)` is whether the local
    reader must have checked it. Returns (local, replicated), still open."""
    local, mirror = open_replica(copy, "local"), open_replica(copy, "mirror")
    replicated = ReplicatingContentRepository([local, mirror])
    report = replicated.recover([claim for claim, _seed, archived in recorded_claims(data) if not archived])
    assert report.missing == [] and report.destroyed == []
    for claim, seed, _archived in recorded_claims(data):
        for repository in (local, mirror, replicated):
            with repository.open_read(claim) as reader:
                assert reader.read() == payload(seed, claim.length)
        with local.open_read(claim) as reader:
            assert reader.verified is verified(claim)
    return local, replicated


def test_every_claim_of_the_old_release_reads_back_byte_for_byte(copy):
    local, replicated = read_back_every_claim(copy, DATA, lambda claim: False)
    assert local.read(recorded_claims()[3][0], 1000, 20) == payload(3, 3000)[1000:1020]
    replicated.close()


def test_fsck_counts_old_resources_as_unverified_which_is_no_failure(copy, capsys):
    local, mirror = open_replica(copy, "local"), open_replica(copy, "mirror")
    for replicas in ([local], [local, mirror]):
        report = fsck_replicas(replicas)
        assert report.ok and report.problems == []
        assert (report.checked, report.verified, len(report.unverified)) == (3, 0, 3)
    local.close()
    mirror.close()
    from cluster.cli import main as custody

    assert custody(["content", "fsck", "--local", f"c={copy / 'local'}", "--mirror", f"c={copy / 'mirror'}"]) == 0
    assert "checked 3 resources on local, mirror: 0 verified, 3 unverified" in capsys.readouterr().out
    assert custody(["content", "inspect", "--local", f"c={copy / 'local'}"]) == 0
    assert "3 without checksums" in capsys.readouterr().out


def test_new_claims_beside_old_ones_are_checksummed_and_the_old_ones_still_read(copy):
    local = open_replica(copy, "local")
    old = recorded_claims()
    local.recover([claim for claim, _seed, archived in old if not archived])
    new = local.write_bytes(payload(99, 5000))
    assert must_have_checksums(new.resource)
    assert local.read(new) == payload(99, 5000)
    for claim, seed, _archived in old:
        assert local.read(claim) == payload(seed, claim.length)
    report = fsck_replicas([local])
    assert report.ok and (report.verified, len(report.unverified)) == (1, 3)
    local.close()


def test_two_old_copies_that_disagree_are_reported_and_never_repaired_one_from_the_other(copy):
    claim, seed, _archived = recorded_claims()[1]
    path = copy / "local" / str(claim.resource.section) / claim.resource.id
    damaged = bytearray(path.read_bytes())
    damaged[claim.offset + 7] ^= 0x01
    path.write_bytes(bytes(damaged))
    local, mirror = open_replica(copy, "local"), open_replica(copy, "mirror")
    report = fsck_replicas([local, mirror], repair=True)
    assert [(p.resource, p.replica, p.kind, p.repaired) for p in report.problems] == [
        (claim.resource.relative_path, "mirror", "differs", False)
    ]
    assert "not repaired" in report.problems[0].detail and not report.ok
    assert path.read_bytes() == bytes(damaged)  # neither copy was touched
    assert mirror.read(claim) == payload(seed, claim.length)
    local.close()
    mirror.close()
