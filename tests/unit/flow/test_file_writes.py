"""PutFile's file writes (`flow.processors.file_writes`): whole or not at all, with and
without the file system's unnamed files, and each conflict resolution."""

from __future__ import annotations

import errno
import os

import pytest

from flow.processors import file_writes


class _Flowfile:
    def __init__(self, ident: str):
        self.id = ident


class _Session:
    """What write_file asks of a session: the content written to a descriptor. `seen`
    is what the directory held while the content was being written."""

    def __init__(self, content: bytes, directory, fail: bool = False):
        self.content, self.directory, self.fail = content, directory, fail
        self.seen: list[str] = []

    def export_to(self, flowfile, fd: int) -> None:
        os.write(fd, self.content[:3])
        self.seen = sorted(os.listdir(self.directory))
        if self.fail:
            raise OSError(errno.ENOSPC, "No space left on device")
        os.write(fd, self.content[3:])


ID = "0b4d3c2a-1111-4222-8333-444455556666"


@pytest.fixture(params=["unnamed-files", "named-temporary"])
def way(request, tmp_path, monkeypatch) -> str:
    """Both ways a file is written: unnamed until whole (this machine's file system has
    unnamed files), or under a temporary name (a file system without them)."""
    if request.param == "named-temporary":
        monkeypatch.setattr(file_writes, "_named_only", {str(tmp_path)})
    return request.param


def test_the_file_appears_whole_under_its_name(tmp_path, way):
    session = _Session(b"payload", tmp_path)
    target = str(tmp_path / ID)
    assert file_writes.write_file(session, _Flowfile(ID), str(tmp_path), target, sync=True) == "written"
    assert (tmp_path / ID).read_bytes() == b"payload"
    assert os.listdir(tmp_path) == [ID]
    if way == "unnamed-files":
        assert session.seen == []  # no name at all while it was written
    else:
        assert len(session.seen) == 1 and file_writes.PARTIAL.match(session.seen[0])


def test_a_write_that_fails_leaves_nothing_behind(tmp_path, way):
    session = _Session(b"payload", tmp_path, fail=True)
    with pytest.raises(OSError, match="No space"):
        file_writes.write_file(session, _Flowfile(ID), str(tmp_path), str(tmp_path / ID), sync=False)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "conflict,old,placed,left",
    [
        ("replace", b"older", "written", b"payload"),
        ("ignore", b"older", "kept", b"older"),
        ("fail", b"older", "taken", b"older"),
        ("fail", b"payload", "kept", b"payload"),  # its own earlier write, before a crash
    ],
)
def test_a_name_already_taken_is_resolved_as_asked(tmp_path, way, conflict, old, placed, left):
    (tmp_path / "report.csv").write_bytes(old)
    session = _Session(b"payload", tmp_path)
    target = str(tmp_path / "report.csv")
    assert file_writes.write_file(session, _Flowfile(ID), str(tmp_path), target, False, conflict) == placed
    assert (tmp_path / "report.csv").read_bytes() == left
    assert os.listdir(tmp_path) == ["report.csv"]  # no temporary file stays


def test_a_name_taken_by_a_link_is_not_written_through(tmp_path, way):
    victim = tmp_path.parent / f"{tmp_path.name}-victim"
    victim.write_bytes(b"not yours")
    (tmp_path / "report.csv").symlink_to(victim)
    session = _Session(b"payload", tmp_path)
    placed = file_writes.write_file(session, _Flowfile(ID), str(tmp_path), str(tmp_path / "report.csv"), False, "fail")
    assert placed == "taken" and victim.read_bytes() == b"not yours"


def test_a_file_system_without_unnamed_files_is_remembered_and_written_the_named_way(tmp_path, monkeypatch):
    opened = []
    real_open = os.open

    def without_unnamed(path, flags, mode=0o777, **kwargs):
        opened.append(flags)
        if flags & file_writes._O_TMPFILE == file_writes._O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(file_writes, "_named_only", set())
    monkeypatch.setattr(os, "open", without_unnamed)
    for name in ("a", "b"):
        session = _Session(b"payload", tmp_path)
        file_writes.write_file(session, _Flowfile(ID), str(tmp_path), str(tmp_path / name), sync=False)
        assert len(session.seen) == 1 + (name == "b")  # its own temporary (and a's file)
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]
    assert sum(1 for flags in opened if flags & file_writes._O_TMPFILE == file_writes._O_TMPFILE) == 1
    assert file_writes._named_only == {str(tmp_path)}


def test_a_proc_whose_links_cannot_be_followed_is_remembered_and_written_the_named_way(tmp_path, monkeypatch):
    def refused(fd, target):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(file_writes, "_named_only", set())
    monkeypatch.setattr(file_writes, "_link", refused)
    session = _Session(b"payload", tmp_path)
    placed = file_writes.write_file(session, _Flowfile(ID), str(tmp_path), str(tmp_path / ID), sync=True)
    assert placed == "written" and (tmp_path / ID).read_bytes() == b"payload"
    assert os.listdir(tmp_path) == [ID]
    assert file_writes._named_only == {str(tmp_path)}


def test_a_link_refused_for_another_reason_is_raised(tmp_path, monkeypatch):
    def full(fd, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(file_writes, "_named_only", set())
    monkeypatch.setattr(file_writes, "_link", full)
    with pytest.raises(OSError, match="No space"):
        file_writes.write_file(_Session(b"payload", tmp_path), _Flowfile(ID), str(tmp_path), str(tmp_path / ID), False)
    assert os.listdir(tmp_path) == [] and file_writes._named_only == set()
