"""Replicas retire a resource together: whatever retires a resource on one replica
retires it on every other before a writer can choose it again, so the leader never
hands a claim a resource a follower cannot append to (`ReplicaDiverged`).

The long drill logged `ReplicaDiverged` twice: the HDFS replica had failed (and so
retired) a resource whose hsync failed in a commit, while the local replica, whose
fdatasync went fine, kept it appendable and chose it for the next claim. Each way a
replica could retire a resource on its own is reproduced here, with the leader on
local disk and a follower that keeps its files open and closes them in the
background, as a clustered node's HDFS replica does; both write through a storage
that fails on cue (`tests.storage_faults`), and the seams of the replicating
repository (`ContentHooks`) stand for another thread's seal, sync or failure in the
middle of a write. After each, the replicas must hold the same resources appendable
at the same lengths, and no write may have met a diverged follower."""

from __future__ import annotations

import pytest

from replication.replicating_content import ReplicatingContentRepository
from repositories.content import (
    ArchivePolicy,
    ContentHooks,
    ContentRepository,
    ContentRepositoryConfig,
    ContentRepositoryError,
    ContentWriteFailed,
    ReplicaDiverged,
)
from repositories.content.resource_io import StorageResourceIO
from tests.storage_faults import Fault, FaultyStorage, UnbufferedLocalStorage

NO_USAGE_RULE = ArchivePolicy(max_usage=None)
# A clustered node's replicas: one sync per commit; the HDFS one keeps files open.
LOCAL = ContentRepositoryConfig(sync_on_close=False, archive=NO_USAGE_RULE)
KEPT_OPEN = ContentRepositoryConfig(sync_on_close=False, close_in_background=True, archive=NO_USAGE_RULE)
# HDFS without keep_open: every sync closes the resources nobody writes.
CLOSED_ON_SYNC = ContentRepositoryConfig(sync_on_close=False, close_resources_on_sync=True, archive=NO_USAGE_RULE)


class Replicas:
    """A leader and a follower over storages that fail on cue, and the writes that
    met a diverged follower."""

    def __init__(self, tmp_path, follower=KEPT_OPEN, *, hooks=None, **options):
        self.local_storage = FaultyStorage(UnbufferedLocalStorage())
        self.hdfs_storage = FaultyStorage(UnbufferedLocalStorage())
        self.local = ContentRepository(
            {"c": str(tmp_path / "local")},
            StorageResourceIO(self.local_storage, read_through_arrow=False),
            LOCAL,
            name="local",
        )
        self.hdfs = ContentRepository(
            {"c": str(tmp_path / "hdfs")},
            StorageResourceIO(self.hdfs_storage, read_through_arrow=False),
            follower,
            name="hdfs",
        )
        self.repository = ReplicatingContentRepository([self.local, self.hdfs], hooks=hooks, **options)
        self.diverged: list[ReplicaDiverged] = []
        write_at = self.hdfs.write_at

        def recording(resource, offset):
            try:
                return write_at(resource, offset)
            except ReplicaDiverged as error:
                self.diverged.append(error)
                raise

        self.hdfs.write_at = recording

    def assert_in_lockstep(self) -> None:
        assert self.local.appendable_resources() == self.hdfs.appendable_resources()
        assert self.diverged == []

    def close(self) -> None:
        self.local_storage.disarm()
        self.hdfs_storage.disarm()
        try:
            self.repository.sync()
        except ContentWriteFailed:
            pass  # what an injected failure lost, told to no session yet
        self.repository.close()


def test_an_hsync_that_fails_in_a_commit_retires_the_resource_on_the_local_replica_too(tmp_path):
    """The drill's case: the local replica would append the next claim where HDFS
    has no file any more."""
    replicas = Replicas(tmp_path)
    repository = replicas.repository
    first = repository.write_bytes(b"first")
    replicas.hdfs_storage.arm(Fault("sync", "before"))
    with pytest.raises(ContentRepositoryError):
        repository.sync()
    replicas.assert_in_lockstep()
    assert first.resource not in replicas.local.appendable_resources()
    second = repository.write_bytes(b"second")
    repository.sync()
    assert second.resource != first.resource
    replicas.assert_in_lockstep()
    repository.sync()  # the local file of the retired resource is closed by a sync
    assert all(replica.wait_closed(first.resource, 10) for replica in (replicas.local, replicas.hdfs))
    assert first.resource not in replicas.local.open_resources() | replicas.hdfs.open_resources()
    assert replicas.local.read(first) == b"first"
    with pytest.raises(ContentWriteFailed, match="lost"):
        repository.check_durable([first])
    replicas.close()


def test_an_fdatasync_that_fails_in_a_commit_retires_the_resource_on_hdfs_too(tmp_path):
    """Else the HDFS file stays open (unreadable, uncollectable) for the node's life."""
    replicas = Replicas(tmp_path)
    first = replicas.repository.write_bytes(b"first")
    replicas.local_storage.arm(Fault("sync", "before"))
    with pytest.raises(ContentRepositoryError):
        replicas.repository.sync()
    replicas.assert_in_lockstep()
    replicas.repository.sync()
    assert replicas.hdfs.wait_closed(first.resource, 10)  # closed in the background, as HDFS files are
    assert first.resource not in replicas.hdfs.open_resources()
    replicas.close()


def test_a_flush_that_fails_on_one_replica_retires_the_resource_on_every_replica(tmp_path):
    replicas = Replicas(tmp_path, follower=LOCAL)
    first = replicas.repository.write_bytes(b"first")  # waits in the resources' buffers
    replicas.hdfs_storage.arm(Fault("write", "before"))
    with pytest.raises(ContentRepositoryError):
        replicas.hdfs.read(first)  # read your writes: the buffer is flushed first, and that fails
    replicas.assert_in_lockstep()
    replicas.repository.write_bytes(b"second")
    replicas.assert_in_lockstep()
    replicas.close()


@pytest.mark.parametrize("side", ["local", "hdfs"])
def test_a_sync_that_fails_while_a_writer_holds_the_resource_fails_its_claim_and_retires_it_everywhere(tmp_path, side):
    """In lockstep already (the claim fails on the failed replica, and the replicated
    writer aborts every replica's writer): kept so that it stays so."""
    replicas = Replicas(tmp_path)
    repository = replicas.repository
    repository.write_bytes(b"first")
    writer = repository.write()
    writer.write(b"in the middle of a claim")
    getattr(replicas, f"{side}_storage").arm(Fault("sync", "before"))
    with pytest.raises(ContentRepositoryError):
        repository.sync()  # another session's commit
    with pytest.raises(ContentRepositoryError):
        with writer:
            writer.write(b"x" * (1 << 20))  # the failed replica refuses the rest of the claim
    replicas.assert_in_lockstep()
    assert replicas.local.appendable_resources() == {}
    repository.write_bytes(b"after")
    replicas.assert_in_lockstep()
    replicas.close()


def test_a_sync_that_fails_after_the_followers_let_go_of_a_claim_retires_the_resource_with_the_leader(tmp_path):
    replicas = None

    def failing_sync(resource):  # another session's commit, whose hsync fails
        replicas.hdfs_storage.arm(Fault("sync", "before"))
        with pytest.raises(ContentRepositoryError):
            replicas.repository.sync()

    replicas = Replicas(tmp_path, hooks=ContentHooks(followers_released_resource=failing_sync))
    first = replicas.repository.write_bytes(b"first")
    replicas.assert_in_lockstep()
    assert first.resource not in replicas.local.appendable_resources()
    replicas.repository.write_bytes(b"second")
    replicas.assert_in_lockstep()
    replicas.close()


def test_a_seal_between_the_leaders_choice_and_its_followers_leaves_that_write_whole(tmp_path):
    """A Spark batch seals the resource a writer has just taken on the leader and not
    yet on the follower: the follower must not retire it ahead of the leader."""
    replicas = None
    sealed = []

    def seal(resource):
        if not sealed:
            sealed.append(replicas.repository.seal(resource, timeout=0.05))

    replicas = Replicas(tmp_path, hooks=ContentHooks(leader_chose_resource=seal))
    first = replicas.repository.write_bytes(b"first")
    second = replicas.repository.write_bytes(b"second")  # chosen on the leader, then sealed
    assert second.resource == first.resource and sealed == [False]  # the writer held it: not sealed yet
    third = replicas.repository.write_bytes(b"third")
    assert third.resource != first.resource  # retired on both as the writer let go of it
    replicas.assert_in_lockstep()
    assert replicas.repository.seal(first.resource, timeout=5)
    assert [replicas.hdfs.read(claim) for claim in (first, second)] == [b"first", b"second"]
    replicas.close()


def test_a_seal_after_the_followers_let_go_of_a_claim_retires_the_resource_on_every_replica(tmp_path):
    replicas = None
    armed = []

    def seal(resource):
        if armed:
            armed.clear()
            replicas.repository.seal(resource, timeout=0.05)

    replicas = Replicas(tmp_path, hooks=ContentHooks(followers_released_resource=seal))
    first = replicas.repository.write_bytes(b"first")
    armed.append(True)
    replicas.repository.write_bytes(b"second")
    replicas.assert_in_lockstep()
    assert first.resource not in replicas.local.appendable_resources()
    replicas.repository.write_bytes(b"third")
    replicas.assert_in_lockstep()
    replicas.close()


def test_a_seal_retires_nothing_but_its_resources_on_a_follower_that_closes_on_sync(tmp_path):
    replicas = Replicas(tmp_path, follower=CLOSED_ON_SYNC)
    writers = [replicas.repository.write() for _ in range(2)]  # two at once: two resources
    for writer in writers:
        writer.write(b"claim")
    sealed, kept = (writer.close() for writer in writers)
    assert sealed.resource != kept.resource
    assert replicas.repository.seal(sealed.resource, timeout=5)
    replicas.assert_in_lockstep()
    assert kept.resource in replicas.hdfs.appendable_resources()
    assert replicas.repository.write_bytes(b"next").resource == kept.resource
    replicas.assert_in_lockstep()
    replicas.close()


def test_a_retiring_sync_retires_what_the_leader_finds_idle_on_every_replica(tmp_path):
    """With HDFS closing files on every sync, a commit's sync retires the resources
    nobody writes: the ones the leader finds so, not the ones each replica does."""
    replicas = None
    commits = [True]

    def commit(resource):  # another session's commit, as a writer took `resource` on the leader
        if commits:
            commits.clear()
            replicas.repository.sync()

    replicas = Replicas(tmp_path, follower=CLOSED_ON_SYNC, hooks=ContentHooks(leader_chose_resource=commit))
    first = replicas.repository.write_bytes(b"first")
    second = replicas.repository.write_bytes(b"second")
    assert second.resource == first.resource
    replicas.assert_in_lockstep()
    replicas.repository.sync()
    assert replicas.local.appendable_resources() == replicas.hdfs.appendable_resources() == {}
    assert replicas.hdfs.read(second) == b"second"
    replicas.close()


@pytest.mark.parametrize("side", ["local", "hdfs"])
@pytest.mark.parametrize("operation", ["write", "sync"])
def test_a_claim_that_fails_on_one_replica_is_abandoned_on_every_replica(tmp_path, side, operation):
    """These were in lockstep already (the replicated writer aborts every replica's
    writer): kept so that they stay so."""
    replicas = Replicas(tmp_path)
    replicas.repository.write_bytes(b"first")
    getattr(replicas, f"{side}_storage").arm(Fault(operation, "before", times=None))
    with pytest.raises(ContentRepositoryError):
        with replicas.repository.write() as writer:
            writer.write(b"x" * (2 << 20))
            writer.close(sync=True)
    getattr(replicas, f"{side}_storage").disarm()
    replicas.assert_in_lockstep()
    replicas.repository.write_bytes(b"after")
    replicas.assert_in_lockstep()
    replicas.close()


def test_a_resource_retired_while_a_writer_holds_it_is_retired_when_the_writer_lets_go(tmp_path):
    replicas = Replicas(tmp_path)
    first = replicas.local.write_bytes(b"first")
    writer = replicas.local.write()
    assert writer.resource == first.resource
    assert replicas.local.retire(first.resource) is False  # held: retired as it is let go
    writer.write(b"second")
    writer.close()
    assert writer.retired_resource
    assert first.resource not in replicas.local.appendable_resources()
    assert replicas.local.write_bytes(b"third").resource != first.resource
    replicas.local.close()
    replicas.hdfs.close()
