"""`ContentRepository.write_many`: many small claims written as their own writers would
write them, side by side, a resource taken once; full resources give way to new ones;
a write that fails leaves nothing referenced behind."""

from __future__ import annotations

import pytest

from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository


def repository(tmp_path, **config):
    return open_filesystem_content_repository(
        {"c": str(tmp_path / "c")},
        ContentRepositoryConfig(sync_on_close=False, archive=ArchivePolicy(max_usage=None), **config),
    )


def live_resources(tmp_path) -> int:
    """Resource files in the container's sections (not archived, not checksum files)."""
    return sum(1 for path in (tmp_path / "c").glob("*/*") if path.is_file() and "." not in path.name)


def test_claims_lie_side_by_side_and_read_back_after_the_sync(tmp_path):
    store = repository(tmp_path)
    try:
        contents = [f"<{i}>".encode() * (i % 5) for i in range(200)]
        claims = store.write_many(contents)
        assert len({claim.resource for claim in claims}) == 1
        assert [c.offset for c in claims] == [sum(map(len, contents[:i])) for i in range(200)]
        store.sync()
        store.check_durable(claims)
        assert store.read_many(claims) == contents
        assert store.claimant_count(claims[0]) == 200  # each claim's writer counts itself
        # The resource is appendable again: the next writer follows the last claim.
        assert store.write_bytes(b"after").offset == claims[-1].offset + claims[-1].length
    finally:
        store.close()


def test_a_full_resource_gives_way_to_a_new_one(tmp_path):
    store = repository(tmp_path, max_appendable_claim_size=1000)
    try:
        contents = [bytes([i]) * 300 for i in range(10)]
        claims = store.write_many(contents)
        resources = [claim.resource for claim in claims]
        assert len(set(resources)) == 3  # 4 claims of 300 bytes fill a resource past 1000
        assert all(resources[i] == resources[i - i % 4] for i in range(10))
        store.sync()
        assert store.read_many(claims) == contents
    finally:
        store.close()


def test_a_failed_write_releases_the_claims_written_before_it(tmp_path):
    store = repository(tmp_path)
    try:
        with pytest.raises(TypeError):
            store.write_many([b"one", b"two", 3])
        kept = store.write_bytes(b"kept")
        store.sync()
        assert store.read(kept) == b"kept"
        # The two claims before the failure have no claimant: a collection takes their
        # resource (retired by the abort) out of the live ones; the kept claim stays.
        assert store.claimant_count(kept) == 1
        assert live_resources(tmp_path) == 2
        store.collect()
        assert live_resources(tmp_path) == 1
        assert store.read(kept) == b"kept"
    finally:
        store.close()
