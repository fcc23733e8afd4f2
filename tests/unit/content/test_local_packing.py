"""The standalone node's local content repository packs its large claims
(`LOCAL_PACKED_RESOURCE_SIZE`): 1 MB claims share a resource file 16 at a time, read
and export from their offsets, and the file is archived only once none of them is
referenced. A sync round fsyncs a new file's directory beside its files' fdatasyncs."""

from __future__ import annotations

import os
import threading

from repositories.content import (
    LOCAL_PACKED_RESOURCE_SIZE,
    ArchivePolicy,
    ContentRepositoryConfig,
    open_filesystem_content_repository,
)
from repositories.storage import LocalStorage
from repositories.storage.local import LocalWritableFile

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


def test_a_round_fsyncs_a_new_files_directory_beside_its_files_not_after_them(tmp_path, monkeypatch):
    content = local(tmp_path)
    named = threading.Event()
    saw_directory_sync: list[bool] = []
    directory_sync = LocalStorage.sync_directory
    data_sync = LocalWritableFile.sync_data

    def sync_directory(self, path):
        named.set()
        directory_sync(self, path)

    def sync_data(self):
        # Waits for the directory's fsync: a round that ran it only after this returned
        # would wait here in vain until the deadline.
        saw_directory_sync.append(named.wait(5.0))
        data_sync(self)

    try:
        claim = content.write_bytes(payload(1), sync=False)
        monkeypatch.setattr(LocalStorage, "sync_directory", sync_directory)
        monkeypatch.setattr(LocalWritableFile, "sync_data", sync_data)
        content.sync()
        content.check_durable([claim])
        assert named.is_set()
        assert saw_directory_sync and all(saw_directory_sync), saw_directory_sync
        monkeypatch.undo()
        assert content.read(claim) == payload(1)
    finally:
        content.close()
