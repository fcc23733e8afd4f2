"""A dead writer's files read a window at a time, each window kept for a moment.

An adopter reads the FlowFiles it took over from their dead incarnation's resource
files on HDFS. Small claims share a resource file (a clustered node's up to 8 MB), so
an adopted shard's tasks read its claims one after another from the same few files,
and each read opened the resource file and its checksum file again: four NameNode
round trips and two DataNode reads a claim, 6-10 ms on loopback, on the path from a
node's death to its FlowFiles' first output and again for every FlowFile it drains.

`ReadWindows` keeps, per file, its readable length and the windows of `window` bytes
read from it (a window is read whole the first time a read meets it), so that the next
claims of a window are read from memory and a file's next window costs one open and
one read. A reader still checks every block against its checksum, as before: the
window holds the file's bytes, not verdicts.

Only for a dead writer's files (`StorageResourceIO(cache=...)`, which the reader of
other incarnations' content sets): nothing appends to them any more, and the bytes a
reader of an HDFS file sees are those its writer synced, which the recovery of its
lease keeps. A file found short (its dead writer left it open, its last block
unreadable) is forgotten before its lease is recovered and read again after
(`StorageResourceIO.finish_abandoned`). What is kept for a file lives `keep_s` seconds
from when its length was read: the windows are for a burst of reads of neighbouring
claims, and a file an operator mends on HDFS (`custody content fsck --repair`) is read
afresh soon after. At most `total_limit` bytes of windows are kept, the least recently
used dropped first.
"""

from __future__ import annotations

import functools
import io
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import BinaryIO

WINDOW = 1 << 20
TOTAL_LIMIT = 16 << 20
KEEP_S = 10.0
FETCH_WAIT_S = 30.0  # for a window another reader is reading


class ReadWindows:
    """Files' readable lengths and windows by path (see the module docstring). Thread-safe."""

    event = threading.Event  # what a reader of a window another is reading waits on

    def __init__(
        self,
        window: int = WINDOW,
        total_limit: int = TOTAL_LIMIT,
        keep_s: float = KEEP_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window_size = window
        self.total_limit = total_limit
        self.keep_s = keep_s
        self._clock = clock
        self._lock = threading.Lock()
        self._sizes: OrderedDict[str, tuple[int, float]] = OrderedDict()  # path: readable length, when; oldest first
        self._windows: OrderedDict[tuple[str, int], bytes] = OrderedDict()  # least recently used first
        self._indexes: dict[str, set[int]] = {}  # path: the indexes of its windows kept
        self._fetching: dict[tuple[str, int], threading.Event] = {}  # windows being read, set when done
        self._bytes = 0

    def size(self, path: str) -> int | None:
        """The readable length kept for `path`, or None (never read, forgotten, or
        older than `keep_s`: then its windows are dropped too)."""
        with self._lock:
            entry = self._sizes.get(path)
            if entry is None:
                return None
            if self._clock() - entry[1] > self.keep_s:
                self._forget(path)
                return None
            return entry[0]

    def learn_size(self, path: str, size: int) -> None:
        with self._lock:
            now = self._clock()
            while self._sizes:  # a burst's files do not outlive it (the oldest are first)
                oldest, (_size, at) = next(iter(self._sizes.items()))
                if now - at <= self.keep_s:
                    break
                self._forget(oldest)
            self._forget(path)
            self._sizes[path] = (size, now)

    def fetched(self, path: str, index: int, fetch: Callable[[], bytes]) -> bytes:
        """The window `index` of `path`: kept, or read by `fetch()` (and kept when it is
        whole: `fetch` returns fewer bytes for a short read). Two readers that want
        the same window read it once: the second waits for the first (a task and the
        adopter's read ahead, `cluster.node.content`), at most `FETCH_WAIT_S`, then reads
        it itself."""
        key = (path, index)
        while True:
            with self._lock:
                data = self._windows.get(key)
                if data is not None:
                    self._windows.move_to_end(key)
                    return data
                fetching = self._fetching.get(key)
                if fetching is None:
                    fetching = self._fetching[key] = self.event()
                    break
            if not fetching.wait(FETCH_WAIT_S):
                return fetch()  # the other read is stuck: this one does not wait on it
        try:
            return fetch()
        finally:
            with self._lock:
                del self._fetching[key]
            fetching.set()

    def window(self, path: str, index: int) -> bytes | None:
        with self._lock:
            data = self._windows.get((path, index))
            if data is not None:
                self._windows.move_to_end((path, index))
            return data

    def keep_window(self, path: str, index: int, data: bytes) -> None:
        with self._lock:
            if path not in self._sizes:  # forgotten meanwhile: its length may have changed
                return
            key = (path, index)
            self._drop(key)
            self._windows[key] = data
            self._indexes.setdefault(path, set()).add(index)
            self._bytes += len(data)
            while self._bytes > self.total_limit:
                self._drop(next(iter(self._windows)))

    def forget(self, paths: Iterable[str]) -> None:
        with self._lock:
            for path in paths:
                self._forget(path)

    @property
    def kept_bytes(self) -> int:
        return self._bytes

    def _forget(self, path: str) -> None:
        self._sizes.pop(path, None)
        for index in self._indexes.pop(path, set()):
            self._drop((path, index))

    def _drop(self, key: tuple[str, int]) -> None:
        data = self._windows.pop(key, None)
        if data is not None:
            self._bytes -= len(data)
            path, index = key
            indexes = self._indexes.get(path)
            if indexes is not None:
                indexes.discard(index)
                if not indexes:
                    del self._indexes[path]


class WindowedFile(io.RawIOBase):
    """One open of a file of `size` readable bytes, read through `windows`: a window
    not kept is read from `opened` (the handle the open made, if any) or a handle
    `reopen()` makes, and kept. Seek and read, as the content reader uses a file."""

    def __init__(
        self,
        windows: ReadWindows,
        path: str,
        size: int,
        reopen: Callable[[], BinaryIO],
        opened: BinaryIO | None = None,
    ) -> None:
        super().__init__()
        self._windows, self._path, self._size = windows, path, size
        self._reopen = reopen
        self._handle = opened
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def tell(self) -> int:
        return self._position

    def read(self, size: int | None = -1) -> bytes:
        end = self._size if size is None or size < 0 else min(self._size, self._position + size)
        parts = []
        while self._position < end:
            index, within = divmod(self._position, self._windows.window_size)
            data = self._windows.fetched(self._path, index, functools.partial(self._fetch, index))
            part = data[within : within + end - self._position]
            if not part:
                break  # the file delivered less than its length: the reader says what is missing
            parts.append(part)
            self._position += len(part)
        return b"".join(parts)

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        super().close()

    def _fetch(self, index: int) -> bytes:
        start = index * self._windows.window_size
        want = min(self._windows.window_size, self._size - start)
        if self._handle is None:
            self._handle = self._reopen()
        self._handle.seek(start)
        parts, got = [], 0
        while got < want:
            chunk = self._handle.read(want - got)
            if not chunk:
                break
            parts.append(chunk)
            got += len(chunk)
        data = b"".join(parts)
        if got == want:  # a short read is not kept: the next read asks the file again
            self._windows.keep_window(self._path, index, data)
        return data
