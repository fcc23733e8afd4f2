"""A storage that fails on cue: `FaultyStorage` wraps any backend of the storage
protocol (`repositories.storage`) and fails chosen calls - create, append, write,
sync, close, rename, delete - before or after the real call reached the storage,
or crashes there.

    storage = FaultyStorage(LocalStorage())
    storage.arm(Fault("sync", "after", path="journal"))   # the next journal sync
    ...                                                    # writes and syncs, then raises
    storage.arm(Fault("write", "before", crash=True))      # the next write: a crash
    try:
        run_a_step()
    except Crash:
        storage.restart(keep=0.5)   # what a dead process leaves, then a live storage again

An injected failure is a `StorageUnavailable` (what a dying DataNode or a full disk
looks like to the caller). A crash is `Crash`, a BaseException that no production
code catches: from the faulting call on, every call raises it and does nothing, until
the test calls `restart`, which leaves on storage what a process killed there would
leave: each file still open keeps its synced bytes and a part (`keep`, 0..1) of those
written after the last sync (on local disk, where `UnbufferedLocalStorage` hands
every write to the kernel at once, so that the test decides what a crash keeps; on
HDFS the files are abandoned as they are, and their leases are recovered by whoever
opens the directory next).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from repositories.storage import LocalStorage, LocalWritableFile, StorageUnavailable
from repositories.storage.local import translate_os_error

OPERATIONS = ("create", "append", "write", "sync", "close", "rename", "delete")


class Crash(BaseException):
    """A simulated crash at a storage call: the process's memory is to be dropped."""


@dataclass
class Fault:
    """Fail the matching call: `operation` (one of OPERATIONS) on a path containing
    `path`, `when` "before" the real call (nothing reached the storage) or "after" it
    (everything did), once `skip` matching calls went through; `times` calls in a row
    (None: until disarmed); `crash` raises `Crash` instead of a storage error."""

    operation: str
    when: str = "before"
    path: str = ""
    skip: int = 0
    times: int | None = 1
    crash: bool = False

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise ValueError(f"no storage operation {self.operation!r} (they are {', '.join(OPERATIONS)})")
        if self.when not in ("before", "after"):
            raise ValueError(f"when={self.when!r}: a fault strikes 'before' or 'after' the real call")
        if self.times is not None and self.times < 1:
            raise ValueError(f"times={self.times}: a fault strikes at least once (None: until disarmed)")


class UnbufferedLocalStorage(LocalStorage):
    """Local disk whose files keep no bytes in user space: a write reaches the kernel
    before it returns, so what a crash keeps is only what `FaultyStorage.restart`
    leaves of the unsynced bytes."""

    def create(self, path: str, *, overwrite: bool = False) -> LocalWritableFile:
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_TRUNC if overwrite else os.O_EXCL)
        return LocalWritableFile(path, self._open(path, flags, "create"), created=True, buffer_size=0)

    def append(self, path: str) -> LocalWritableFile:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
        return LocalWritableFile(path, self._open(path, flags, "append to"), created=False, buffer_size=0)

    @staticmethod
    def _open(path: str, flags: int, action: str) -> int:
        try:
            return os.open(path, flags, 0o644)
        except OSError as error:
            raise translate_os_error(error, path, action) from error


class FaultyStorage:
    """The storage protocol over `inner`, with the faults of `arm` (see the module).
    On local disk, give it an `UnbufferedLocalStorage`."""

    def __init__(self, inner):
        self.inner = inner
        self.scheme = inner.scheme
        self.reopens_for_append = inner.reopens_for_append
        self.faults: list[Fault] = []
        self.crashed = False
        self.injected: list[tuple[str, str, str]] = []  # (operation, when, path) of each fault that struck
        self._open: list[FaultyFile] = []
        # Bumped whenever a path names a new file (create, delete, rename): a handle
        # only ever cuts the file it wrote.
        self._generation: Counter = Counter()

    # -- faults -------------------------------------------------------------------------

    def arm(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    def disarm(self) -> None:
        self.faults.clear()

    def strike(self, operation: str, when: str, path: str) -> None:
        if self.crashed:
            raise Crash(f"{operation} {path}: the process has crashed")
        for fault in self.faults:
            if fault.operation != operation or fault.when != when or fault.path not in path:
                continue
            if fault.skip:
                fault.skip -= 1
                return
            if fault.times is not None:
                fault.times -= 1
                if fault.times == 0:
                    self.faults.remove(fault)
            self.injected.append((operation, when, path))
            if fault.crash:
                self.crashed = True
                raise Crash(f"crashed {when} {operation} {path}")
            raise StorageUnavailable(f"injected: {operation} of {path} failed ({when} the real call)", path)
        return

    def restart(self, keep: float = 0.0) -> None:
        """Leave what a process killed now would leave (see the module), and come back."""
        for file in self._open:
            file.abandon(keep)
        self._open.clear()
        self.faults.clear()
        self.crashed = False

    # -- the storage protocol ---------------------------------------------------------

    def create(self, path: str, *, overwrite: bool = False):
        self.strike("create", "before", path)
        inner = self.inner.create(path, overwrite=overwrite)
        self._generation[path] += 1
        file = FaultyFile(self, inner, synced=0)
        self._open.append(file)
        self.strike("create", "after", path)
        return file

    def append(self, path: str):
        self.strike("append", "before", path)
        inner = self.inner.append(path)
        file = FaultyFile(self, inner, synced=inner.tell())
        self._open.append(file)
        self.strike("append", "after", path)
        return file

    def rename(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        self.strike("rename", "before", src)
        self.inner.rename(src, dst, overwrite=overwrite)
        self._generation[src] += 1
        self._generation[dst] += 1
        self.strike("rename", "after", src)

    def delete(self, path: str, *, recursive: bool = False) -> bool:
        self.strike("delete", "before", path)
        deleted = self.inner.delete(path, recursive=recursive)
        self._generation[path] += 1
        self.strike("delete", "after", path)
        return deleted

    def _alive(self, what: str):
        if self.crashed:
            raise Crash(f"{what}: the process has crashed")
        return self.inner

    def read(self, path: str, offset: int = 0, length: int | None = None) -> bytes:
        return self._alive(f"read {path}").read(path, offset, length)

    def open_read(self, path: str):
        return self._alive(f"open {path}").open_read(path)

    def list(self, path: str):
        return self._alive(f"list {path}").list(path)

    def status(self, path: str):
        return self._alive(f"stat {path}").status(path)

    def exists(self, path: str) -> bool:
        return self._alive(f"exists {path}").exists(path)

    def mkdir(self, path: str, *, parents: bool = False, exist_ok: bool = False) -> None:
        self._alive(f"mkdir {path}").mkdir(path, parents=parents, exist_ok=exist_ok)

    def sync_directory(self, path: str) -> None:
        self._alive(f"sync {path}").sync_directory(path)

    def recover_lease(self, path: str) -> bool:
        return self._alive(f"recover the lease of {path}").recover_lease(path)

    def arrow_filesystem(self):
        return self.inner.arrow_filesystem()

    def close(self) -> None:
        self.inner.close()


class FaultyFile:
    """A WritableFile of `FaultyStorage`; it counts what was synced, for `restart`."""

    def __init__(self, storage: FaultyStorage, inner, *, synced: int):
        self.storage, self.inner, self.path = storage, inner, inner.path
        self.synced = synced
        self.closed = False
        self.generation = storage._generation[self.path]

    def write(self, data) -> int:
        self.storage.strike("write", "before", self.path)
        written = self.inner.write(data)
        self.storage.strike("write", "after", self.path)
        return written

    def sync(self) -> None:
        self.storage.strike("sync", "before", self.path)
        self.inner.sync()
        self.synced = self.inner.tell()
        self.storage.strike("sync", "after", self.path)

    def sync_data(self) -> None:
        self.storage.strike("sync", "before", self.path)
        self.inner.sync_data()
        self.synced = self.inner.tell()
        self.storage.strike("sync", "after", self.path)

    def unsynced_directory(self):
        return self.inner.unsynced_directory()

    def directory_synced(self) -> None:
        self.inner.directory_synced()

    def moved(self, path: str) -> None:
        # Renamed with its bytes: a crash now cuts what it left unsynced under `path`.
        self.inner.moved(path)
        self.path = path
        self.generation = self.storage._generation[path]

    def tell(self) -> int:
        return self.inner.tell()

    def close(self) -> None:
        if self.closed:
            return
        self.storage.strike("close", "before", self.path)
        self.closed = True
        self.inner.close()
        self.synced = self.inner.tell()  # a closed file's bytes reached the storage
        if self in self.storage._open:
            self.storage._open.remove(self)
        self.storage.strike("close", "after", self.path)

    def abandon(self, keep: float = 1.0) -> None:
        """The process died with this file open (`restart`: `keep` is the part of the
        unsynced bytes left). Called with no argument, as the storage protocol's
        `WritableFile.abandon` (its owner let it go at once, still running): nothing is
        cut, and it takes no more writes."""
        if self.closed:
            return
        self.closed = True
        if self.storage.scheme != "file":
            return  # HDFS: the lease holder is gone; lease recovery settles the length
        written = self.inner.tell()
        self.inner.close()  # unbuffered: nothing is written by closing
        if self.generation != self.storage._generation[self.path]:
            return  # the path names another file now; this one is gone or renamed with its bytes
        length = self.synced + int((written - self.synced) * keep)
        if os.path.exists(self.path) and os.path.getsize(self.path) > length:
            os.truncate(self.path, length)

    def __enter__(self) -> FaultyFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
