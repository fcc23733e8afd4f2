"""The ZooKeeper session file: private (0600), replaced whole, removed only by its own
incarnation, never followed through a planted link, and a damaged or newer file
refused by name."""

from __future__ import annotations

import os
import stat

import pytest

from cluster.node.session_file import SessionFileError, read_session_text, remove_session, session_path, write_session


def read(directory) -> dict:
    return read_session_text(open(session_path(str(directory))).read())


def test_written_private_and_read_back(tmp_path):
    path = write_session(str(tmp_path / "node"), "n1-3", 99, b"\x01" * 16)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "node").st_mode) == 0o700
    assert read(tmp_path / "node") == {"incarnation": "n1-3", "session_id": 99, "session_password": b"\x01" * 16}


def test_a_new_incarnation_replaces_the_old_and_only_its_own_end_removes_it(tmp_path):
    write_session(str(tmp_path), "n1-3", 1, b"a" * 16)
    write_session(str(tmp_path), "n1-4", 2, b"b" * 16)
    remove_session(str(tmp_path), "n1-3")  # the old incarnation's end comes late: the new one's stays
    assert read(tmp_path)["incarnation"] == "n1-4"
    remove_session(str(tmp_path), "n1-4")
    assert not os.path.exists(session_path(str(tmp_path)))


def test_a_planted_link_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    os.symlink(victim, session_path(str(tmp_path)) + ".partial")
    write_session(str(tmp_path), "n1-3", 1, b"a" * 16)
    assert victim.read_text() == "keep me"
    assert read(tmp_path)["incarnation"] == "n1-3"


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "not a ZooKeeper session file"),
        ("{}", "not a ZooKeeper session file"),
        ('{"version": 1, "incarnation": "n1-3", "session_id": 1, "session_password": "zz"}', "not a ZooKeeper"),
        ('{"version": 2, "incarnation": "n1-3", "session_id": 1, "session_password": "00"}', "version 2"),
    ],
)
def test_a_damaged_or_newer_file_is_refused_by_name(text, says):
    with pytest.raises(SessionFileError, match=says):
        read_session_text(text, "/data/zookeeper-session")
