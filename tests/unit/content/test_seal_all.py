"""Sealing a batch's resources at once (what a Spark batch by reference needs before
its executors read the claims): every replica stops appending to each, syncs once,
and each file is closed, on real local repositories whose follower closes in the
background as the HDFS one does."""

from __future__ import annotations

from replication.replicating_content import ReplicatingContentRepository
from repositories.content import ContentRepositoryConfig, open_filesystem_content_repository


def replicas(tmp_path) -> ReplicatingContentRepository:
    return ReplicatingContentRepository(
        [
            open_filesystem_content_repository(
                {"c": str(tmp_path / "leader")}, ContentRepositoryConfig(), name="leader"
            ),
            open_filesystem_content_repository(
                {"c": str(tmp_path / "follower")}, ContentRepositoryConfig(close_in_background=True), name="follower"
            ),
        ]
    )


def test_every_resource_is_sealed_on_every_replica_and_nothing_is_appended_to_it_after(tmp_path):
    repository = replicas(tmp_path)
    claims = []
    for index in range(3):  # three writers at once: three resources, all left open
        writers = [repository.write() for _ in range(3)]
        for number, writer in enumerate(writers):
            writer.write(b"%d-%d " % (index, number) * 50)
        for writer in writers:
            writer.close()
            claims.append(writer.claim)
    resources = {claim.resource for claim in claims}
    assert all(resources & replica.open_resources() for replica in repository.replicas)

    assert repository.seal_all(resources, timeout=10) == set()
    assert not any(resources & replica.open_resources() for replica in repository.replicas)
    fresh = repository.write_bytes(b"after the seal")
    assert fresh.resource not in resources
    for claim, replica in ((claim, replica) for claim in claims for replica in repository.replicas):
        assert replica.read(claim) == repository.read(claim)
    repository.close()


def test_a_resource_a_writer_holds_past_the_timeout_is_returned_still_open(tmp_path):
    repository = replicas(tmp_path)
    done = repository.write_bytes(b"a closed claim")
    holding = repository.write()  # appends to the same small resource, and is not done
    holding.write(b"a claim in the middle of being written")
    assert repository.seal_all({done.resource}, timeout=0.3) == {done.resource}
    holding.close()
    assert holding.claim.resource == done.resource
    assert repository.seal_all({done.resource}, timeout=10) == set()
    assert repository.read(holding.claim) == b"a claim in the middle of being written"
    repository.close()
