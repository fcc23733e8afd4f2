"""Checksummed content against a real HDFS: a damaged copy, on local disk or on HDFS,
is never read as good and never repaired from.

The regression: `custody content fsck --repair` used to take the longest copy as the
reference, the local one on a tie, so a bit flipped on local disk was copied over the
good HDFS replica. Now the reference is the copy that verifies against its checksums.
"""

from __future__ import annotations

import logging

import pytest

from cluster.cli import main as custody
from replication.hdfs_content import open_hdfs_content_reader
from repositories.content import ContentCorrupted, open_filesystem_content_repository
from repositories.content.format import CHECKSUM_SUFFIX
from tests.unit.content.damage import flip_bit

from .test_content_hdfs import payload, replicated

pytestmark = [pytest.mark.hdfs]


def write_claims(tmp_path, hdfs_store):
    repository, local, hdfs = replicated(tmp_path, hdfs_store)
    claims = [repository.write_bytes(payload(index, size)) for index, size in enumerate((3000, 200_000, 900))]
    repository.close()  # every resource closed, as fsck wants them
    return claims, str(tmp_path / "local-node-1")


def local_path(directory: str, claim) -> str:
    return f"{directory}/{claim.resource.section}/{claim.resource.id}"


def hdfs_path(hdfs_store, claim) -> str:
    return f"{hdfs_store.root}/content/node-1/c/{claim.resource.section}/{claim.resource.id}"


def flip_local(path: str, offset: int) -> None:
    flip_bit(path, offset, 0x20)


def flip_hdfs(storage, path: str, offset: int) -> None:
    data = bytearray(storage.read(path))
    data[offset] ^= 0x20
    with storage.create(path, overwrite=True) as handle:
        handle.write(bytes(data))
        handle.sync()


def test_a_bit_flipped_local_claim_is_read_from_hdfs_in_one_log_line(tmp_path, hdfs_store, caplog):
    claims, directory = write_claims(tmp_path, hdfs_store)
    victim = claims[1]  # 200 KB: the damage is in its fourth block, after three good ones
    flip_local(local_path(directory, victim), victim.offset + 3 * 65536 + 5)
    repository, _local, _hdfs = replicated(tmp_path, hdfs_store)
    with caplog.at_level(logging.WARNING, logger="replication.replicating_content"):
        assert repository.read(victim) == payload(1, 200_000)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1 and "damaged on local" in lines[0] and "read it from hdfs:node-1" in lines[0]
    assert victim.resource.relative_path in lines[0]
    repository.close()


def test_a_claim_damaged_on_local_disk_and_on_hdfs_is_refused_naming_both(tmp_path, hdfs_store):
    claims, directory = write_claims(tmp_path, hdfs_store)
    victim = claims[0]
    flip_local(local_path(directory, victim), victim.offset + 100)
    flip_hdfs(hdfs_store.storage, hdfs_path(hdfs_store, victim), victim.offset + 2000)
    repository, _local, _hdfs = replicated(tmp_path, hdfs_store)
    with pytest.raises(ContentCorrupted) as refused:
        repository.read(victim)
    message = str(refused.value)
    assert f"{victim.resource.relative_path}@{victim.offset}+{victim.length}" in message
    block = f"bytes {victim.offset}..{victim.offset + 3000}: the bytes do not match their checksum"
    assert f"local ({block})" in message and f"hdfs:node-1 ({block})" in message
    assert "Restore the resource file from a backup" in message
    assert repository.read(claims[2]) == payload(2, 900)  # the rest of the resource is not harmed
    repository.close()


def test_fsck_repair_mends_a_bit_flipped_local_copy_from_hdfs_never_the_reverse(
    tmp_path, hdfs_store, hdfs_cluster, capsys
):
    claims, directory = write_claims(tmp_path, hdfs_store)
    victim = claims[0]
    storage = hdfs_store.storage
    good = {
        path: storage.read(path)
        for path in (hdfs_path(hdfs_store, victim), hdfs_path(hdfs_store, victim) + CHECKSUM_SUFFIX)
    }
    flip_local(local_path(directory, victim), victim.offset + 10)
    arguments = [
        "content",
        "fsck",
        "--local",
        f"c={directory}",
        "--hdfs",
        hdfs_cluster.url,
        "--hdfs-base",
        hdfs_store.root,
        "--node",
        "node-1",
    ]
    assert custody(arguments) == 1
    out = capsys.readouterr().out
    assert f"[BAD] damaged  local: {victim.resource.relative_path}" in out
    assert f"bytes {victim.offset}..{victim.offset + 3000}: the bytes do not match their checksum" in out

    assert custody([*arguments, "--repair"]) == 0
    assert f"[repaired] damaged  local: {victim.resource.relative_path}" in capsys.readouterr().out
    for path, content in good.items():
        assert storage.read(path) == content  # HDFS kept its good copy
    with open(local_path(directory, victim), "rb") as handle:
        assert handle.read() == good[hdfs_path(hdfs_store, victim)]
    local = open_filesystem_content_repository({"c": directory}, name="local")
    assert [local.read(claim) for claim in claims] == [payload(0, 3000), payload(1, 200_000), payload(2, 900)]
    local.close()
    assert custody(arguments) == 0


def test_fsck_repair_mends_a_damaged_hdfs_copy_from_local_disk(tmp_path, hdfs_store):
    claims, directory = write_claims(tmp_path, hdfs_store)
    victim = claims[1]
    flip_hdfs(hdfs_store.storage, hdfs_path(hdfs_store, victim), victim.offset + 150_000)
    repository, _local, _hdfs = replicated(tmp_path, hdfs_store)
    report = repository.fsck(repair=True)
    assert [(p.replica, p.kind, p.repaired) for p in report.problems] == [("hdfs:node-1", "damaged", True)]
    reader = open_hdfs_content_reader(hdfs_store.storage, hdfs_store.root, "node-1", ["c"])
    assert reader.read(victim) == payload(1, 200_000)
    assert repository.fsck().problems == []
    repository.close()
