"""Damage at every offset of a small resource, in its resource file and in its checksum
file: flip a bit, truncate, append NULs. After each, exactly the claims whose bytes or
checksums were hit fail to read from the damaged replica, and never with wrong bytes;
the replicating repository reads every claim right from the other replica; fsck names
the damaged copy and `--repair` rewrites it from the intact one, never the reverse.

Two local replicas stand in for local disk and HDFS (the real HDFS case is in
tests/integration/test_content_checksums.py); checksum blocks of 8 bytes give a
resource of 24 bytes four blocks in three claims and an empty one. Reads are checked
after the damage at every offset; fsck and its repair (which scan 1024 sections and
fsync) after every seventh, or after every one with CUSTODY_LONG=1.
"""

from __future__ import annotations

import os

import pytest

from replication.content_fsck import fsck_replicas
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import (
    ArchivePolicy,
    ContentCorrupted,
    ContentRepositoryConfig,
    ContentTruncated,
    open_filesystem_content_repository,
)
from repositories.content.checksum_format import HEADER_SIZE, RECORD_SIZE
from repositories.content.format import CHECKSUM_SUFFIX

from .damage import flip_bit

CONFIG = ContentRepositoryConfig(sync_on_close=False, checksum_block_size=8, archive=ArchivePolicy(max_usage=None))
CONTENTS = [b"thirteen byte", b"", b"8 bytes!", b"end"]  # 13 bytes (2 blocks), 0, 8 (1 block), 3 (1 block)
RECORDS_OF = [(0, 1), (), (2,), (3,)]  # the checksum records of each claim
FSCK_EVERY = 1 if os.environ.get("CUSTODY_LONG") == "1" else 7


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    directory = tmp_path_factory.mktemp("damage")
    local = str(directory / "local")
    mirror = str(directory / "mirror")
    writer = ReplicatingContentRepository(
        [
            open_filesystem_content_repository({"c": local}, CONFIG, name="local"),
            open_filesystem_content_repository({"c": mirror}, CONFIG, name="mirror"),
        ]
    )
    claims = [writer.write_bytes(data) for data in CONTENTS]
    writer.sync()
    writer.close()
    assert len({claim.resource for claim in claims}) == 1
    resource = claims[0].resource
    files = {side: os.path.join(directory, side, str(resource.section), resource.id) for side in ("local", "mirror")}
    pristine = {
        name: open(path + suffix, "rb").read()
        for name, path in files.items()
        for suffix in ("", CHECKSUM_SUFFIX)
        for name in [name + suffix]
    }
    assert len(pristine["local"]) == 24 and len(pristine["local" + CHECKSUM_SUFFIX]) == HEADER_SIZE + 4 * RECORD_SIZE
    readers = [
        open_filesystem_content_repository({"c": local}, CONFIG, name="local"),
        open_filesystem_content_repository({"c": mirror}, CONFIG, name="mirror"),
    ]
    yield claims, files, pristine, readers
    for reader in readers:
        reader.close()


def expected_failures_of_data_damage(claims, first_bad: int, last_bad: int | None = None) -> set[int]:
    """Claims holding a byte in [first_bad, last_bad], or (last_bad None) ending past first_bad."""
    if last_bad is None:
        return {index for index, claim in enumerate(claims) if claim.offset + claim.length > first_bad}
    return {
        index
        for index, claim in enumerate(claims)
        if claim.length and claim.offset <= last_bad and first_bad < claim.offset + claim.length
    }


def expected_failures_of_checksum_damage(first_bad_record: int | None, only_that_one: bool) -> set[int]:
    """Claims that need record `first_bad_record` (or any from it on); None: the header."""
    return {
        index
        for index, records in enumerate(RECORDS_OF)
        if records
        and (
            first_bad_record is None
            or (first_bad_record in records if only_that_one else max(records) >= first_bad_record)
        )
    }


def check_damage(replicas, path, damage, expected_failures: set[int], *, repairable: bool = True, fsck: bool = True):
    claims, files, pristine, (local, mirror) = replicas
    damage(path)
    try:
        failed = set()
        for index, claim in enumerate(claims):
            try:
                assert local.read(claim) == CONTENTS[index], f"wrong bytes returned for claim {index}"
            except (ContentCorrupted, ContentTruncated):
                failed.add(index)
        assert failed == expected_failures
        replicated = ReplicatingContentRepository([local, mirror])
        assert [replicated.read(claim) for claim in claims] == CONTENTS

        if not fsck:
            return
        repaired = fsck_replicas([local, mirror], repair=True)
        if not repairable:
            assert repaired.ok and repaired.problems == []
            return
        assert [(p.replica, p.kind, p.repaired) for p in repaired.problems] in (
            [("local", "damaged", True)],
            [("local", "short", True)],
        )
        for name, content in pristine.items():  # the damaged copy mended, the intact one untouched
            side, _, suffix = name.partition(".")
            assert open(files[side] + ("." + suffix if suffix else ""), "rb").read() == content, name
    finally:
        for name, content in pristine.items():  # whatever happened, the next case starts clean
            side, _, suffix = name.partition(".")
            with open(files[side] + ("." + suffix if suffix else ""), "wb") as handle:
                handle.write(content)


def flip(offset: int):
    return lambda path: flip_bit(path, offset, 1 << offset % 8)


def truncate(length: int):
    return lambda path: os.truncate(path, length)


def append_nuls(count: int):
    def damage(path):
        with open(path, "ab") as handle:
            handle.write(b"\x00" * count)

    return damage


@pytest.mark.parametrize(
    "damage, last_bad", [(flip, lambda offset: offset), (truncate, lambda offset: None)], ids=["flipped-bit", "cut"]
)
def test_damage_at_any_offset_of_the_resource_file_fails_exactly_the_claims_it_hits(replicas, damage, last_bad):
    claims, files, _pristine, _readers = replicas
    for offset in range(24):
        check_damage(
            replicas,
            files["local"],
            damage(offset),
            expected_failures_of_data_damage(claims, offset, last_bad(offset)),
            fsck=offset % FSCK_EVERY == 0,
        )


@pytest.mark.parametrize("damage, only_that_record", [(flip, True), (truncate, False)], ids=["flipped-bit", "cut"])
def test_damage_at_any_offset_of_the_checksum_file_fails_exactly_the_claims_it_vouched_for(
    replicas, damage, only_that_record
):
    _claims, files, _pristine, _readers = replicas
    for offset in range(HEADER_SIZE + 4 * RECORD_SIZE):
        record = None if offset < HEADER_SIZE else (offset - HEADER_SIZE) // RECORD_SIZE
        check_damage(
            replicas,
            files["local"] + CHECKSUM_SUFFIX,
            damage(offset),
            expected_failures_of_checksum_damage(record, only_that_one=only_that_record),
            fsck=offset % FSCK_EVERY == 0,
        )


def test_nuls_appended_to_either_file_lose_nothing_and_are_no_damage(replicas):
    _claims, files, _pristine, _readers = replicas
    for count in (1, 7, 20, 41):
        check_damage(replicas, files["local"], append_nuls(count), set(), repairable=False)
        check_damage(replicas, files["local"] + CHECKSUM_SUFFIX, append_nuls(count), set(), repairable=False)
