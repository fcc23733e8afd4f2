"""On a standalone node, Spark's part files become content by a rename: the node
writes and syncs each one's checksum file, and the content repository takes both in
as a new resource, read back checked like any other claim."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from flow.spark.outputs import checksum_local_parts, local_taker
from flow.spark.staging import SparkStaging
from repositories.content import ContentRepositoryConfig, open_filesystem_content_repository
from repositories.content.errors import ContentRepositoryError
from repositories.content.format import resource_path
from repositories.storage import LocalStorage


@pytest.fixture
def node(tmp_path):
    content = open_filesystem_content_repository(
        {"local": str(tmp_path / "content")}, ContentRepositoryConfig(checksum_block_size=4096)
    )
    content.recover([])
    staging = SparkStaging(LocalStorage(), str(tmp_path / "spark"), "file://")
    directory = tmp_path / "spark" / "batch" / "out"
    directory.mkdir(parents=True)
    yield SimpleNamespace(
        content=content, staging=staging, directory=directory, session=SimpleNamespace(content_store=content)
    )
    content.close()


def test_a_part_file_is_taken_whole_by_a_rename_and_read_back_checked(node):
    payload = b"".join(b'{"id": %d, "name": "RECORD-%09d"}\n' % (n, n) for n in range(2000))
    part = node.directory / "part-00000-abc.json"
    part.write_bytes(payload)
    taker = local_taker(node.session, node.staging, str(node.directory))
    assert taker is node.content
    [(path, checksums)] = checksum_local_parts(taker, node.staging, [str(part)])
    claim = taker.take_file(path, checksums)
    assert not part.exists() and not os.path.exists(checksums)
    assert claim.offset == 0 and claim.length == len(payload)
    with taker.open_read(claim) as reader:
        assert reader.read() == payload

    # The checksums are the repository's own: a byte damaged on disk is caught.
    resource = resource_path(taker.containers[claim.resource.container], claim.resource)
    with open(resource, "r+b") as handle:
        handle.seek(5000)
        handle.write(b"X")
    with pytest.raises(ContentRepositoryError), taker.open_read(claim) as reader:
        reader.read()


def test_only_a_local_content_repository_beside_local_staging_takes_files(node):
    remote = SparkStaging(SimpleNamespace(scheme="hdfs"), "/custody/spark", "hdfs://127.0.0.1:9000")
    assert local_taker(node.session, remote, str(node.directory)) is None
    assert local_taker(SimpleNamespace(content_store=object()), node.staging, str(node.directory)) is None
    assert local_taker(node.session, node.staging, str(node.directory / "missing")) is None
