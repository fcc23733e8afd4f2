"""One contract suite for every content repository: local disk, HDFS, and the
replicating wrapper (local + local, and local + HDFS).

HDFS variants use the shared `hdfs_store` fixture (tests/conftest.py); with CI=true a
missing HDFS is a failure there, not a skip here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading

import pytest

from replication.hdfs_content import DEFAULT_HDFS_CONFIG, open_hdfs_content_repository
from replication.replicating_content import ReplicatingContentRepository
from repositories.claims import ContentClaim, ResourceClaim
from repositories.content import (
    ArchivePolicy,
    ContentNotFound,
    ContentRepositoryConfig,
    ContentTruncated,
    open_filesystem_content_repository,
)

KINDS = ["local", "replicating-local-local", "hdfs", "replicating-local-hdfs"]


class FakeClock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=KINDS)
def make_repository(request, tmp_path):
    """Builds repositories of the parametrized kind; closes them at the end."""
    kind = request.param
    made = []
    counter = iter(range(1000))

    def make(config: ContentRepositoryConfig | None = None, clock=None):
        config = config or ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))
        clock = clock or FakeClock()
        index = next(counter)

        def local(name):
            return open_filesystem_content_repository(
                {"disk1": str(tmp_path / f"{name}{index}-1"), "disk2": str(tmp_path / f"{name}{index}-2")},
                config,
                clock=clock,
                name=name,
            )

        def hdfs():
            store = request.getfixturevalue("hdfs_store")
            hdfs_config = dataclasses.replace(
                DEFAULT_HDFS_CONFIG,
                sync_on_close=config.sync_on_close,
                archive=config.archive,
                max_appendable_claim_size=config.max_appendable_claim_size,
            )
            return open_hdfs_content_repository(
                store.storage, f"{store.root}/r{index}", "node-1", ["disk1", "disk2"], hdfs_config, clock=clock
            )

        if kind == "local":
            repository = local("local")
        elif kind == "hdfs":
            repository = hdfs()
        elif kind == "replicating-local-local":
            repository = ReplicatingContentRepository([local("local"), local("mirror")])
        else:
            repository = ReplicatingContentRepository([local("local"), hdfs()])
        made.append(repository)
        return repository

    make.kind = kind
    yield make
    for repository in made:
        try:
            repository.close()
        except Exception:  # noqa: BLE001 - a test may have closed or broken it on purpose
            pass


def payload(seed: int, size: int) -> bytes:
    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // len(block) + 1))[:size]


def test_round_trip_and_offsets(make_repository):
    repository = make_repository()
    data = payload(1, 5000)
    claim = repository.write_bytes(data)
    assert claim.length == 5000
    assert repository.read(claim) == data
    assert repository.read(claim, 100) == data[100:]
    assert repository.read(claim, 100, 50) == data[100:150]
    assert repository.read(claim, 5000) == b""
    with repository.open_read(claim, 10) as reader:
        assert reader.read(7) == data[10:17]
        assert reader.read() == data[17:]
        assert reader.read() == b""


def test_empty_claim(make_repository):
    repository = make_repository()
    claim = repository.write_bytes(b"")
    assert claim.length == 0
    assert repository.read(claim) == b""


def test_small_claims_share_resources_up_to_max_appendable(make_repository):
    config = ContentRepositoryConfig(
        sync_on_close=False, archive=ArchivePolicy(max_usage=None), max_appendable_claim_size=10 * 1024
    )
    repository = make_repository(config)
    claims = []
    for index in range(100):
        with repository.write() as writer:
            writer.write(payload(index, 1024))
        claims.append(writer.claim)
    repository.sync()
    resources = {claim.resource for claim in claims}
    assert 10 <= len(resources) <= 12  # 10 claims of 1 KB fill a 10 KB resource
    assert {claim.resource.container for claim in claims} == {"disk1", "disk2"}  # striped
    for resource in resources:
        in_it = sorted((c for c in claims if c.resource == resource), key=lambda c: c.offset)
        assert in_it[0].offset == 0
        for before, after in zip(in_it, in_it[1:], strict=False):
            assert after.offset == before.offset + before.length
    for index, claim in enumerate(claims):
        assert repository.read(claim) == payload(index, 1024)


def test_large_claim_is_streamed(make_repository):
    repository = make_repository()
    digest = hashlib.sha256()
    chunk = os.urandom(1 << 20)
    with repository.write() as writer:
        for _ in range(24):
            writer.write(chunk)
            digest.update(chunk)
    claim = writer.claim
    assert claim.length == 24 << 20
    check = hashlib.sha256()
    with repository.open_read(claim) as reader:
        while block := reader.read(1 << 20):
            assert len(block) <= 1 << 20
            check.update(block)
    assert check.hexdigest() == digest.hexdigest()


def test_copy_on_write_leaves_the_original(make_repository):
    repository = make_repository()
    original = repository.write_bytes(b"hello, world")
    changed = repository.copy(original, 7)
    assert changed != original
    assert repository.read(changed) == b"world"
    assert repository.read(original) == b"hello, world"


def test_concurrent_writers(make_repository):
    repository = make_repository()
    results: dict[int, ContentClaim] = {}
    errors = []

    def work(worker: int) -> None:
        try:
            for index in range(20):
                key = worker * 100 + index
                results[key] = repository.write_bytes(payload(key, 700 + key))
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert len(results) == 80
    spans = {(c.resource, c.offset) for c in results.values()}
    assert len(spans) == 80
    for key, claim in results.items():
        assert repository.read(claim) == payload(key, 700 + key)


def test_claimants_archive_and_destroy(make_repository):
    clock = FakeClock()
    repository = make_repository(ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None)), clock)
    with repository.write() as writer:
        writer.write(payload(7, 60 * 1024))  # over the max appendable size: retired at close
    claim = writer.claim
    assert repository.claimant_count(claim) == 1
    assert repository.increment(claim) == 2
    assert repository.decrement(claim) == 1
    assert repository.collect().archived == []
    assert repository.decrement(claim) == 0
    assert repository.collect().archived == [claim.resource]
    assert repository.read(claim) == payload(7, 60 * 1024)  # archived content stays readable
    clock.now += 3 * 3600 - 1
    assert repository.age_off() == []
    clock.now += 2
    assert repository.age_off() == [claim.resource]
    with pytest.raises(ContentNotFound):
        repository.read(claim)


def test_unreferenced_claim_destroyed_without_archive(make_repository):
    repository = make_repository(ContentRepositoryConfig(archive=ArchivePolicy(enabled=False, max_usage=None)))
    with repository.write() as writer:
        writer.write(payload(8, 60 * 1024))
    repository.decrement(writer.claim)
    assert repository.collect().destroyed == [writer.claim.resource]
    assert not repository.exists(writer.claim)


def test_recover_sets_counts_and_destroys_orphans(make_repository):
    repository = make_repository()
    kept = repository.write_bytes(payload(1, 60 * 1024))
    orphan = repository.write_bytes(payload(2, 60 * 1024))
    repository.close()
    again = _reopen(repository)
    report = again.recover([kept, kept])
    assert orphan.resource in report.destroyed
    assert again.claimant_count(kept) == 2
    assert again.read(kept) == payload(1, 60 * 1024)
    assert not again.exists(orphan)
    again.close()


def _reopen(repository):
    """The same repository (same directories or HDFS roots) as a fresh process would open it."""
    from repositories.content import ContentRepository

    def one(replica):
        return ContentRepository(
            replica.containers, type(replica.io)(*_io_args(replica.io)), replica.config, name=replica.name
        )

    if isinstance(repository, ReplicatingContentRepository):
        return ReplicatingContentRepository([one(replica) for replica in repository.replicas])
    return one(repository)


def _io_args(resource_io):
    return () if resource_io.can_truncate else (resource_io.storage,)


def test_claim_past_end_of_resource_is_never_returned_partial(make_repository):
    repository = make_repository()
    claim = repository.write_bytes(b"0123456789")
    torn = ContentClaim(claim.resource, claim.offset, claim.length + 5)
    with pytest.raises(ContentTruncated):
        repository.read(torn)


def test_unknown_resource_is_not_found(make_repository):
    repository = make_repository()
    repository.write_bytes(b"x")
    with pytest.raises(ContentNotFound):
        repository.read(ContentClaim(ResourceClaim("disk1", 5, "no-such-resource"), 0, 1))
    with pytest.raises(ContentNotFound):
        repository.read(ContentClaim(ResourceClaim("nodisk", 5, "r"), 0, 1))
