"""A dead writer's files read a window at a time (`read_windows`): the windows kept, and
the resource IO that reads through them, on local files standing in for HDFS (the
claims of one resource read with two opens, not two a claim; a file's next window
with one more; checksums still checked; a file read short while its writer left it
open read again once its lease is recovered)."""

from __future__ import annotations

import io
import threading

import pytest

from repositories.content import ContentCorrupted, ContentRepository, ContentRepositoryConfig
from repositories.content.archive import ArchivePolicy
from repositories.content.format import checksum_path, resource_path
from repositories.content.read_windows import ReadWindows, WindowedFile
from repositories.content.resource_io import StorageResourceIO
from repositories.storage.local import LocalStorage

CONFIG = ContentRepositoryConfig(archive=ArchivePolicy(enabled=False, max_usage=None))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_windows_are_kept_for_a_moment_within_their_limit():
    clock = Clock()
    windows = ReadWindows(window=10, total_limit=20, keep_s=5.0, clock=clock)
    windows.keep_window("a", 0, b"a" * 10)
    assert windows.window("a", 0) is None  # no length known for "a": nothing kept
    windows.learn_size("a", 30)
    windows.keep_window("a", 0, b"a" * 10)
    windows.keep_window("a", 1, b"A" * 10)
    assert windows.window("a", 0) == b"a" * 10  # used last: window 1 is now the least recently used
    windows.keep_window("a", 2, b"@" * 10)
    assert (windows.window("a", 0), windows.window("a", 1), windows.window("a", 2)) == (b"a" * 10, None, b"@" * 10)
    assert windows.kept_bytes == 20
    clock.now = 5.5
    assert windows.size("a") is None and windows.kept_bytes == 0  # older than keep_s: dropped when asked
    windows.learn_size("b", 3)
    windows.keep_window("b", 0, b"bbb")
    clock.now = 11.0
    windows.learn_size("c", 1)
    assert windows.size("b") is None and windows.kept_bytes == 0  # and every expired one when one is learnt
    windows.forget(["c", "never kept"])
    assert windows.size("c") is None


def test_a_windowed_file_reads_as_the_file_and_asks_the_file_once_a_window():
    data = bytes(range(256)) * 4  # 1,024 bytes, windows of 100
    opened = []

    def reopen():
        opened.append(1)
        return io.BytesIO(data)

    windows = ReadWindows(window=100)
    windows.learn_size("f", len(data))
    handle = WindowedFile(windows, "f", len(data), reopen)
    handle.seek(150)
    assert handle.read(120) == data[150:270]  # windows 1 and 2
    assert handle.read(5) == data[270:275]
    handle.seek(0, io.SEEK_END)
    assert handle.read(10) == b""
    handle.close()
    assert len(opened) == 1  # one handle for the open, whatever the windows it read
    again = WindowedFile(windows, "f", len(data), reopen)
    again.seek(120)
    assert again.read(150) == data[120:270]  # windows 1 and 2 kept: the file is not asked
    assert len(opened) == 1
    assert again.read() == data[270:]
    assert len(opened) == 2
    again.close()


class CountingStorage(LocalStorage):
    """Counts the files opened for reading; `short` paths read only their first
    `readable` bytes until their lease is recovered (an HDFS file its dead writer
    left open)."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []
        self.short: dict[str, int] = {}
        self.recovered: list[str] = []

    def open_read(self, path: str):
        self.opened.append(path)
        handle = super().open_read(path)
        if path in self.short:
            data = handle.read()[: self.short[path]]
            handle.close()
            return io.BytesIO(data)
        return handle

    def recover_lease(self, path: str) -> bool:
        self.recovered.append(path)
        self.short.pop(path, None)
        return super().recover_lease(path)


def written(tmp_path, count: int = 5):
    """A dead writer's resource file of `count` small claims, and a reader of it."""
    storage = CountingStorage()
    root = str(tmp_path / "c")
    writer = ContentRepository({"c": root}, StorageResourceIO(storage, read_through_arrow=False), CONFIG)
    claims = [writer.write_bytes(f"claim {n} ".encode() * 20) for n in range(count)]
    writer.close()
    assert len({claim.resource for claim in claims}) == 1
    cached = ReadWindows()
    io_with_cache = StorageResourceIO(storage, read_through_arrow=False, recover_open_files=True, cache=cached)
    return storage, root, claims, ContentRepository({"c": root}, io_with_cache, CONFIG, prepare=False)


def test_the_claims_of_one_resource_are_read_with_one_open_of_each_file(tmp_path):
    storage, root, claims, reader = written(tmp_path)
    storage.opened.clear()
    assert [reader.read(claim) for claim in claims] == [f"claim {n} ".encode() * 20 for n in range(5)]
    resource = claims[0].resource
    assert sorted(storage.opened) == sorted([resource_path(root, resource), checksum_path(root, resource)])
    reader.close()


def test_bytes_read_from_the_cache_are_still_checked_against_their_checksums(tmp_path):
    storage, root, claims, reader = written(tmp_path)
    path = resource_path(root, claims[3].resource)
    with open(path, "r+b") as handle:  # damaged before the first read: the cache keeps the damage
        handle.seek(claims[3].offset + 2)
        byte = handle.read(1)
        handle.seek(claims[3].offset + 2)
        handle.write(bytes([byte[0] ^ 0x01]))
    assert reader.read(claims[0]) == b"claim 0 " * 20
    with pytest.raises(ContentCorrupted):
        reader.read(claims[3])
    reader.close()


def test_a_file_read_short_is_read_again_once_its_lease_is_recovered(tmp_path):
    storage, root, claims, reader = written(tmp_path)
    resource = claims[0].resource
    storage.short[resource_path(root, resource)] = claims[2].offset  # the dead writer's last block unfinished
    assert reader.read(claims[0]) == b"claim 0 " * 20  # read whole and kept, short
    assert reader.read(claims[4]) == b"claim 4 " * 20  # past the kept bytes: the lease recovered, read again
    assert resource_path(root, resource) in storage.recovered
    assert storage.opened.count(resource_path(root, resource)) == 2
    reader.close()


def test_two_readers_of_one_window_read_it_once():
    waiting = threading.Event()

    class Watched(threading.Event):
        def wait(self, timeout=None):
            waiting.set()  # the second reader waits for the first's read
            return super().wait(timeout)

    windows = ReadWindows(window=100)
    windows.event = Watched
    windows.learn_size("f", 100)
    started, release = threading.Event(), threading.Event()
    reads = []

    def slow() -> bytes:
        reads.append("slow")
        started.set()
        release.wait(10)
        windows.keep_window("f", 0, b"w" * 100)
        return b"w" * 100

    first = threading.Thread(target=lambda: reads.append(windows.fetched("f", 0, slow)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: reads.append(windows.fetched("f", 0, lambda: b"never asked")))
    second.start()
    assert waiting.wait(10)
    release.set()
    first.join(10)
    second.join(10)
    assert reads == ["slow", b"w" * 100, b"w" * 100]
