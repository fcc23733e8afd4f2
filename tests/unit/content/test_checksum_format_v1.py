"""Content whose checksum files the previous release wrote (format 1: zlib's CRC-32 per
block) stays readable and verified, beside the format 2 (CRC-32C) this release writes.

tests/data/content-v1 was written by commit 3a9c091 (its README says how): two
replicas of one container, three resource files with checksum blocks of 1 KB, one of
them archived.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from replication.content_fsck import fsck_replicas
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import ContentCorrupted
from repositories.content.checksum_format import HEADER_SIZE, read_header
from repositories.content.format import CHECKSUM_SUFFIX

from .test_legacy_format import open_replica, payload, read_back_every_claim, recorded_claims

DATA = Path(__file__).resolve().parents[2] / "data" / "content-v1"


@pytest.fixture
def copy(tmp_path):
    """A copy of the old content (the checked-in files stay as the old release left them)."""
    shutil.copytree(DATA, tmp_path / "content-v1")
    return tmp_path / "content-v1"


def claims():
    return recorded_claims(DATA)


def test_the_data_is_what_the_old_release_wrote():
    assert len(claims()) == 10 and len({claim.resource for claim, _seed, _archived in claims()}) == 3
    checksum_files = [path for path in DATA.rglob("*") if path.name.endswith(CHECKSUM_SUFFIX)]
    assert len(checksum_files) == 6
    assert {read_header(path.read_bytes()[:HEADER_SIZE]) for path in checksum_files} == {(1024, 1)}


def test_every_claim_reads_back_verified_byte_for_byte(copy):
    # An empty claim has no block to check; every other one is verified.
    local, replicated = read_back_every_claim(copy, DATA, lambda claim: claim.length > 0)
    assert local.read(claims()[3][0], 1000, 1100) == payload(3, 3000)[1000:2100]
    replicated.close()


def test_fsck_verifies_the_old_checksums_and_new_claims_beside_them_get_format_2(copy, capsys):
    replicated = ReplicatingContentRepository([open_replica(copy, "local"), open_replica(copy, "mirror")])
    replicated.recover([claim for claim, _seed, archived in claims() if not archived])
    new = replicated.write_bytes(payload(99, 5000))
    assert replicated.read(new) == payload(99, 5000)
    replicated.close()
    section = copy / "local" / str(new.resource.section)
    assert read_header((section / (new.resource.id + CHECKSUM_SUFFIX)).read_bytes()[:HEADER_SIZE]).version == 2
    local, mirror = open_replica(copy, "local"), open_replica(copy, "mirror")
    report = fsck_replicas([local, mirror])
    assert report.ok and report.problems == [] and report.unverified == [] and report.verified == 4
    local.close()
    mirror.close()
    from cluster.cli import main as custody

    assert custody(["content", "fsck", "--local", f"c={copy / 'local'}", "--mirror", f"c={copy / 'mirror'}"]) == 0
    assert "0 unverified" in capsys.readouterr().out


def test_a_damaged_byte_under_an_old_checksum_is_caught_and_repaired_from_the_other_copy(copy):
    claim, seed, _archived = claims()[3]  # 3000 bytes: three blocks of the old format
    path = copy / "local" / str(claim.resource.section) / claim.resource.id
    damaged = bytearray(path.read_bytes())
    damaged[claim.offset + 1500] ^= 0x01
    path.write_bytes(bytes(damaged))
    local, mirror = open_replica(copy, "local"), open_replica(copy, "mirror")
    with pytest.raises(ContentCorrupted, match="do not match their checksum"):
        local.read(claim)
    assert ReplicatingContentRepository([local, mirror]).read(claim) == payload(seed, claim.length)
    report = fsck_replicas([local, mirror], repair=True)
    assert [(p.replica, p.repaired) for p in report.problems] == [("local", True)]
    assert local.read(claim) == payload(seed, claim.length)
    local.close()
    mirror.close()
