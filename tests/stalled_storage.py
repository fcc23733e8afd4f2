"""`StalledStorage`: local disk whose calls stand still on cue, as HDFS calls do when
the DataNodes or the NameNode are frozen, for the unit tests of abandoning.

    storage = StalledStorage()
    stall = storage.stall("sync", "journal")   # the next sync of a journal waits...
    ...                                        # (a thread commits; it blocks there)
    stall.entered.wait(5)                      # ...until a call is stuck in it
    stall.release()                            # the call goes on (or `fail=True`: raises)

Its files can be abandoned, as HDFS files can (`WritableFile.abandon`): an abandoned
file refuses every later write and sync with `StorageAbandoned` and is never closed
(`abandoned` and `closed` list the paths of each); a call already stuck in it goes on
when released (it was in flight).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from repositories.storage import LocalStorage, StorageAbandoned, StorageUnavailable


@dataclass
class Stall:
    operation: str  # "sync", "write", "create" or "close"
    path: str  # a part of the path it applies to
    fail: bool = False  # when released: raise StorageUnavailable instead of going on
    entered: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def release(self, *, fail: bool | None = None) -> None:
        if fail is not None:
            self.fail = fail
        self.released.set()


class StalledStorage(LocalStorage):
    """Lock plan: `_lock` guards `_stalls` and the counters."""

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()
        self._stalls: list[Stall] = []
        self.abandoned: list[str] = []
        self.closed: list[str] = []
        self.created: list[str] = []

    def stall(self, operation: str, path: str = "", *, fail: bool = False) -> Stall:
        stall = Stall(operation, path, fail)
        with self._lock:
            self._stalls.append(stall)
        return stall

    def release_all(self) -> None:
        with self._lock:
            stalls, self._stalls = self._stalls, []
        for stall in stalls:
            stall.release()

    def _wait(self, operation: str, path: str) -> None:
        with self._lock:
            stall = next((s for s in self._stalls if s.operation == operation and s.path in path), None)
            if stall is not None:
                self._stalls.remove(stall)
        if stall is None:
            return
        stall.entered.set()
        stall.released.wait(30)
        if stall.fail:
            raise StorageUnavailable(f"stalled {operation} of {path} failed", path)

    def create(self, path: str, *, overwrite: bool = False):
        self._wait("create", path)
        file = StalledFile(self, super().create(path, overwrite=overwrite))
        with self._lock:
            self.created.append(path)
        return file

    def append(self, path: str):
        return StalledFile(self, super().append(path))


class StalledFile:
    def __init__(self, storage: StalledStorage, inner):
        self.storage, self.inner, self.path = storage, inner, inner.path
        self.is_abandoned = False
        self._closed = False

    def _check(self) -> None:
        if self.is_abandoned:
            raise StorageAbandoned(f"{self.path} was abandoned", self.path)

    def write(self, data) -> int:
        self._check()
        self.storage._wait("write", self.path)
        return self.inner.write(data)

    def sync(self) -> None:
        self._check()
        self.storage._wait("sync", self.path)
        self.inner.sync()

    def sync_data(self) -> None:
        self._check()
        self.storage._wait("sync", self.path)
        self.inner.sync_data()

    def unsynced_directory(self):
        return self.inner.unsynced_directory()

    def directory_synced(self) -> None:
        self.inner.directory_synced()

    def moved(self, path: str) -> None:
        self.inner.moved(path)
        self.path = path

    def tell(self) -> int:
        return self.inner.tell()

    def close(self) -> None:
        if self.is_abandoned or self._closed:
            return
        self.storage._wait("close", self.path)
        self._closed = True
        self.inner.close()
        with self.storage._lock:
            self.storage.closed.append(self.path)

    def abandon(self) -> None:
        self.is_abandoned = True
        with self.storage._lock:
            self.storage.abandoned.append(self.path)

    def __enter__(self) -> StalledFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
