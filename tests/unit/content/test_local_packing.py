"""The standalone node's local content repository packs its large claims
(`LOCAL_PACKED_RESOURCE_SIZE`): 1 MB claims share a resource file 16 at a time, read
and export from their offsets, and the file is archived only once none of them is
referenced."""

from __future__ import annotations

import os
import threading

from repositories.content import (
    LOCAL_PACKED_RESOURCE_SIZE,
    ArchivePolicy,
    ContentRepositoryConfig,
    open_filesystem_content_repository,
)

MB = 1 << 20
CLAIMS_PER_FILE = LOCAL_PACKED_RESOURCE_SIZE // MB


def local(tmp_path):
    config = ContentRepositoryConfig(
        sync_on_close=False, packed_resource_size=LOCAL_PACKED_RESOURCE_SIZE, archive=ArchivePolicy(max_usage=None)
    )
    return open_filesystem_content_repository({"local": str(tmp_path / "content")}, config)


def payload(number: int) -> bytes:
    return bytes([number]) * MB


def test_1mb_claims_share_a_file_16_at_a_time_and_it_is_archived_once_none_is_referenced(tmp_path):
    content = local(tmp_path)
    try:
        claims = [content.write_bytes(payload(number), sync=False) for number in range(CLAIMS_PER_FILE + 1)]
        content.sync()
        content.check_durable(claims)
        first = claims[0].resource
        assert CLAIMS_PER_FILE == 16
        assert [claim.resource for claim in claims[:CLAIMS_PER_FILE]] == [first] * CLAIMS_PER_FILE
        assert [claim.offset for claim in claims[:CLAIMS_PER_FILE]] == [number * MB for number in range(16)]
        assert claims[-1].resource != first and claims[-1].offset == 0  # the 17th starts a file of its own
        assert content.read(claims[5]) == payload(5)
        target = os.open(tmp_path / "exported", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            assert content.export_to(claims[7], target) == MB
        finally:
            os.close(target)
        assert (tmp_path / "exported").read_bytes() == payload(7)

        for claim in claims[: CLAIMS_PER_FILE - 1]:
            content.decrement(claim)
        assert first not in content.collect().archived, "one claim of the file is still referenced"
        assert not content.list_resources()[first].archived
        assert content.read(claims[CLAIMS_PER_FILE - 1]) == payload(CLAIMS_PER_FILE - 1)
        content.decrement(claims[CLAIMS_PER_FILE - 1])
        assert first in content.collect().archived
        assert content.list_resources()[first].archived
        assert content.read(claims[-1]) == payload(CLAIMS_PER_FILE)
    finally:
        content.close()


def test_one_sync_of_more_new_resources_than_the_sync_pool_has_threads_ends(tmp_path):
    """Twenty new resource files synced at once (the pool syncs them eight at a time):
    a round that waited on more work queued to the same pool (a directory's fsync) once
    held every thread and waited for ever."""
    content = open_filesystem_content_repository(
        {"local": str(tmp_path / "content")},
        ContentRepositoryConfig(sync_on_close=False, archive=ArchivePolicy(max_usage=None)),
    )
    try:
        writers = [content.write_new() for _ in range(20)]
        for number, writer in enumerate(writers):
            writer.write(bytes([number]) * 100)
        claims = [writer.close() for writer in writers]
        synced = threading.Thread(target=content.sync, daemon=True)
        synced.start()
        synced.join(30)
        assert not synced.is_alive(), "the sync of twenty new resources did not end"
        content.check_durable(claims)
    finally:
        if not synced.is_alive():
            content.close()
