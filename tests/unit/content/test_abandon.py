"""`ContentRepository.abandon` (and the replicating repository's): the stop of an owner
that died. It returns at once, even while a sync holds a resource's lock in a storage
that does not answer; files whose storage can abandon them (HDFS) are let go, unsynced
and never closed; local files are closed on a thread of their own; every later write is
refused, and the claims not yet synced are lost, so no session can commit them."""

from __future__ import annotations

import threading
import time

import pytest

from cluster.services.process import wait_until
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import ContentRepository, ContentRepositoryConfig
from repositories.content.archive import ArchivePolicy
from repositories.content.errors import ContentRepositoryError, ContentWriteFailed, RepositoryClosed
from repositories.content.resource_io import LocalResourceIO, StorageResourceIO
from tests.stalled_storage import StalledStorage

AT_ONCE = 0.5

# As a clustered node's HDFS replica: files kept open across syncs, closed in the background.
HDFS_LIKE = ContentRepositoryConfig(
    sync_on_close=False,
    close_resources_on_sync=False,
    close_in_background=True,
    archive=ArchivePolicy(enabled=False, max_usage=None),
)
LOCAL = ContentRepositoryConfig(sync_on_close=False, archive=ArchivePolicy(enabled=False, max_usage=None))


def hdfs_like(tmp_path, storage):
    return ContentRepository(
        {"c": str(tmp_path / "hdfs")}, StorageResourceIO(storage, read_through_arrow=False), HDFS_LIKE, name="hdfs-like"
    )


def local(tmp_path):
    return ContentRepository({"c": str(tmp_path / "local")}, LocalResourceIO(), LOCAL, name="local")


def test_the_abandon_returns_at_once_while_a_sync_holds_the_resource_in_a_stalled_storage(tmp_path):
    storage = StalledStorage()
    content = hdfs_like(tmp_path, storage)
    claim = content.write_bytes(b"unsynced claim")
    stall = storage.stall("sync", "")
    syncing: dict = {}

    def sync():
        try:
            content.sync()
        except ContentRepositoryError as error:
            syncing["error"] = error

    thread = threading.Thread(target=sync, daemon=True)
    thread.start()
    assert stall.entered.wait(5)  # the sync holds the resource's io_lock, in the storage
    began = time.monotonic()
    content.abandon("incarnation n1-7 is dead")
    assert time.monotonic() - began < AT_ONCE
    abandoned = sorted(storage.abandoned)
    assert len(abandoned) == 2 and abandoned[0].endswith(claim.resource.id) and abandoned[1] == abandoned[0] + ".crc"
    with pytest.raises(RepositoryClosed):
        content.write_bytes(b"after")
    began = time.monotonic()
    content.close()  # does nothing now
    assert time.monotonic() - began < AT_ONCE
    stall.release()
    thread.join(5)
    # The sync in flight failed (its companion file's sync was refused, or the claim it
    # covered counts as lost), and no session can commit the claim.
    assert isinstance(syncing.get("error"), ContentRepositoryError), syncing
    with pytest.raises(ContentWriteFailed, match="abandoned: incarnation n1-7 is dead"):
        content.check_durable([claim])
    assert storage.closed == []


def test_a_writer_in_the_middle_of_a_claim_fails_at_its_next_append(tmp_path):
    content = hdfs_like(tmp_path, StalledStorage())
    writer = content.write()
    writer.write(b"first part")
    content.abandon("dead")
    with pytest.raises(ContentWriteFailed):
        writer.write(b"x" * HDFS_LIKE.write_buffer_size)  # the buffer fills: an append


def test_local_files_are_closed_on_a_thread_of_their_own_and_writes_refused(tmp_path):
    content = local(tmp_path)
    content.write_bytes(b"claim")
    resources = list(content._table.open.values())
    content.abandon("dead")
    wait_until(
        lambda: all(resource.closed.is_set() for resource in resources), 5, "the local files to close", interval=0.01
    )
    assert resources and all(resource.closed.is_set() and resource.file._closed for resource in resources)
    with pytest.raises(RepositoryClosed):
        content.write_bytes(b"after")


def test_the_replicating_repository_abandons_every_replica_at_once(tmp_path):
    storage = StalledStorage()
    replicas = ReplicatingContentRepository([local(tmp_path), hdfs_like(tmp_path, storage)])
    with replicas.write() as writer:
        writer.write(b"claim")
    stall = storage.stall("sync", "")
    thread = threading.Thread(target=lambda: pytest.raises(ContentRepositoryError, replicas.sync), daemon=True)
    thread.start()
    assert stall.entered.wait(5)
    began = time.monotonic()
    replicas.abandon("dead")
    assert time.monotonic() - began < AT_ONCE
    with pytest.raises(RepositoryClosed):
        replicas.write()
    assert len(storage.abandoned) == 2 and storage.closed == []
    stall.release()
    thread.join(5)
