"""A full disk, for real: a tmpfs mounted with size=2m (the tests run as root)."""

from __future__ import annotations

import pytest

from repositories.content import (
    ArchivePolicy,
    ContentRepositoryConfig,
    ContentRepositoryFull,
    ContentStorageFull,
    open_filesystem_content_repository,
)


@pytest.fixture
def small_filesystem(small_tmpfs):
    return small_tmpfs("2m")


def pattern(index: int, size: int) -> bytes:
    return bytes([index % 251]) * size


def test_enospc_is_a_clear_error_nothing_written_is_corrupted_and_writing_resumes(small_filesystem):
    repository = open_filesystem_content_repository(
        {"small": str(small_filesystem / "content")},
        ContentRepositoryConfig(archive=ArchivePolicy(enabled=False, max_usage=None)),
    )
    written = []
    failure = None
    for index in range(100):  # 2 MB / 100 KB: full long before 100
        try:
            with repository.write() as writer:
                for _ in range(4):
                    writer.write(pattern(index, 25_000))
            written.append((index, writer.claim))
        except ContentStorageFull as error:
            failure = error
            break
    assert failure is not None, "the small filesystem never filled up"
    assert "no space left" in str(failure)
    assert len(written) >= 5
    for index, claim in written:
        assert repository.read(claim) == pattern(index, 100_000)

    # Still full: a clear error again, and still nothing already written is harmed.
    with pytest.raises(ContentStorageFull):
        repository.write_bytes(pattern(1, 300_000))

    # Space returns (the flow drops some FlowFiles): writing resumes.
    for _index, claim in written[:3]:
        assert repository.decrement(claim) == 0
    destroyed = repository.collect().destroyed
    # The three dropped claims' resources, and the two resources whose writes failed
    # (their partial bytes were never part of any claim) are reclaimed.
    assert {claim.resource for _index, claim in written[:3]} <= set(destroyed)
    assert len(destroyed) == 5
    claim = repository.write_bytes(pattern(7, 100_000))
    assert repository.read(claim) == pattern(7, 100_000)
    for index, claim in written[3:]:
        assert repository.read(claim) == pattern(index, 100_000)
    repository.close()


def test_writes_refused_above_max_usage_until_archive_ages_off(small_filesystem):
    repository = open_filesystem_content_repository(
        {"small": str(small_filesystem / "content")},
        ContentRepositoryConfig(archive=ArchivePolicy(max_usage=0.5), usage_check_interval_s=0.0),
    )
    claims = []
    with pytest.raises(ContentRepositoryFull, match="above the maximum of 50%"):
        for index in range(40):
            claims.append(repository.write_bytes(pattern(index, 100_000)))
    assert 5 <= len(claims) < 20
    # Unreferenced content is archived: it still takes space, so writes stay refused
    # only until the usage rule ages the archive off, which the next write triggers.
    for claim in claims[:6]:
        repository.decrement(claim)
    assert len(repository.collect().archived) == 6
    claim = repository.write_bytes(pattern(99, 100_000))
    assert repository.read(claim) == pattern(99, 100_000)
    assert len(repository.archived()) < 6
    for index, kept in enumerate(claims[6:], start=6):
        assert repository.read(kept) == pattern(index, 100_000)
    repository.close()
