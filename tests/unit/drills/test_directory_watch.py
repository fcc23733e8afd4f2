"""The drill's sink names, kept by inotify (`cluster.drills.directory_watch`), on this
machine's real file system: what a listing would say, without listing again."""

from __future__ import annotations

import os
import struct

import pytest

from cluster.drills import directory_watch
from cluster.drills.directory_watch import IN_CREATE, IN_MOVED_TO, IN_Q_OVERFLOW, DirectoryNames, parse_events
from cluster.drills.sink import SinkDirectory


def deliver(directory, name: str, content: bytes = b"") -> None:
    """As PutFile does: a dot-temporary, renamed."""
    temporary = directory / f".{name}.tmp"
    temporary.write_bytes(content)
    os.rename(temporary, directory / name)


def test_names_follow_the_directory_oldest_first_without_listing_it_again(tmp_path, monkeypatch):
    names = DirectoryNames(str(tmp_path))
    assert names.names() == []
    for n in range(5):
        deliver(tmp_path, f"f{n}")
    (tmp_path / ".still-a-temporary").write_bytes(b"")
    (tmp_path / "sub").mkdir()

    def no_listing(path):
        raise AssertionError(f"listed {path} again")

    monkeypatch.setattr(directory_watch.os, "listdir", no_listing)
    assert names.names() == [f"f{n}" for n in range(5)]
    deliver(tmp_path, "f5")
    assert names.count() == 6


def test_a_directory_made_later_is_watched_once_it_exists(tmp_path):
    sink = tmp_path / "sink"
    names = DirectoryNames(str(sink))
    assert names.count() == 0
    sink.mkdir()
    deliver(sink, "before-the-first-look")
    assert names.names() == ["before-the-first-look"]
    deliver(sink, "after")
    assert names.names() == ["before-the-first-look", "after"]


def test_a_removed_name_rebuilds_the_list_and_moves_the_generation_on(tmp_path):
    names = DirectoryNames(str(tmp_path))
    assert names.names() == []
    for name in ("a", "b", "c"):
        deliver(tmp_path, name)
    generation, listed = names.snapshot()
    assert listed == ["a", "b", "c"]
    deliver(tmp_path, "d")
    assert names.snapshot() == (generation, ["a", "b", "c", "d"])  # the same list, grown
    os.remove(tmp_path / "b")
    later, listed = names.snapshot()
    assert (listed, later > generation) == (["a", "c", "d"], True)


def test_without_inotify_every_call_lists(tmp_path, monkeypatch):
    monkeypatch.setattr(directory_watch, "_inotify_libc", lambda: None)
    names = DirectoryNames(str(tmp_path))
    deliver(tmp_path, "x")
    (tmp_path / ".hidden").write_bytes(b"")
    assert names.names() == ["x"]


def event(mask: int, name: bytes, padded: int) -> bytes:
    return struct.pack("=iIII", 1, mask, 0, padded) + name.ljust(padded, b"\0")


def test_events_are_read_as_the_kernel_lays_them_out():
    buffer = event(IN_CREATE, b".tmp-1", 16) + event(IN_MOVED_TO, b"f1", 16) + event(IN_Q_OVERFLOW, b"", 0)
    assert parse_events(buffer) == [(IN_CREATE, ".tmp-1"), (IN_MOVED_TO, "f1"), (IN_Q_OVERFLOW, "")]


@pytest.mark.parametrize("watched", [True, False])
def test_the_sink_finds_each_duplicate_once_reading_only_new_files(tmp_path, monkeypatch, watched):
    if not watched:
        monkeypatch.setattr(directory_watch, "_inotify_libc", lambda: None)
    sink = SinkDirectory(str(tmp_path))
    deliver(tmp_path, "id-1", b"id-1 payload")  # a delivery is named by the id it carries
    assert sink.duplicates() == {}
    deliver(tmp_path, "id-2", b"id-2 payload")
    assert sink.duplicates() == {} and sink.delivered() == 2
    deliver(tmp_path, "id-1-again", b"id-1 payload")  # id-1 delivered again
    assert {carried: sorted(files) for carried, files in sink.duplicates().items()} == {"id-1": ["id-1", "id-1-again"]}
    assert sink.delivered() == 3


def test_a_queue_that_overflowed_is_met_by_listing_again(tmp_path):
    with open("/proc/sys/fs/inotify/max_queued_events") as limit:
        queue = int(limit.read())
    names = DirectoryNames(str(tmp_path))
    assert names.names() == []
    generation = names.snapshot()[0]
    for n in range(queue + 100):  # more events than the kernel keeps
        (tmp_path / f"f{n}").write_bytes(b"")
    later, listed = names.snapshot()
    assert (len(listed), len(set(listed)), later > generation) == (queue + 100, queue + 100, True)
