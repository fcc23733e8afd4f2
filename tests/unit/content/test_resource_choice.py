"""Which resource a writer appends to: the one let go of last, so that writers taking
turns keep to one resource and a commit syncs it alone; and the resources writers
pass over are retired by age, on every replica at once."""

from __future__ import annotations

import time

from replication.replicating_content import ReplicatingContentRepository
from repositories.content import ArchivePolicy, ContentRepositoryConfig
from repositories.content.repository import ContentRepository
from repositories.content.resource_io import StorageResourceIO
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
