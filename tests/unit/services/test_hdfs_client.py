"""The nodes' patched HDFS client: what the patch declares, when a built wheel is reused,
how it is put where the custody image copies it from, and what a machine without Rust
is told. The build itself runs in `custody services install`; its effect is
tests/integration/test_hdfs_pipeline_recovery.py."""

from __future__ import annotations

import re

import pytest

from cluster.services import hdfs_client
from cluster.services.process import ServiceError


def test_the_patch_gives_the_build_the_version_by_which_it_is_known():
    text = hdfs_client.patch_text().decode()
    added = re.findall(r'^\+version = "([^"]+)"$', text, re.MULTILINE)
    removed = re.findall(r'^-version = "([^"]+)"$', text, re.MULTILINE)
    assert added == [hdfs_client.PATCHED_VERSION] and removed == [hdfs_client.RELEASE]
    assert hdfs_client.PATCHED_VERSION.startswith(hdfs_client.RELEASE + "+")  # `==RELEASE` still matches it
    assert "drop(packet_sender);" in text


def test_a_built_wheel_is_reused_only_when_it_was_built_from_this_patch(tmp_path):
    wheel = tmp_path / "hdfs_native-0.14.7+custody.1-cp310-abi3-linux_x86_64.whl"
    wheel.write_bytes(b"wheel")
    assert hdfs_client._built_wheel(tmp_path, "abc") is None  # no digest: built by nobody known
    (tmp_path / hdfs_client.DIGEST_FILE).write_text("abc\n")
    assert hdfs_client._built_wheel(tmp_path, "abc") == wheel
    assert hdfs_client._built_wheel(tmp_path, "def") is None  # another patch
    (tmp_path / "hdfs_native-0.14.7-cp310-abi3-linux_x86_64.whl").write_bytes(b"other")
    assert hdfs_client._built_wheel(tmp_path, "abc") is None  # which of two: build again


def test_staging_leaves_the_wheel_alone_in_the_image_directory_and_replaces_a_changed_one(tmp_path):
    built = tmp_path / "cache" / "hdfs_native-0.14.7+custody.1-cp310-abi3-linux_x86_64.whl"
    built.parent.mkdir()
    built.write_bytes(b"first build")
    image = tmp_path / "image"
    image.mkdir()
    (image / "hdfs_native-0.14.7+custody.0-cp310-abi3-linux_x86_64.whl").write_bytes(b"older")
    target = hdfs_client.stage(built, image)
    assert sorted(path.name for path in image.iterdir()) == [built.name]
    assert target.read_bytes() == b"first build"
    built.write_bytes(b"second build")  # same name and size, other bytes
    hdfs_client.stage(built, image)
    assert target.read_bytes() == b"second build"


def test_the_checkout_is_the_directory_of_the_compose_file():
    root = hdfs_client.checkout_root()
    assert root is not None and (root / "docker-compose.yml").exists()
    assert (root / hdfs_client.IMAGE_DIRECTORY).parent.joinpath("custody.Dockerfile").exists()


def test_without_cargo_the_build_says_how_to_install_rust(tmp_path, monkeypatch):
    monkeypatch.setattr(hdfs_client.shutil, "which", lambda name: None)
    monkeypatch.setenv("CARGO_HOME", str(tmp_path))
    with pytest.raises(ServiceError, match="needs Rust's cargo.*rustup"):
        hdfs_client._cargo_directory()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "cargo").write_text("")
    assert hdfs_client._cargo_directory() == str(tmp_path / "bin")


def test_a_missing_program_is_one_clear_error():
    from cluster.services.process import run_checked

    with pytest.raises(ServiceError, match="applying the patch failed: custody-no-such-git is not installed"):
        run_checked(["custody-no-such-git", "apply"], "applying the patch")
