"""Reading many claims at once (`repositories.content.batch_reads`): the spans it reads,
that each span opens the resource file once, and that damage is found and named
exactly as a claim-by-claim read finds and names it."""

from __future__ import annotations

import os

import pytest

from replication.replicating_content import ReplicatingContentRepository
from repositories.claims import ContentClaim, ResourceClaim
from repositories.content import (
    ArchivePolicy,
    ContentCorrupted,
    ContentNotFound,
    ContentRepositoryConfig,
    open_filesystem_content_repository,
)
from repositories.content.batch_reads import spans

from .damage import flip_bit

A, B = ResourceClaim("c", 1, "a"), ResourceClaim("c", 2, "b")


def test_claims_side_by_side_share_a_span_and_far_ones_do_not():
    claims = [
        ContentClaim(A, 100, 10),
        ContentClaim(B, 0, 5),
        ContentClaim(A, 0, 100),
        ContentClaim(A, 110 + 64, 6),
        ContentClaim(A, 10_000, 1),
    ]
    found = spans(claims, max_gap=64)
    assert found == [
        (ContentClaim(A, 0, 180), [2, 0, 3]),
        (ContentClaim(A, 10_000, 1), [4]),
        (ContentClaim(B, 0, 5), [1]),
    ]


def test_a_span_stops_growing_at_its_limit_and_a_repeated_claim_rides_along():
    claims = [ContentClaim(A, 0, 40), ContentClaim(A, 40, 40), ContentClaim(A, 80, 40), ContentClaim(A, 0, 40)]
    assert spans(claims, max_gap=0, max_span=80) == [
        (ContentClaim(A, 0, 80), [0, 3, 1]),
        (ContentClaim(A, 80, 40), [2]),
    ]


CONFIG = ContentRepositoryConfig(sync_on_close=False, checksum_block_size=16, archive=ArchivePolicy(max_usage=None))


@pytest.fixture
def repository(tmp_path):
    repository = open_filesystem_content_repository({"c": str(tmp_path / "c")}, CONFIG)
    yield repository
    repository.close()


def written(repository, count: int = 20):
    contents = [f"<{index:02d}:{'x' * index}>".encode() for index in range(count)]
    claims = [repository.write_bytes(data) for data in contents]
    repository.sync()
    assert len({claim.resource for claim in claims}) == 1
    return contents, claims


def resource_file(root, claim: ContentClaim) -> str:
    return os.path.join(root, str(claim.resource.section), claim.resource.id)


def test_one_open_reads_a_whole_resource_of_small_claims(repository, monkeypatch):
    contents, claims = written(repository)
    opened = []
    original = repository.open_read
    monkeypatch.setattr(
        repository, "open_read", lambda claim, *a, **k: opened.append(claim) or original(claim, *a, **k)
    )
    assert repository.read_many(claims) == contents
    assert len(opened) == 1 and opened[0].length == sum(len(data) for data in contents)


def test_damage_in_one_claim_is_raised_for_that_claim_and_nothing_unverified_is_returned(repository, tmp_path):
    contents, claims = written(repository)
    hit = claims[7]
    flip_bit(resource_file(tmp_path / "c", hit), hit.offset + 2)
    with pytest.raises(ContentCorrupted) as raised:
        repository.read_many(claims)
    assert raised.value.claim == hit
    # Claims in blocks the damage did not reach still read, together.
    clean = [claim for claim in claims if claim.offset >= hit.offset + hit.length + CONFIG.checksum_block_size]
    assert clean and repository.read_many(clean) == [contents[claims.index(c)] for c in clean]


def test_a_missing_resource_is_named(repository):
    contents, claims = written(repository, 3)
    lost = ContentClaim(ResourceClaim("c", 9, "gone"), 0, 4)
    with pytest.raises(ContentNotFound) as raised:
        repository.read_many([claims[0], lost])
    assert raised.value.claim == lost


def test_a_replicating_repository_reads_a_damaged_span_from_its_other_replica(tmp_path):
    local = open_filesystem_content_repository({"c": str(tmp_path / "local")}, CONFIG, name="local")
    mirror = open_filesystem_content_repository({"c": str(tmp_path / "mirror")}, CONFIG, name="mirror")
    replicas = ReplicatingContentRepository([local, mirror])
    try:
        contents, claims = written(replicas)
        flip_bit(resource_file(tmp_path / "local", claims[3]), claims[3].offset)
        assert replicas.read_many(claims) == contents
    finally:
        replicas.close()
