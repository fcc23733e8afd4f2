"""Finishing what a source took: the delete or move of each taken file, on that file only.

A record names a path and the identity the file had when it was taken
(`format.FileIdentity`). The path is looked at again before anything is done: when it
holds nothing any more (finished before a crash, or removed by someone else) or holds
another file (a new file under the same name, or the old one rewritten), there is
nothing to do, and the other file is left for the source to take. A finish counts as
durable only once the directories it changed are synced; only then may the record
leave the state.

Left open: a file replaced in the instant between that look and the unlink is
deleted untaken. POSIX has no unlink-if-this-inode; a writer that replaces files by
rename while a source deletes them should give them new names.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field

from repositories.storage.local import fsync_directory

from .format import DELETE, FileIdentity, TakenFile


@dataclass
class Finished:
    """What `finish` did: the identities now completed (durably: their records may go)
    and the records it could not finish, with why (they stay, and are tried again)."""

    completed: set[FileIdentity] = field(default_factory=set)
    failed: list[tuple[TakenFile, OSError]] = field(default_factory=list)


def finish(records: Iterable[TakenFile]) -> Finished:
    """Delete or move each record's file if the path still holds it, then sync the
    directories that changed."""
    result = Finished()
    done: list[TakenFile] = []
    directories: dict[str, list[TakenFile]] = {}
    for record in records:
        try:
            changed = _finish_one(record)
        except OSError as error:
            result.failed.append((record, error))
            continue
        done.append(record)
        for directory in changed:
            directories.setdefault(directory, []).append(record)
    unsynced: set[FileIdentity] = set()
    for directory, affected in directories.items():
        try:
            fsync_directory(directory)
        except OSError as error:
            for record in affected:
                if record.identity not in unsynced:
                    unsynced.add(record.identity)
                    result.failed.append((record, error))
    result.completed = {record.identity for record in done if record.identity not in unsynced}
    return result


def current_identity(path: str) -> FileIdentity | None:
    try:
        return FileIdentity.of(os.stat(path))
    except FileNotFoundError:
        return None


def _finish_one(record: TakenFile) -> tuple[str, ...]:
    """Carry out one record; the directories it changed (none when there was nothing to do)."""
    if current_identity(record.path) != record.identity:
        return ()
    source_directory = os.path.dirname(record.path) or "."
    if record.action == DELETE:
        try:
            os.remove(record.path)
        except FileNotFoundError:
            return ()
        return (source_directory,)
    os.makedirs(record.destination, exist_ok=True)
    target = os.path.join(record.destination, os.path.basename(record.path))
    try:
        os.replace(record.path, target)
    except FileNotFoundError:
        return ()
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        _copy_durably(record.path, target)
        os.remove(record.path)
    return (source_directory, record.destination)


def _copy_durably(path: str, target: str) -> None:
    """Another file system: copy to a temporary name, sync it, rename it into place.
    A crash before the source's removal leaves both; the record's next finish copies again."""
    temporary = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.moving")
    with open(path, "rb") as source, open(temporary, "wb") as copy:
        shutil.copyfileobj(source, copy, 1 << 20)
        copy.flush()
        os.fsync(copy.fileno())
    os.replace(temporary, target)
