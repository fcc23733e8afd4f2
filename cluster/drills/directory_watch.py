"""The names in a directory that only grows, kept up to date by the kernel's inotify
instead of listing it again: what a drill reads its sink with.

A drill counts deliveries every 0.5 s (its timeline) and every 0.1 s while it waits for
twenty more after a fault, and the sink holds every FlowFile the run delivered: listing
200,000 names took 0.15 s here, so late in a long run the drill spent most of a core on
listings, and each count was up to a listing late. With a watch, a count costs the
events since the last one.

`DirectoryNames(path).names()` gives the directory's visible names (not starting with
a dot: PutFile's temporaries) in the order they appeared (those there at the first
look in the order a listing gives), as a growing list: of two `snapshot()`s
with the same `generation`, the earlier's names are the later's first ones (a name
removed, or a listing again, rebuilds the list and moves `generation` on). The watch
is made when the directory first exists, before it is listed, so nothing created in
between is missed; a queue overflow (`IN_Q_OVERFLOW`) or the directory's own removal
is met by listing it again.
Where inotify cannot be had (not Linux, or no watches left), every call lists.

The events, as the kernel's `struct inotify_event` lays them out in what `read`
returns, one after another (native byte order):

| offset | size | field |
|---|---|---|
| 0 | 4 | `wd`: the watch (signed) |
| 4 | 4 | `mask`: what happened (`IN_*` bits) |
| 8 | 4 | `cookie`: pairs a rename's two halves |
| 12 | 4 | `len`: bytes of `name`, NUL-padded |
| 16 | `len` | `name`: the entry's name in the directory |
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import threading

IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ISDIR = 0x40000000
WATCHED = IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF
HEADER = struct.Struct("=iIII")
READ_SIZE = 1 << 20


def parse_events(buffer: bytes) -> list[tuple[int, str]]:
    """(mask, name) of each event in what one `read` of an inotify descriptor returned."""
    events, offset = [], 0
    while offset + HEADER.size <= len(buffer):
        _, mask, _, length = HEADER.unpack_from(buffer, offset)
        raw = buffer[offset + HEADER.size : offset + HEADER.size + length].split(b"\0", 1)[0]
        events.append((mask, os.fsdecode(raw)))
        offset += HEADER.size + length
    return events


def visible(name: str) -> bool:
    return bool(name) and not name.startswith(".")


class DirectoryNames:
    """Thread-safe: a drill's sampler and its loop both count."""

    def __init__(self, path: str):
        self.path = path
        self.generation = 0  # goes up each time the list is rebuilt
        self._lock = threading.Lock()
        self._order: list[str] = []
        self._present: set[str] = set()
        self._removed = False
        self._fd: int | None = None
        self._libc = _inotify_libc()

    def names(self) -> list[str]:
        """The visible names, in the order they appeared (a copy)."""
        return self.snapshot()[1]

    def snapshot(self) -> tuple[int, list[str]]:
        """(generation, names) at one moment: with the same generation as an earlier
        snapshot, the earlier names are these names' first ones."""
        with self._lock:
            names = list(self._current())
            return self.generation, names

    def count(self) -> int:
        with self._lock:
            return len(self._current())

    def _current(self) -> list[str]:
        if self._libc is not None and self._fd is None:
            self._watch()
        if self._libc is None or self._fd is None:  # no inotify here, or no directory yet
            self.generation += 1  # every listing is a list of its own
            return self._listed()
        if self._drain():
            self._rebuild(self._listed())
        elif self._removed:
            self._rebuild([name for name in self._order if name in self._present])
        return self._order

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _listed(self) -> list[str]:
        try:
            return [name for name in os.listdir(self.path) if visible(name)]
        except FileNotFoundError:
            return []

    def _watch(self) -> None:
        """Watch the directory, then list it; if it does not exist yet, nothing."""
        libc = self._libc
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(self.path), WATCHED) < 0:
            error = ctypes.get_errno()
            if fd >= 0:
                os.close(fd)
            if error != errno.ENOENT:  # no watches left, or not allowed: list every time
                self._libc = None
            return
        self._fd = fd
        self._rebuild(self._listed())

    def _drain(self) -> bool:
        """Apply every event queued; True if the directory must be listed again."""
        relist = False
        while True:
            try:
                buffer = os.read(self._fd, READ_SIZE)
            except BlockingIOError:
                return relist
            for mask, name in parse_events(buffer):
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED):
                    os.close(self._fd)  # watched again at the next call, once it is back
                    self._fd = None
                    return True
                if mask & IN_Q_OVERFLOW:
                    relist = True
                elif mask & IN_ISDIR or not visible(name):
                    continue
                elif mask & (IN_CREATE | IN_MOVED_TO):
                    if name not in self._present:
                        self._present.add(name)
                        self._order.append(name)
                elif mask & (IN_DELETE | IN_MOVED_FROM) and name in self._present:
                    self._present.discard(name)
                    self._removed = True

    def _rebuild(self, listed: list[str]) -> None:
        there = set(listed)
        kept = [name for name in self._order if name in there]
        known = set(kept)
        self._order = kept + [name for name in listed if name not in known]
        self._present = set(self._order)
        self._removed = False
        self.generation += 1


def _inotify_libc():
    """The C library, if it has inotify (Linux); None otherwise."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc
