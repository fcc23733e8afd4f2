"""Archive age-off by time and by usage, driven by an injected clock and usage probe."""

from __future__ import annotations

import pytest

from repositories.content import (
    ArchivePolicy,
    ContentRepositoryConfig,
    ContentRepositoryFull,
    Usage,
    open_filesystem_content_repository,
)

HOUR = 3600.0


class FakeClock:
    def __init__(self):
        self.now = 5_000_000.0

    def __call__(self):
        return self.now


class FakeDisk:
    """Usage = a fixed base plus the bytes actually stored in the container."""

    def __init__(self, root, base, total):
        self.root, self.base, self.total = root, base, total

    def __call__(self, _root):
        stored = sum(path.stat().st_size for path in self.root.rglob("*") if path.is_file())
        return Usage(used=self.base + stored, total=self.total)


@pytest.fixture
def setup(tmp_path):
    clock = FakeClock()
    disk = FakeDisk(tmp_path / "content", base=0, total=1_000_000)
    repository = open_filesystem_content_repository(
        {"c": str(tmp_path / "content")},
        ContentRepositoryConfig(archive=ArchivePolicy(), usage_check_interval_s=60.0),
        clock=clock,
        usage_probe=disk,
    )
    yield repository, clock, disk
    repository.close()


def archive_one(repository, clock, size=60_000):
    claim = repository.write_bytes(b"a" * size)
    repository.decrement(claim)
    assert repository.collect().archived == [claim.resource]
    return claim


def test_age_off_by_retention_uses_the_injected_clock(setup):
    repository, clock, _disk = setup
    old = archive_one(repository, clock)
    clock.now += 2 * HOUR
    young = archive_one(repository, clock)
    clock.now += 1 * HOUR  # old is exactly 3 h in the archive, young 1 h
    assert repository.age_off() == [old.resource]
    assert repository.exists(young)
    clock.now += 2 * HOUR - 1
    assert repository.age_off() == []
    clock.now += 1
    assert repository.age_off() == [young.resource]


def test_age_off_by_usage_takes_oldest_first(setup):
    repository, clock, disk = setup
    claims = []
    for _ in range(4):
        claims.append(archive_one(repository, clock))
        clock.now += 60
    disk.base = 820_000  # 820 KB + 240 KB archived = 106 % of 1 MB: over 90 %
    deleted = repository.age_off()
    assert deleted == [claim.resource for claim in claims[:3]]  # down to 880 KB
    assert repository.exists(claims[3])


def test_writes_refused_while_above_max_usage_and_resume_after(setup):
    repository, clock, disk = setup
    live = repository.write_bytes(b"l" * 60_000)
    disk.base = 950_000
    clock.now += 61  # let the cached usage expire
    with pytest.raises(ContentRepositoryFull, match="writes are refused"):
        repository.write_bytes(b"x")
    assert repository.read(live) == b"l" * 60_000  # reads still work
    disk.base = 100_000
    clock.now += 61
    assert repository.read(repository.write_bytes(b"ok")) == b"ok"
