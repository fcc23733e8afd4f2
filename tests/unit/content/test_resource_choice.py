"""Which resource a writer appends to: the one let go of last, so that writers taking
turns keep to one resource and a commit syncs it alone; the resources writers pass
over are retired by age, on every replica at once; and how full a resource of small
claims gets (`shared_resource_size`), apart from the size that makes a claim large."""

from __future__ import annotations

import time

import pytest

from replication.replicating_content import ReplicatingContentRepository
from repositories.content import ArchivePolicy, ContentRepositoryConfig, ContentRepositoryError
from repositories.content.repository import ContentRepository
from repositories.content.resource_io import StorageResourceIO
from repositories.content.writing import is_full
from repositories.storage import LocalStorage

CONFIG = ContentRepositoryConfig(
    sync_on_close=False,
    max_appendable_claim_size=1 << 20,  # no resource fills in these tests
    archive=ArchivePolicy(max_usage=None),
)


def repository(root, name="local") -> ContentRepository:
    return ContentRepository(
        {"c": str(root)}, StorageResourceIO(LocalStorage(), read_through_arrow=False), CONFIG, name=name
    )


def open_side_by_side(repo, count: int) -> list:
    """`count` writers at once (each on a resource of its own), closed in order: the
    resources they leave appendable, the last one let go of last."""
    writers = [repo.write() for _ in range(count)]
    for writer in writers:
        writer.write(b"x")
    return [writer.close().resource for writer in writers]


def test_writers_taking_turns_keep_to_the_resource_let_go_of_last(tmp_path):
    repo = repository(tmp_path)
    resources = open_side_by_side(repo, 3)
    assert len(set(resources)) == 3
    used = set()
    for _ in range(20):
        with repo.write() as writer:
            writer.write(b"y" * 10)
        used.add(writer.claim.resource)
    assert used == {resources[-1]}
    repo.close()


def test_a_resource_nobody_takes_is_retired_once_old_and_not_before(tmp_path):
    repo = repository(tmp_path)
    first, second = open_side_by_side(repo, 2)
    table = repo._allocator.table
    table.open[first].opened = time.monotonic() - 10  # created ten seconds ago
    busy = repo.write()  # takes `second`, the one let go of last
    assert busy.resource == second
    table.open[second].opened = time.monotonic() - 10  # old too, but being written
    assert repo.retire_aged(5.0) == [first]
    assert table.open[first].retired
    assert repo.retire_aged(5.0) == []  # not twice; and never the one being written
    busy.write(b"z")
    busy.close()
    repo.sync()  # closes the retired resource's files
    assert first not in table.open
    repo.close()


def test_a_replicated_write_retires_aged_resources_on_every_replica(tmp_path):
    local, follower = repository(tmp_path / "local"), repository(tmp_path / "hdfs", name="hdfs")
    replicated = ReplicatingContentRepository([local, follower], max_resource_age_s=5.0)
    writers = [replicated.write() for _ in range(2)]
    for writer in writers:
        writer.write(b"x")
    old, recent = (writer.close().resource for writer in writers)
    local._allocator.table.open[old].opened = time.monotonic() - 10
    with replicated.write() as writer:
        writer.write(b"y")
    assert writer.claim.resource == recent
    for replica in (local, follower):
        table = replica._allocator.table
        assert table.open[old].retired and old not in {r.claim for r in table.appendable}
        assert not table.open[recent].retired
    replicated.sync()
    for replica in (local, follower):
        assert old not in replica._allocator.table.open  # closed by the sync, on both
    replicated.close()


def test_an_aged_resource_no_writer_comes_back_to_is_retired_and_closed_on_every_replica(tmp_path):
    """A node's maintenance round (`retire_aged`): the flow went idle, so no write and
    no commit comes to retire it."""
    local, follower = repository(tmp_path / "local"), repository(tmp_path / "hdfs", name="hdfs")
    replicated = ReplicatingContentRepository([local, follower], max_resource_age_s=5.0)
    with replicated.write() as writer:
        writer.write(b"x")
    resource = writer.claim.resource
    assert replicated.retire_aged() == []  # young: kept open for the next writer
    assert all(resource in replica._allocator.table.open for replica in (local, follower))
    local._allocator.table.open[resource].opened = time.monotonic() - 10
    assert replicated.retire_aged() == [resource]
    for replica in (local, follower):
        assert resource not in replica._allocator.table.open  # retired and closed, on both
    assert replicated.read(writer.claim) == b"x"
    replicated.close()


@pytest.mark.parametrize("let_go", ["closed", "aborted"])
def test_a_resource_retired_as_its_writer_let_go_is_closed_though_no_commit_follows(tmp_path, let_go):
    """Too old when its writer closed the claim, or the writer aborted (its session
    rolled back): retired then, its files left for a sync no commit makes."""
    local, follower = repository(tmp_path / "local"), repository(tmp_path / "hdfs", name="hdfs")
    replicated = ReplicatingContentRepository([local, follower], max_resource_age_s=5.0)
    with replicated.write() as first:
        first.write(b"x")
    writer = replicated.write()
    assert writer.resource == first.claim.resource
    local._allocator.table.open[writer.resource].opened = time.monotonic() - 10
    assert replicated.retire_aged() == []  # never the one being written
    writer.write(b"y")
    writer.close() if let_go == "closed" else writer.abort()
    assert all(replica.retired_waiting() for replica in (local, follower))
    assert replicated.retire_aged() == []  # nothing more to retire, but its files are closed
    for replica in (local, follower):
        assert first.claim.resource not in replica._allocator.table.open and not replica.retired_waiting()
    assert replicated.read(first.claim) == b"x"
    replicated.close()


# -- how full a resource of small claims gets -------------------------------------------

KB, MB = 1024, 1 << 20


@pytest.mark.parametrize(
    "shared, packed, length, last, full",
    [
        # NiFi's one threshold (shared None): small claims share up to max_appendable.
        (None, None, 1 * MB - 1, 1 * KB, False),
        (None, None, 1 * MB, 1 * KB, True),
        (None, None, 3 * MB, 3 * MB, True),  # a large claim fills its resource alone
        # Small claims share up to shared_resource_size; a large claim still fills alone.
        (8 * MB, None, 1 * MB, 1 * KB, False),
        (8 * MB, None, 8 * MB - 1, 1 * KB, False),
        (8 * MB, None, 8 * MB, 1 * KB, True),
        (8 * MB, None, 1 * MB + 5 * KB, 1 * MB, True),  # large after small: full at once
        # Packing: large claims share up to packed_resource_size.
        (None, 16 * MB, 4 * MB, 2 * MB, False),
        (None, 16 * MB, 16 * MB, 2 * MB, True),
        (None, 16 * MB, 4 * MB, 1 * KB, True),  # the first small claim after them fills it
        (8 * MB, 16 * MB, 4 * MB, 1 * KB, False),  # ... unless under shared_resource_size
    ],
)
def test_is_full(shared, packed, length, last, full):
    config = ContentRepositoryConfig(
        max_appendable_claim_size=1 * MB, shared_resource_size=shared, packed_resource_size=packed
    )
    assert is_full(config, length, last) is full


def test_shared_resource_size_below_the_large_claim_size_is_refused():
    with pytest.raises(ContentRepositoryError, match="shared_resource_size 1024 must be at least"):
        ContentRepositoryConfig(max_appendable_claim_size=1 * MB, shared_resource_size=1 * KB)


def test_replicas_sharing_resources_of_different_sizes_are_refused(tmp_path):
    local = repository(tmp_path / "local")
    other = ContentRepository(
        {"c": str(tmp_path / "hdfs")},
        StorageResourceIO(LocalStorage(), read_through_arrow=False),
        ContentRepositoryConfig(sync_on_close=False, max_appendable_claim_size=1 << 20, shared_resource_size=8 << 20),
        name="hdfs",
    )
    with pytest.raises(ContentRepositoryError, match="same shared_resource_size"):
        ReplicatingContentRepository([local, other])
    local.close()
    other.close()


def test_small_claims_fill_a_resource_to_the_shared_size_and_a_large_one_goes_alone(tmp_path):
    config = ContentRepositoryConfig(
        sync_on_close=False,
        max_appendable_claim_size=64 * KB,
        shared_resource_size=256 * KB,
        archive=ArchivePolicy(max_usage=None),
    )
    repo = ContentRepository(
        {"c": str(tmp_path)}, StorageResourceIO(LocalStorage(), read_through_arrow=False), config, name="local"
    )
    claims = []
    for _ in range(40):  # 40 claims of 10 KB: two resources of 26 and one of the rest
        with repo.write() as writer:
            writer.write(b"s" * 10 * KB)
        claims.append(writer.claim)
    per_resource = [sum(1 for c in claims if c.resource == r) for r in dict.fromkeys(c.resource for c in claims)]
    assert per_resource == [26, 14]
    with repo.write() as writer:  # a large claim: in the appendable resource, which it fills
        writer.write(b"L" * 64 * KB)
    assert writer.claim.resource == claims[-1].resource
    with repo.write() as writer:
        writer.write(b"s")
    assert writer.claim.resource != claims[-1].resource and writer.claim.offset == 0
    repo.close()
