"""What a Spark executor does with claims passed by reference, run here in-process on
local storage laid out as a cluster's HDFS content: each claim copied whole and
checked into its staging file (small ones joined into shared files), a claim it
cannot read reported back (never copied short or unverified), and a part file's
checksum file as a content writer makes it."""

from __future__ import annotations

import os

from flow.spark.by_reference import (
    JOIN_MAX_BYTES,
    JOIN_MAX_CLAIM,
    ClaimsToJoin,
    ClaimToStage,
    ContentLocation,
    _stage_partition,
    _write_checksums,
    join_small_claims,
)
from replication.hdfs_content import open_hdfs_content_repository
from repositories.claims import ContentClaim, ResourceClaim
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
    for item, payload in zip(items, payloads, strict=False):
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


def test_small_claims_join_in_index_order_up_to_the_group_size_and_large_ones_go_alone():
    resource = ResourceClaim("n1-7", 0, "r1")

    def item(index: int, length: int) -> ClaimToStage:
        return ClaimToStage(index, ContentClaim(resource, index * 10, length), f"in-{index}", in_place=False)

    per_group = JOIN_MAX_BYTES // JOIN_MAX_CLAIM
    items = [
        item(0, 10),
        item(1, 20),
        item(2, JOIN_MAX_CLAIM + 1),
        item(3, 30),
        *(item(4 + n, JOIN_MAX_CLAIM) for n in range(per_group)),
    ]
    alone, joined = join_small_claims(list(reversed(items)), lambda first, last: f"in-{first}-{last}")
    # The large one goes alone; the small ones join in index order until the next would
    # pass the group size (60 bytes and all but one of the full-size claims); the last
    # group, of one claim, goes alone too.
    assert [each.index for each in alone] == [2, 3 + per_group]
    assert [group.target for group in joined] == [f"in-0-{2 + per_group}"]
    assert joined[0].indexes == (0, 1, 3, *range(4, 3 + per_group))
    assert all(sum(claim.length for claim in group.claims) <= JOIN_MAX_BYTES for group in joined)
    assert all(list(group.indexes) == sorted(group.indexes) for group in joined)
    assert join_small_claims(items, lambda first, last: f"in-{first}-{last}") == (alone, joined)  # any order in


def test_joined_claims_are_copied_in_order_each_ending_a_line_and_a_damaged_one_is_left_out(tmp_path):
    base = str(tmp_path)
    store = content(base)
    payloads = [b'{"n": 0}\n', b'{"n": 1}', b'{"n": 2}\n{"n": 3}', b'{"n": 4}\r\n']
    claims = store.write_many(payloads)
    store.sync()
    store.close()
    (tmp_path / "in").mkdir()
    location = ContentLocation(LocalStorage().address, base, 65536)
    target = str(tmp_path / "in" / "in-000000-000003.json")
    group = ClaimsToJoin((0, 1, 2, 3), tuple(claims), target)
    staged = list(_stage_partition(location, iter([group])))
    assert [(each.index, each.path) for each in staged] == [(0, target), (1, target), (2, target), (3, target)]
    assert open(target, "rb").read() == b'{"n": 0}\n{"n": 1}\n{"n": 2}\n{"n": 3}\n{"n": 4}\r\n'
    # A damaged byte in the third claim: it is reported, and nothing of it is copied.
    resource = claims[2].resource
    path = tmp_path / "content" / CONTAINER / CONTAINER / str(resource.section) / resource.id
    with open(path, "r+b") as handle:
        handle.seek(claims[2].offset + 3)
        handle.write(b"X")
    staged = sorted(_stage_partition(location, iter([group])), key=lambda each: each.index)
    assert [each.path for each in staged] == [target, target, None, target]
    assert "ContentCorrupted" in staged[2].reason
    assert open(target, "rb").read() == b'{"n": 0}\n{"n": 1}\n{"n": 4}\r\n'
