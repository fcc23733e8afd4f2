"""A checksum file lives and dies with its resource file: recovery cuts it where it
cuts the resource file and destroys it with an orphan, a stray one is removed, and
archive and age-off move and delete both (on local disk, with an injected clock)."""

from __future__ import annotations

import os

from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository
from repositories.content.checksum_format import HEADER_SIZE, RECORD_SIZE
from repositories.content.format import ARCHIVE_DIRECTORY, CHECKSUM_SUFFIX

CONFIG = ContentRepositoryConfig(sync_on_close=False, checksum_block_size=10, archive=ArchivePolicy(max_usage=None))


class Clock:
    now = 1_000.0

    def __call__(self) -> float:
        return self.now


def files_in(directory) -> dict[str, int]:
    return {
        os.path.relpath(os.path.join(root, name), directory): os.path.getsize(os.path.join(root, name))
        for root, _dirs, names in os.walk(directory)
        for name in names
    }


def test_recovery_cuts_the_checksum_records_of_the_bytes_it_cuts_and_destroys_an_orphans(tmp_path):
    directory = str(tmp_path / "c")
    repository = open_filesystem_content_repository({"c": directory}, CONFIG)
    kept = repository.write_bytes(b"k" * 25)  # blocks 10 + 10 + 5
    dropped = repository.write_bytes(b"d" * 12)  # after it, same resource: cut at recovery
    repository.sync()
    orphan_config = ContentRepositoryConfig(
        checksum_block_size=10, max_appendable_claim_size=1, archive=ArchivePolicy(max_usage=None)
    )
    repository.close()
    other = open_filesystem_content_repository({"c": directory}, orphan_config)
    orphan = other.write_bytes(b"o" * 30)  # a resource of its own, no live claim
    other.close()
    assert kept.resource == dropped.resource != orphan.resource
    section = str(kept.resource.section)

    again = open_filesystem_content_repository({"c": directory}, CONFIG)
    report = again.recover([kept])
    assert report.destroyed == [orphan.resource] and report.truncated_bytes == 12
    assert files_in(directory) == {
        os.path.join(section, kept.resource.id): 25,
        os.path.join(section, kept.resource.id + CHECKSUM_SUFFIX): HEADER_SIZE + 3 * RECORD_SIZE,
    }
    check = again.check_resource(kept.resource)
    assert (check.status, check.covered, check.failures) == ("verified", 25, [])
    assert again.read(kept) == b"k" * 25
    again.close()


def test_a_stray_checksum_file_is_removed_unless_a_live_claim_still_names_its_resource(tmp_path):
    directory = str(tmp_path / "c")
    repository = open_filesystem_content_repository({"c": directory}, CONFIG)
    gone = repository.write_bytes(b"g" * 60_000)  # over the maximum appendable size: a resource of its own
    lost = repository.write_bytes(b"l" * 60_000)
    repository.close()
    for claim in (gone, lost):  # the resource files vanish, their checksum files stay
        os.unlink(os.path.join(directory, str(claim.resource.section), claim.resource.id))
    again = open_filesystem_content_repository({"c": directory}, CONFIG)
    report = again.recover([lost])
    assert report.missing == [lost.resource]
    assert files_in(directory) == {
        os.path.join(str(lost.resource.section), lost.resource.id + CHECKSUM_SUFFIX): HEADER_SIZE + 6000 * RECORD_SIZE
    }
    again.close()


def test_archive_and_age_off_move_and_delete_both_files_even_when_a_crash_split_them(tmp_path):
    directory = str(tmp_path / "c")
    clock = Clock()
    repository = open_filesystem_content_repository({"c": directory}, CONFIG, clock=clock)
    first = repository.write_bytes(b"1" * 60_000)
    second = repository.write_bytes(b"2" * 60_000)
    repository.sync()
    for claim in (first, second):
        repository.decrement(claim)
    assert sorted(repository.collect().archived, key=str) == sorted([first.resource, second.resource], key=str)
    section = os.path.join(directory, str(first.resource.section))
    archive = os.path.join(section, ARCHIVE_DIRECTORY)
    assert sorted(os.listdir(archive)) == sorted(
        name for claim in (first, second) for name in (claim.resource.id, claim.resource.id + CHECKSUM_SUFFIX)
    )
    # A crash between archive's two renames leaves a checksum file behind in the section.
    name = second.resource.id + CHECKSUM_SUFFIX
    os.rename(os.path.join(archive, name), os.path.join(section, name))
    assert repository.read(second) == b"2" * 60_000  # found in the other place, and checked
    assert repository.check_resource(second.resource).status == "verified"
    clock.now += 4 * 3600
    assert sorted(repository.age_off(), key=str) == sorted([first.resource, second.resource], key=str)
    assert files_in(directory) == {}
    repository.close()
