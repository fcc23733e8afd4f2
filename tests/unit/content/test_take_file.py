"""`take_file`: a file written outside the repository (Spark's output) taken in whole as
a resource, its checksum file computed by its writer; checked, counted, collected and
read as any other claim, on one replica of a replicating repository only."""

from __future__ import annotations

import logging
import os

import pytest

from flow.spark.by_reference import ContentLocation, _write_checksums
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import (
    ArchivePolicy,
    ContentCorrupted,
    ContentRepositoryConfig,
    ContentRepositoryError,
    open_filesystem_content_repository,
)
from repositories.content.checksum_format import record_offset
from repositories.storage import LocalStorage

BLOCK = 4096


def repository(root, name="c", archive=True):
    return open_filesystem_content_repository(
        {name: str(root)},
        ContentRepositoryConfig(
            sync_on_close=False, checksum_block_size=BLOCK, archive=ArchivePolicy(max_usage=None, enabled=archive)
        ),
    )


def written(tmp_path, data: bytes, name: str = "part-00000.json") -> tuple[str, str]:
    """A file as Spark leaves it, with the checksum file an executor computes for it."""
    path = str(tmp_path / "staging" / name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as out:
        out.write(data)
    return _write_checksums(ContentLocation(LocalStorage().address, str(tmp_path), BLOCK), path)


def test_a_taken_file_is_one_claim_read_checked_and_counted(tmp_path):
    data = os.urandom(3 * BLOCK + 123)
    path, checksums = written(tmp_path, data)
    store = repository(tmp_path / "content")
    try:
        claim = store.take_file(path, checksums)
        assert (claim.offset, claim.length) == (0, len(data))
        assert not os.path.exists(path) and not os.path.exists(checksums)  # moved, not copied
        assert store.read(claim) == data
        assert store.open_read(claim, 2 * BLOCK, 50).read() == data[2 * BLOCK : 2 * BLOCK + 50]
        assert store.claimant_count(claim) == 1
        assert claim.resource not in store.open_resources()  # nothing is ever appended to it
        store.increment(claim)
        assert store.decrement(claim) == 1
        assert store.collect().archived == []  # still referenced
        assert store.decrement(claim) == 0
        assert store.collect().archived == [claim.resource]
    finally:
        store.close()


def test_a_damaged_byte_of_a_taken_file_is_caught_by_its_checksums(tmp_path):
    data = b"x" * (2 * BLOCK)
    path, checksums = written(tmp_path, data)
    store = repository(tmp_path / "content")
    try:
        claim = store.take_file(path, checksums)
        resource_file = tmp_path / "content" / str(claim.resource.section) / claim.resource.id
        with open(resource_file, "r+b") as handle:
            handle.seek(BLOCK + 7)
            handle.write(b"y")
        with pytest.raises(ContentCorrupted):
            store.read(claim)
        assert store.open_read(claim, 0, BLOCK).read() == data[:BLOCK]  # the intact block reads
    finally:
        store.close()


def test_an_empty_file_is_taken_as_an_empty_claim(tmp_path):
    path, checksums = written(tmp_path, b"")
    store = repository(tmp_path / "content")
    try:
        claim = store.take_file(path, checksums)
        assert claim.length == 0 and store.read(claim) == b""
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["header", "record", "short", "long", "missing"])
def test_a_checksum_file_that_does_not_cover_the_file_is_refused_and_nothing_moves(tmp_path, damage):
    data = os.urandom(2 * BLOCK + 10)
    path, checksums = written(tmp_path, data)
    with open(checksums, "r+b") as handle:
        content = bytearray(handle.read())
        if damage == "header":
            content[3] ^= 0xFF
        elif damage == "record":
            content[record_offset(1) + 2] ^= 0xFF
        elif damage == "short":
            del content[record_offset(2) :]
        elif damage == "long":
            content += content[record_offset(2) :]
        handle.seek(0)
        handle.truncate()
        handle.write(content)
    if damage == "missing":
        os.remove(checksums)
    store = repository(tmp_path / "content")
    try:
        with pytest.raises(ContentRepositoryError) as refused:
            store.take_file(path, checksums)
        assert path in str(refused.value) or checksums in str(refused.value)
        assert os.path.exists(path)
        assert damage == "missing" or os.path.exists(checksums)
        assert store.list_resources() == {}
    finally:
        store.close()


def test_one_replica_takes_the_file_reads_fall_over_to_it_and_every_replica_counts_it(tmp_path, caplog):
    local = repository(tmp_path / "local", "x")
    hdfs = repository(tmp_path / "hdfs", "x")
    replicated = ReplicatingContentRepository([local, hdfs])
    data = os.urandom(BLOCK + 1)
    path, checksums = written(tmp_path, data)
    try:
        claim = replicated.take_file(path, checksums, replica=1)
        assert hdfs.exists(claim) and not local.exists(claim)
        with caplog.at_level(logging.WARNING):
            assert replicated.read(claim) == data
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # a missing copy is no damage
        assert local.claimant_count(claim) == hdfs.claimant_count(claim) == 1
        # The session that held it rolls back: collected everywhere, the replica without it too.
        assert replicated.decrement(claim) == 0
        replicated.collect()
        assert claim.resource in hdfs.archived() and claim.resource not in local.archived()
        section = tmp_path / "hdfs" / str(claim.resource.section)
        assert not (section / claim.resource.id).exists() and (section / "archive" / claim.resource.id).exists()
    finally:
        replicated.close()
