"""What a Spark executor does with claims passed by reference, run here in-process on
local storage laid out as a cluster's HDFS content: each claim copied whole and
checked into its staging file, a claim it cannot read reported back (never copied
short or unverified), and a part file's checksum file as a content writer makes it."""

from __future__ import annotations

import os

from flow.spark.by_reference import ClaimToStage, ContentLocation, _stage_partition, _write_checksums
from replication.hdfs_content import open_hdfs_content_repository
from repositories.content.checksum_format import HEADER_SIZE, RECORD_SIZE, pack_header
from repositories.content.checksums import BlockChecksummer
from repositories.storage import LocalStorage

CONTAINER = "n1-7"


def content(base: str):
    return open_hdfs_content_repository(LocalStorage(), base, CONTAINER, (CONTAINER,))


def test_every_claim_is_copied_whole_into_its_staging_file(tmp_path):
    base = str(tmp_path)
    store = content(base)
    payloads = [f'{{"n": {i}}}\n'.encode() * (i + 1) for i in range(20)]
    claims = store.write_many(payloads)
    store.sync()
    store.close()
    (tmp_path / "in").mkdir()
    items = [ClaimToStage(i, claim, str(tmp_path / "in" / f"in-{i:06d}.json")) for i, claim in enumerate(claims)]
    staged = list(_stage_partition(ContentLocation(LocalStorage().address, base, 65536), iter(items)))
    assert [(each.index, each.path) for each in staged] == [(item.index, item.target) for item in items]
    for item, payload in zip(items, payloads):
        assert open(item.target, "rb").read() == payload


def test_a_claim_damaged_on_storage_is_reported_unread_and_the_rest_are_copied(tmp_path):
    base = str(tmp_path)
    store = content(base)
    claims = store.write_many([b"a" * 100, b"b" * 100, b"c" * 100])
    store.sync()
    store.close()
    resource = claims[1].resource
    path = tmp_path / "content" / CONTAINER / CONTAINER / str(resource.section) / resource.id
    with open(path, "r+b") as handle:
        handle.seek(claims[1].offset + 5)
        handle.write(b"X")
    (tmp_path / "in").mkdir()
    items = [ClaimToStage(i, claim, str(tmp_path / "in" / f"in-{i}")) for i, claim in enumerate(claims)]
    staged = list(_stage_partition(ContentLocation(LocalStorage().address, base, 65536), iter(items)))
    assert [each.path is None for each in staged] == [False, True, False]
    assert "ContentCorrupted" in staged[1].reason
    assert open(items[0].target, "rb").read() == b"a" * 100
    assert open(items[2].target, "rb").read() == b"c" * 100


def test_a_claim_that_fills_its_resource_is_checked_and_read_in_place(tmp_path):
    base = str(tmp_path)
    store = content(base)
    whole = store.write_bytes(b"w" * 5000)  # a resource of its own: nothing appended before it
    store.sync()
    store.close()
    root = tmp_path / "content" / CONTAINER / CONTAINER / str(whole.resource.section)
    (tmp_path / "in").mkdir()
    location = ContentLocation(LocalStorage().address, base, 65536)
    item = ClaimToStage(0, whole, str(tmp_path / "in" / "in-0"))
    assert [(e.index, e.path) for e in _stage_partition(location, iter([item]))] == [(0, str(root / whole.resource.id))]
    assert not (tmp_path / "in" / "in-0").exists()
    # Not allowed in place (its resource is shared in the batch): copied.
    shared = ClaimToStage(0, whole, str(tmp_path / "in" / "in-0"), in_place=False)
    assert [e.path for e in _stage_partition(location, iter([shared]))] == [shared.target]
    # A damaged byte: not read in place, reported.
    with open(root / whole.resource.id, "r+b") as handle:
        handle.write(b"X")
    assert [e.path for e in _stage_partition(location, iter([item]))] == [None]


def test_a_part_files_checksum_file_is_what_a_content_writer_makes_for_one_claim(tmp_path):
    data = os.urandom(5 * 1000 + 17)
    path = tmp_path / "part-00000.json"
    path.write_bytes(data)
    _, checksums = _write_checksums(ContentLocation(LocalStorage().address, str(tmp_path), 1000), str(path))
    expected = BlockChecksummer(0, 1000)
    expected.update(data)
    expected.finish()
    written = open(checksums, "rb").read()
    assert written == pack_header(1000) + expected.take()
    assert len(written) == HEADER_SIZE + 6 * RECORD_SIZE
