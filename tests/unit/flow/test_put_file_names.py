"""PutFile naming its files as NiFi's does (`file_name: ${filename}`) and what a name
already taken does (`conflict_resolution`, NiFi's Conflict Resolution Strategy): replace
the file, ignore the FlowFile, or fail it. Each is safe to run again after a crash that
lost the session (the same FlowFile's second write): replace writes the same bytes
again, ignore finds the file there, fail takes a file with exactly its bytes for its
own. A name that is not one file name in the directory is refused."""

from __future__ import annotations

import os

import pytest

from flow.loading import parse_flow
from tests.unit.flow.test_processors import trigger_once


def put(tmp_path, inputs, **properties):
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "p",
                    "type": "PutFile",
                    "properties": {"directory": str(tmp_path / "out"), "file_name": "${filename}", **properties},
                }
            ],
            "ports": [{"id": "in", "type": "input"}, {"id": "out-success", "type": "output"}]
            + [{"id": "out-failure", "type": "output"}],
            "connections": [
                {"source": "in", "destination": "p"},
                {"source": "p", "relationships": ["success"], "destination": "out-success"},
                {"source": "p", "relationships": ["failure"], "destination": "out-failure"},
            ],
        }
    )
    return trigger_once(definition, inputs)


def files(tmp_path) -> dict[str, bytes]:
    out = tmp_path / "out"
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())} if out.exists() else {}


def test_files_are_named_after_the_filename_attribute(tmp_path):
    out = put(tmp_path, [({"filename": "a.txt"}, b"alpha"), ({"filename": "b.csv"}, b"x,y\n")])
    assert files(tmp_path) == {"a.txt": b"alpha", "b.csv": b"x,y\n"}
    assert len(out["success"]) == 2 and "failure" not in out


@pytest.mark.parametrize(
    ("conflict", "kept", "routed"),
    [("replace", b"new", "success"), ("ignore", b"old", "success"), ("fail", b"old", "failure")],
)
def test_a_name_already_taken(tmp_path, conflict, kept, routed):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.txt").write_bytes(b"old")
    out = put(tmp_path, [({"filename": "a.txt"}, b"new")], conflict_resolution=conflict)
    assert files(tmp_path) == {"a.txt": kept}
    assert list(out) == [routed]


@pytest.mark.parametrize("conflict", ["replace", "ignore", "fail"])
def test_the_same_flowfile_written_again_after_a_lost_session_succeeds_once_more(tmp_path, conflict):
    for _ in range(2):  # the second run is the retry of a session whose commit was lost
        out = put(tmp_path, [({"filename": "a.txt"}, b"payload")], conflict_resolution=conflict)
        assert list(out) == ["success"]
    assert files(tmp_path) == {"a.txt": b"payload"}
    assert not [name for name in os.listdir(tmp_path / "out") if name.startswith(".")]


def test_a_link_at_the_name_is_never_written_through_or_taken_for_a_match(tmp_path):
    (tmp_path / "out").mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"payload")
    os.symlink(outside, tmp_path / "out" / "a.txt")
    out = put(tmp_path, [({"filename": "a.txt"}, b"payload")], conflict_resolution="fail")
    assert list(out) == ["failure"]
    assert outside.read_bytes() == b"payload" and os.path.islink(tmp_path / "out" / "a.txt")


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ".", ""])
def test_a_name_that_is_not_one_file_in_the_directory_is_refused(tmp_path, name):
    out = put(tmp_path, [({"filename": name}, b"x")])
    ((attributes, _),) = out["failure"]
    assert "is not a file name in the directory" in attributes["path.refused"]
    assert files(tmp_path) == {} and not (tmp_path / "escape").exists()
