"""A claim taken from a FlowFile record, a swap file or the API never escapes its container."""

from __future__ import annotations

import os

import pytest

from repositories.claims import ContentClaim, InvalidClaimError, ResourceClaim
from repositories.content import (
    ArchivePolicy,
    ContentRepositoryConfig,
    UnsafeContentPath,
    open_filesystem_content_repository,
)


@pytest.fixture
def repository(tmp_path):
    repo = open_filesystem_content_repository(
        {"c": str(tmp_path / "content")}, ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))
    )
    yield repo
    repo.close()


@pytest.mark.parametrize(
    "container, resource_id",
    [
        ("c", "../../etc/passwd"),
        ("c", ".."),
        ("c", "/etc/passwd"),
        ("..", "x"),
        ("/tmp", "x"),
        ("c", "a/b"),
    ],
)
def test_forged_claims_cannot_be_built(container, resource_id):
    with pytest.raises(InvalidClaimError):
        ContentClaim(ResourceClaim(container, 1, resource_id), 0, 10)


def test_symlinked_resource_file_is_refused(repository, tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(b"do not read me")
    os.symlink(secret, tmp_path / "content" / "5" / "planted")
    with pytest.raises(UnsafeContentPath):
        repository.read(ContentClaim(ResourceClaim("c", 5, "planted"), 0, 4))


def test_symlinked_section_directory_is_refused(repository, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "r1").write_bytes(b"outside the container")
    section = tmp_path / "content" / "9"
    section.rmdir()
    os.symlink(outside, section)
    with pytest.raises(UnsafeContentPath):
        repository.read(ContentClaim(ResourceClaim("c", 9, "r1"), 0, 4))


def test_symlinked_archive_directory_is_refused(repository, tmp_path):
    outside = tmp_path / "outside-archive"
    outside.mkdir()
    (outside / "r2").write_bytes(b"outside the container")
    os.symlink(outside, tmp_path / "content" / "3" / "archive")
    with pytest.raises(UnsafeContentPath):
        repository.read(ContentClaim(ResourceClaim("c", 3, "r2"), 0, 4))


def test_recovery_leaves_symlinks_and_their_targets_alone(repository, tmp_path):
    secret = tmp_path / "precious"
    secret.write_bytes(b"keep me")
    os.symlink(secret, tmp_path / "content" / "7" / "lure")
    report = repository.recover([])
    assert any(path.endswith("/7/lure") for path in report.unsafe)
    assert secret.read_bytes() == b"keep me"
