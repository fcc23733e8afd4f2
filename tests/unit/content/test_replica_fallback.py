"""A damaged copy is never read as good, and never repaired from: the replicating
repository reads past it from the next replica (saying so in one log line), refuses a
claim damaged everywhere with an error that names it, and fsck repairs the damaged
copy from the intact one, never the reverse.

Two local replicas stand in for local disk and HDFS; the same cases against a real
HDFS are in tests/integration/test_content_checksums.py.
"""

from __future__ import annotations

import hashlib
import logging
import os

import pytest

from cluster.cli import main as custody
from replication.content_fsck import fsck_replicas
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import (
    ArchivePolicy,
    ContentCorrupted,
    ContentHooks,
    ContentRepositoryConfig,
    ContentRepositoryError,
    ContentUnavailable,
    open_filesystem_content_repository,
)
from repositories.content.format import CHECKSUM_SUFFIX
from repositories.seams import UnknownSeam

from .damage import flip_bit

CONFIG = ContentRepositoryConfig(checksum_block_size=64, archive=ArchivePolicy(max_usage=None))


def payload(seed: int, size: int) -> bytes:
    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // len(block) + 1))[:size]


@pytest.fixture
def replicated(tmp_path):
    """(repository over local + mirror, its claims, directory of each replica)."""
    directories = {name: str(tmp_path / name) for name in ("local", "mirror")}

    def replicas():
        return ReplicatingContentRepository(
            [open_filesystem_content_repository({"c": directories[name]}, CONFIG, name=name) for name in directories]
        )

    writer = replicas()
    claims = [writer.write_bytes(payload(index, size)) for index, size in enumerate((1000, 70, 3000))]
    writer.close()  # every resource closed, as fsck wants them
    repository = replicas()
    yield repository, claims, directories
    repository.close()


def file_of(directory: str, claim, checksums: bool = False) -> str:
    path = os.path.join(directory, str(claim.resource.section), claim.resource.id)
    return path + CHECKSUM_SUFFIX if checksums else path


def flip(path: str, offset: int) -> None:
    flip_bit(path, offset, 0x04)


def test_a_damaged_local_copy_is_read_from_the_other_replica_with_one_log_line(replicated, caplog):
    repository, claims, directories = replicated
    victim = claims[0]
    flip(file_of(directories["local"], victim), victim.offset + 500)
    with caplog.at_level(logging.WARNING, logger="replication.replicating_content"):
        assert repository.read(victim) == payload(0, 1000)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1
    assert victim.resource.relative_path in lines[0] and "damaged on local" in lines[0]
    assert "bytes 448..512" in lines[0] and "read it from mirror" in lines[0]
    with pytest.raises(ContentCorrupted, match="bytes 448..512: the bytes do not match their checksum"):
        repository.replicas[0].read(victim)  # the local copy alone: refused, not returned wrong


def test_a_read_that_meets_damage_mid_claim_goes_on_from_the_other_replica_at_the_same_byte(replicated, caplog):
    repository, claims, directories = replicated
    victim = claims[2]  # 3000 bytes: 47 blocks of 64
    flip(file_of(directories["local"], victim), victim.offset + 2000)
    received = bytearray()
    with caplog.at_level(logging.WARNING, logger="replication.replicating_content"):
        with repository.open_read(victim, 10) as reader:
            assert reader.source is repository.replicas[0]
            while chunk := reader.read(100):
                received += chunk
            assert reader.source is repository.replicas[1]
    assert bytes(received) == payload(2, 3000)[10:]
    assert len(caplog.records) == 1


def test_a_claim_damaged_on_every_replica_is_refused_naming_the_claim_the_replicas_and_what_to_do(replicated, caplog):
    repository, claims, directories = replicated
    victim = claims[1]
    for directory in directories.values():
        flip(file_of(directory, victim), victim.offset + 3)
    with pytest.raises(ContentCorrupted) as refused:
        repository.read(victim)
    message = str(refused.value)
    assert f"{victim.resource.relative_path}@{victim.offset}+{victim.length}" in message
    assert "local (bytes" in message and "mirror (bytes" in message
    assert "Restore the resource file from a backup" in message
    assert refused.value.claim == victim
    assert {where for where, *_ in refused.value.ranges} == {"local", "mirror"}
    assert not [r for r in caplog.records if "read it from" in r.getMessage()]  # no fallback was claimed
    assert repository.read(claims[0]) == payload(0, 1000)  # its neighbours are intact


def test_a_claim_damaged_here_and_unreachable_there_is_worth_a_retry_not_a_failure(replicated):
    """The replica that did not answer (HDFS down) may hold the claim intact: the read
    says ContentUnavailable, which rolls the session back to retry, not ContentCorrupted,
    which routes the FlowFile to failure as unreadable."""
    repository, claims, directories = replicated
    victim = claims[0]
    flip(file_of(directories["local"], victim), victim.offset + 500)

    def unreachable(*_args, **_kwargs):
        raise ContentUnavailable("the mirror did not answer")

    repository.replicas[1].open_read = unreachable
    with pytest.raises(ContentUnavailable, match="may hold it intact") as refused:
        repository.read(victim)
    assert "damaged" in str(refused.value) or "checksum" in str(refused.value)


def test_fsck_repair_mends_a_bit_flipped_local_copy_from_the_intact_replica_never_the_reverse(replicated):
    repository, claims, directories = replicated
    victim = claims[0]
    flip(file_of(directories["local"], victim), victim.offset + 10)
    mirror_before = {
        path: open(path, "rb").read()
        for path in (file_of(directories["mirror"], victim), file_of(directories["mirror"], victim, True))
    }
    report = repository.fsck(repair=True)
    assert [(p.resource, p.replica, p.kind, p.repaired) for p in report.problems] == [
        (victim.resource.relative_path, "local", "damaged", True)
    ]
    assert report.problems[0].blocks == ["bytes 0..64: the bytes do not match their checksum"]
    for path, content in mirror_before.items():
        assert open(path, "rb").read() == content  # the intact copy was never written
    assert (
        open(file_of(directories["local"], victim), "rb").read()
        == mirror_before[file_of(directories["mirror"], victim)]
    )
    assert repository.replicas[0].read(victim) == payload(0, 1000)
    assert repository.fsck().problems == []


class Died(Exception):
    pass


def test_a_repair_that_dies_between_its_two_renames_never_serves_wrong_bytes_and_the_next_one_finishes(replicated):
    repository, claims, directories = replicated
    repository.close()
    victim = claims[0]
    flip(file_of(directories["local"], victim), victim.offset + 10)
    seen = []

    def die(checksum_path, resource_path):
        seen.append((checksum_path, resource_path))
        raise Died(resource_path)

    with pytest.raises(UnknownSeam, match="between_repair_rename"):
        ContentHooks(between_repair_rename=die)  # a misspelt seam is refused, never silently ignored
    local = open_filesystem_content_repository(
        {"c": directories["local"]}, CONFIG, name="local", hooks=ContentHooks(between_repair_renames=die)
    )
    mirror = open_filesystem_content_repository({"c": directories["mirror"]}, CONFIG, name="mirror")
    with pytest.raises(Died):
        fsck_replicas([local, mirror], repair=True)
    assert seen == [(file_of(directories["local"], victim, True), file_of(directories["local"], victim))]
    # The new checksum file stands beside the old, damaged resource file.
    with pytest.raises(ContentCorrupted, match="the bytes do not match their checksum"):
        local.read(victim)
    assert ReplicatingContentRepository([local, mirror]).read(victim) == payload(0, 1000)
    healthy = open_filesystem_content_repository({"c": directories["local"]}, CONFIG, name="local")
    assert fsck_replicas([healthy, mirror], repair=True).ok
    assert healthy.read(victim) == payload(0, 1000)
    assert fsck_replicas([healthy, mirror]).problems == []
    for opened in (local, mirror, healthy):
        opened.close()


def test_fsck_repairs_nothing_when_no_copy_verifies(replicated):
    repository, claims, directories = replicated
    victim = claims[0]
    for directory in directories.values():
        flip(file_of(directory, victim), victim.offset + 10)
    before = {path: open(path, "rb").read() for path in (file_of(d, victim) for d in directories.values())}
    report = repository.fsck(repair=True)
    assert not report.ok
    assert sorted((p.replica, p.kind, p.repaired) for p in report.problems) == [
        ("local", "damaged", False),
        ("mirror", "damaged", False),
    ]
    assert {path: open(path, "rb").read() for path in before} == before


def test_replicas_that_cut_claims_into_blocks_of_different_sizes_are_refused(tmp_path):
    local = open_filesystem_content_repository({"c": str(tmp_path / "a")}, CONFIG, name="local")
    other = open_filesystem_content_repository(
        {"c": str(tmp_path / "b")}, ContentRepositoryConfig(checksum_block_size=128), name="mirror"
    )
    with pytest.raises(ContentRepositoryError, match="same checksum_block_size"):
        ReplicatingContentRepository([local, other])
    local.close()
    other.close()


def test_the_fsck_command_lists_each_bad_block_and_repairs_from_the_verified_copy(replicated, capsys):
    repository, claims, directories = replicated
    repository.close()
    victim = claims[2]
    flip(file_of(directories["local"], victim), victim.offset + 100)
    flip(file_of(directories["local"], victim), victim.offset + 2900)
    arguments = ["content", "fsck", "--local", f"c={directories['local']}", "--mirror", f"c={directories['mirror']}"]
    assert custody(arguments) == 1
    out = capsys.readouterr().out
    assert f"[BAD] damaged  local: {victim.resource.relative_path}" in out
    for block in (1, 45):  # blocks of 64 bytes counted from the claim's first byte
        start = victim.offset + 64 * block
        assert f"bytes {start}..{start + 64}: the bytes do not match their checksum" in out
    assert custody([*arguments, "--repair"]) == 0
    assert "[repaired] damaged  local" in capsys.readouterr().out
    assert custody(arguments) == 0
    assert capsys.readouterr().out.rstrip().endswith("OK")
    # One replica is enough to find damage (and too few to repair it).
    flip(file_of(directories["mirror"], victim, checksums=True), 30)
    assert custody(["content", "fsck", "--local", f"c={directories['mirror']}"]) == 1
    assert "checksum record 0 is damaged" in capsys.readouterr().out
