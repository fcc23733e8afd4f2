"""A claim exported into a local file (`ContentStore.export_to`; the session's
`export_to`, after NiFi's `ProcessSession.exportTo`, which PutFile writes with) holds
exactly the claim's bytes, copied by the kernel from a local resource file, and is
checked as a read is: a damaged block is never copied (the good blocks before it
are), a claim cut short or without its checksums is refused with the error a read
gives, and a claim that is not a local file (HDFS, a replica that fails over) is
streamed instead. All on real repositories in a temporary directory."""

from __future__ import annotations

import hashlib
import os

import pytest

from flow.commit import HeldCommitter
from flow.errors import UnreadableContent
from flow.loading import parse_flow
from flow.processor import ProcessContext
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import QueueShard
from replication.hdfs_content import open_hdfs_content_repository
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import (
    ArchivePolicy,
    ContentCorrupted,
    ContentNotFound,
    ContentRepositoryConfig,
    ContentTruncated,
    open_filesystem_content_repository,
)
from repositories.content.format import CHECKSUM_SUFFIX, resource_path
from repositories.storage import LocalStorage

from .damage import flip_bit

BLOCK = 4096
CONFIG = ContentRepositoryConfig(checksum_block_size=BLOCK, archive=ArchivePolicy(max_usage=None))


def payload(seed: int, size: int) -> bytes:
    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // len(block) + 1))[:size]


@pytest.fixture
def repository(tmp_path):
    repository = open_filesystem_content_repository({"c": str(tmp_path / "content")}, CONFIG)
    yield repository
    repository.close()


def file_of(tmp_path, claim) -> str:
    return resource_path(str(tmp_path / "content"), claim.resource)


def export(store, claim, path, flags: int = 0) -> bytes:
    """Export `claim` into a new file at `path`; its bytes. The count returned must be
    what the file holds."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flags, 0o644)
    try:
        copied = store.export_to(claim, fd)
    finally:
        os.close(fd)
    with open(path, "rb") as handle:
        data = handle.read()
    assert copied == len(data)
    return data


def written(path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


@pytest.fixture
def kernel_copies(monkeypatch):
    """The bytes `os.copy_file_range` copied, call by call."""
    copies: list[int] = []
    real = os.copy_file_range

    def counted(*args, **kwargs):
        copied = real(*args, **kwargs)
        copies.append(copied)
        return copied

    monkeypatch.setattr(os, "copy_file_range", counted)
    return copies


def test_each_claim_is_copied_whole_and_alone_by_the_kernel(repository, tmp_path, kernel_copies):
    # Side by side in shared resources, on block edges and across them, and one large.
    sizes = (1, BLOCK - 1, BLOCK, BLOCK + 1, 50_000, 700_000)
    contents = [payload(index, size) for index, size in enumerate(sizes)]
    claims = repository.write_many(contents)
    repository.sync()
    assert claims[0].resource == claims[1].resource  # neighbours in one file: only its own bytes leave
    for index, (claim, data) in enumerate(zip(claims, contents, strict=True)):
        assert export(repository, claim, tmp_path / f"out-{index}") == data
    assert sum(kernel_copies) == sum(sizes)  # every byte, none through Python


def test_an_unsynced_claim_and_an_empty_one_are_exported_too(repository, tmp_path):
    data = payload(1, 3 * BLOCK + 17)
    claim = repository.write_many([data])[0]  # still in the resource's buffer
    assert export(repository, claim, tmp_path / "out") == data
    empty = repository.write_bytes(b"")
    assert export(repository, empty, tmp_path / "empty") == b""


def test_a_damaged_block_is_never_copied_the_good_blocks_before_it_are(repository, tmp_path):
    data = payload(2, 10 * BLOCK)
    claim = repository.write_bytes(data)
    flip_bit(file_of(tmp_path, claim), claim.offset + 5 * BLOCK + 7)
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with pytest.raises(ContentCorrupted, match=rf"bytes {claim.offset + 5 * BLOCK}\.\.") as raised:
            repository.export_to(claim, fd)
    finally:
        os.close(fd)
    assert raised.value.claim == claim
    assert written(tmp_path / "out") == data[: 5 * BLOCK]


def test_a_claim_cut_short_before_or_while_it_is_exported_is_truncated(repository, tmp_path):
    data = payload(3, 8 * BLOCK)
    claim = repository.write_bytes(data)
    path = file_of(tmp_path, claim)
    reader = repository.open_read(claim)  # sizes checked here, before the cut
    os.truncate(path, claim.offset + 3 * BLOCK + 100)
    fd = os.open(tmp_path / "while", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with reader, pytest.raises(ContentTruncated):
            reader.export(fd)
    finally:
        os.close(fd)
    assert written(tmp_path / "while") == data[: 3 * BLOCK]
    with pytest.raises(ContentTruncated):
        export(repository, claim, tmp_path / "before")
    assert written(tmp_path / "before") == b""


def test_a_claim_whose_checksums_or_file_are_gone_is_refused_before_a_byte_is_copied(repository, tmp_path):
    # Each over the appendable size (50 KB): a resource file each.
    checked, gone = repository.write_bytes(payload(4, 60_000)), repository.write_bytes(payload(5, 60_000))
    assert checked.resource != gone.resource
    repository.close()
    os.remove(file_of(tmp_path, checked) + CHECKSUM_SUFFIX)
    os.remove(file_of(tmp_path, gone))
    reopened = open_filesystem_content_repository({"c": str(tmp_path / "content")}, CONFIG)
    try:
        with pytest.raises(ContentCorrupted, match="checksum file is missing"):
            export(reopened, checked, tmp_path / "checked")
        assert written(tmp_path / "checked") == b""
        with pytest.raises(ContentNotFound):
            export(reopened, gone, tmp_path / "gone")
    finally:
        reopened.close()


def test_where_the_kernel_will_not_copy_the_checked_bytes_are_written_from_the_buffer(repository, tmp_path):
    # The kernel copies into no file opened for appending (EBADF): the fallback.
    data = payload(6, 6 * BLOCK + 5)
    claim = repository.write_bytes(data)
    assert export(repository, claim, tmp_path / "out", os.O_APPEND) == data
    flip_bit(file_of(tmp_path, claim), claim.offset + 2 * BLOCK)
    with pytest.raises(ContentCorrupted):
        export(repository, claim, tmp_path / "damaged", os.O_APPEND)
    assert written(tmp_path / "damaged") == data[: 2 * BLOCK]


def test_a_claim_on_hdfs_storage_is_streamed_and_checked(tmp_path, kernel_copies):
    # The HDFS repository over a local Storage: its handles are Arrow's, not local files.
    store = open_hdfs_content_repository(LocalStorage(), str(tmp_path / "hdfs"), "node", config=CONFIG)
    try:
        data = payload(7, 5 * BLOCK + 3)
        claim = store.write_bytes(data)
        store.sync()
        assert export(store, claim, tmp_path / "out") == data
        assert kernel_copies == []
        flip_bit(resource_path(store.containers[claim.resource.container], claim.resource), claim.offset + BLOCK)
        with pytest.raises(ContentCorrupted):
            export(store, claim, tmp_path / "damaged")
        assert written(tmp_path / "damaged") == data[:BLOCK]
    finally:
        store.close()


def test_a_replicated_claim_damaged_on_one_replica_is_exported_from_the_other(tmp_path):
    directories = {name: str(tmp_path / name) for name in ("local", "mirror")}
    replicas = ReplicatingContentRepository(
        [open_filesystem_content_repository({"c": directories[name]}, CONFIG, name=name) for name in directories]
    )
    try:
        data = payload(8, 4 * BLOCK)
        claim = replicas.write_bytes(data)
        replicas.sync()
        flip_bit(resource_path(directories["local"], claim.resource), claim.offset + 3 * BLOCK)
        assert export(replicas, claim, tmp_path / "out") == data
    finally:
        replicas.close()


class Held:
    """A session over a real repository, as the engine builds one, for FlowFiles made in it."""

    def __init__(self, repository):
        queue = FlowFileQueue("q", clock_ms=lambda: 0)
        shard = QueueShard("s", [queue])
        self.session = ProcessSession(
            component_id="p",
            component_type="Test",
            committer=HeldCommitter(shard, repository),
            content=repository,
            shard=shard,
            outgoing={"success": [queue]},
            clock_ms=lambda: 0,
        )

    def flowfile(self, data: bytes):
        return self.session.write_bytes(self.session.create(), data)


def test_the_session_exports_to_a_path_new_truncated_or_appended_and_to_a_descriptor(repository, tmp_path):
    held = Held(repository)
    first, second = held.flowfile(payload(9, 3 * BLOCK)), held.flowfile(b"tail")
    path = tmp_path / "out"
    path.write_bytes(b"old content, longer than the tail")
    assert held.session.export_to(first, path) == 3 * BLOCK
    assert held.session.export_to(second, str(path), append=True) == 4
    assert written(path) == payload(9, 3 * BLOCK) + b"tail"
    assert held.session.export_to(second, path) == 4
    assert written(path) == b"tail"
    fd = os.open(tmp_path / "fd", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, b">")
        held.session.export_to(second, fd)
        held.session.export_to(held.session.create(), fd)  # no content: nothing written
        os.write(fd, b"<")  # the descriptor is left open, at the end of what was written
    finally:
        os.close(fd)
    assert written(tmp_path / "fd") == b">tail<"
    held.session.rollback()


def test_the_session_names_the_flowfile_whose_claim_cannot_be_exported(repository, tmp_path):
    held = Held(repository)
    flowfile = held.flowfile(payload(10, 4 * BLOCK))
    repository.sync()
    flip_bit(file_of(tmp_path, flowfile.content_claim), flowfile.content_claim.offset)
    with pytest.raises(UnreadableContent) as raised:
        held.session.export_to(flowfile, tmp_path / "out")
    assert raised.value.flowfile.id == flowfile.id
    assert "damaged" in raised.value.reason
    assert written(tmp_path / "out") == b""
    held.session.rollback()


def test_put_file_copies_each_claim_and_sets_a_damaged_one_aside_leaving_no_temporary_file(
    repository, tmp_path, kernel_copies
):
    out = tmp_path / "out"
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "put",
                    "type": "PutFile",
                    "properties": {"directory": str(out), "sync": True},
                    "auto_terminate": ["success", "failure"],
                }
            ]
        }
    ).processors["put"]
    incoming, success, failure = (FlowFileQueue(name, clock_ms=lambda: 0) for name in ("in", "success", "failure"))
    shard = QueueShard("s", [incoming, success, failure])
    committer = HeldCommitter(shard, repository)

    def session(**routes) -> ProcessSession:
        return ProcessSession(
            component_id="put",
            component_type="PutFile",
            committer=committer,
            content=repository,
            shard=shard,
            clock_ms=lambda: 0,
            **routes,
        )

    seed = session(outgoing={"success": [incoming]})
    size = 300_000  # over the appendable size: a resource file each
    made = [seed.write_bytes(seed.create(), payload(20 + index, size)) for index in range(3)]
    for flowfile in made:
        seed.transfer(flowfile, "success")
    seed.commit()
    damaged = made[1].content_claim
    flip_bit(file_of(tmp_path, damaged), damaged.offset + 2 * BLOCK + 1)

    put = session(incoming=[incoming], outgoing={"success": [success], "failure": [failure]})
    definition.create().on_trigger(ProcessContext("put", definition.properties, definition.dynamic), put)
    put.commit()

    assert sorted(os.listdir(out)) == sorted([made[0].id, made[2].id]), "no .partial file left"
    for index in (0, 2):
        assert written(out / made[index].id) == payload(20 + index, size)
    assert sum(kernel_copies) == 2 * size + 2 * BLOCK  # the damaged claim's good blocks, then it stopped
    failed, _ = failure.poll(10, 10**12)
    assert [flowfile.id for flowfile in failed] == [made[1].id]
    assert failed[0].attributes["content.error"].startswith("ContentCorrupted: ")
    assert success.count == 2
