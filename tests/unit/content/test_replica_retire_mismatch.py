"""A follower that retired the leader's next resource (the two retired it at different
moments) does not fail the write: the leader's resource is retired too, and the
write goes to a new resource on both. Found in the cluster's file drill, where each
such write failed its session with a stack trace."""

from __future__ import annotations

import pytest

from replication.replicating_content import ReplicatingContentRepository
from repositories.content import (
    ArchivePolicy,
    ContentRepositoryConfig,
    ContentRepositoryError,
    open_filesystem_content_repository,
)

CONFIG = ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))


def test_a_write_after_a_follower_retired_the_resource_goes_to_a_new_one(tmp_path):
    replicas = [
        open_filesystem_content_repository({"c": str(tmp_path / name)}, CONFIG, name=name)
        for name in ("local", "mirror")
    ]
    repository = ReplicatingContentRepository(replicas)
    first = repository.write_bytes(b"first claim")
    replicas[1].retire(first.resource)  # only the follower: the leader would append to it next
    second = repository.write_bytes(b"second claim")
    assert second.resource != first.resource
    for replica in replicas:
        with replica.open_read(second) as stream:
            assert stream.read() == b"second claim"
        with replica.open_read(first) as stream:
            assert stream.read() == b"first claim"
    repository.close()


def test_replicas_that_fill_resources_to_different_sizes_are_refused(tmp_path):
    local = open_filesystem_content_repository({"c": str(tmp_path / "a")}, CONFIG, name="local")
    other = open_filesystem_content_repository(
        {"c": str(tmp_path / "b")}, ContentRepositoryConfig(max_appendable_claim_size=1 << 20), name="mirror"
    )
    with pytest.raises(ContentRepositoryError, match="same max_appendable_claim_size"):
        ReplicatingContentRepository([local, other])
    local.close()
    other.close()


def test_a_resource_past_its_age_is_retired_on_every_replica_with_the_claim_that_finds_it_so(tmp_path):
    def replicas(name):
        return [
            open_filesystem_content_repository({"c": str(tmp_path / f"{name}-{replica}")}, CONFIG, name=replica)
            for replica in ("local", "mirror")
        ]

    young = ReplicatingContentRepository(replicas("young"), max_resource_age_s=3600.0)
    first, second = young.write_bytes(b"one"), young.write_bytes(b"two")
    assert second.resource == first.resource  # small claims share a resource while it is young
    assert all(first.resource in replica.open_resources() for replica in young.replicas)

    old = ReplicatingContentRepository(replicas("old"), max_resource_age_s=0.0)
    first, second = old.write_bytes(b"one"), old.write_bytes(b"two")
    assert second.resource != first.resource
    old.sync()
    for replica in old.replicas:  # retired (and closed) on both, in lockstep
        assert replica.open_resources() == set()
        assert replica.read(first) == b"one" and replica.read(second) == b"two"
    young.close()
    old.close()
