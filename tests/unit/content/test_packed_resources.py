"""Large claims packed into shared resource files (`packed_resource_size`): fewer
files to create and close on HDFS, the same claims, read alike by the replicas and
by an adopter of the HDFS copy. The layout is the one every resource has: claims
side by side in one file with its checksum file; nothing new to read."""

from __future__ import annotations

import pytest

from replication.hdfs_content import open_hdfs_content_reader, open_hdfs_content_repository
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import (
    ArchivePolicy,
    ContentRepositoryConfig,
    ContentRepositoryError,
    open_filesystem_content_repository,
)
from repositories.content.writing import is_full
from repositories.storage import LocalStorage

SMALL = 1000  # max_appendable_claim_size: a claim this long or longer is large
PACKED = 4000
CONFIG = ContentRepositoryConfig(
    sync_on_close=False,
    max_appendable_claim_size=SMALL,
    packed_resource_size=PACKED,
    archive=ArchivePolicy(max_usage=None),
)


@pytest.mark.parametrize(
    ("length", "last_claim", "packed", "full"),
    [
        (999, 10, None, False),  # small claims share a resource until it holds SMALL
        (1000, 10, None, True),
        (1000, 1000, None, True),  # without packing a large claim fills its resource alone
        (1000, 1000, PACKED, False),  # with it, large claims go on sharing it
        (3999, 1500, PACKED, False),
        (4000, 1000, PACKED, True),  # up to PACKED
        (2100, 100, PACKED, True),  # the first small claim after large ones fills it
        (999, 999, PACKED, False),  # small claims below SMALL as ever
    ],
)
def test_when_a_resource_is_full(length, last_claim, packed, full):
    config = ContentRepositoryConfig(max_appendable_claim_size=SMALL, packed_resource_size=packed)
    assert is_full(config, length, last_claim) is full


def test_a_packed_size_that_is_not_larger_than_the_appendable_size_is_refused():
    with pytest.raises(ContentRepositoryError, match="packed_resource_size 1000 must be larger"):
        ContentRepositoryConfig(max_appendable_claim_size=SMALL, packed_resource_size=SMALL)


def replicas(tmp_path, follower_config=CONFIG):
    local = open_filesystem_content_repository({"c": str(tmp_path / "local")}, CONFIG, name="local")
    hdfs = open_hdfs_content_repository(
        LocalStorage(), str(tmp_path / "hdfs"), "node", ["c"], follower_config, keep_open=True
    )
    return ReplicatingContentRepository([local, hdfs]), hdfs


def payload(number: int, size: int) -> bytes:
    return bytes((number * 7 + index) % 251 for index in range(size))


def test_large_claims_share_resources_on_both_replicas_and_an_adopter_reads_them(tmp_path):
    content, hdfs = replicas(tmp_path)
    sizes = [1000, 1500, 1000, 100, 1000, 1000, 1000, 1000, 1000]
    data = [payload(number, size) for number, size in enumerate(sizes)]
    claims = [content.write_bytes(each, sync=False) for each in data]
    content.sync()
    content.check_durable(claims)
    resources = [claim.resource for claim in claims]
    # Three large claims, then a small one that fills the resource (3600 bytes).
    assert len(set(resources[:4])) == 1 and [c.offset for c in claims[:4]] == [0, 1000, 2500, 3500]
    # Four large claims reach PACKED: full.
    assert len(set(resources[4:8])) == 1 and resources[4] != resources[0]
    assert resources[8] not in (resources[0], resources[4])
    # The follower holds the same claims: read from it alone.
    assert [hdfs.read(claim) for claim in claims] == data
    content.close()
    adopter = open_hdfs_content_reader(LocalStorage(), str(tmp_path / "hdfs"), "node", ["c"])
    try:
        assert adopter.read_many(claims) == data
    finally:
        adopter.close()


def test_replicas_that_would_pack_differently_are_refused(tmp_path):
    unpacked = ContentRepositoryConfig(
        sync_on_close=False, max_appendable_claim_size=SMALL, archive=ArchivePolicy(max_usage=None)
    )
    with pytest.raises(ContentRepositoryError, match="same packed_resource_size"):
        replicas(tmp_path, unpacked)
