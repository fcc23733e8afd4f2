"""ZooKeeper reads and compare-and-set writes shared by the registries (shards,
plans, members): every znode of ours whose value changes is changed here, by a
read, a decision, and a write conditional on the version that was read."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from ..errors import OwnershipConflict, UnreadableZnode

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)

T = TypeVar("T")


def read_children(
    client: KazooClient,
    parent: str,
    path: Callable[[str], str],
    parse: Callable[[str, bytes, object], T],
    known: Callable[[str], T | None] = lambda name: None,
) -> dict[str, T]:
    """`parse(name, data, stat)` for every child of `parent`, in name order, leaving
    out children that vanished between the listing and the read. A missing parent
    reads as empty: nothing was ever written there. A child for which `known(name)`
    returns an entry is not read again: that entry stands for it.

    The reads are pipelined: every `get` is sent before the first answer is awaited,
    so a listing of N children costs about one round trip, not N. (The leader reads
    every shard and plan before each decision; one by one, 800 plans took 0.5 s.)"""
    try:
        names = sorted(client.get_children(parent))
    except NoNodeError:
        return {}
    found: dict[str, T] = {}
    pending = []
    for name in names:
        entry = known(name)
        if entry is not None:
            found[name] = entry
        else:
            pending.append((name, client.get_async(path(name))))
    for name, answer in pending:
        try:
            data, stat = answer.get()
        except NoNodeError:
            continue
        found[name] = parse(name, data, stat)
    return {name: found[name] for name in names if name in found}


class FinalChildren(Generic[T]):
    """The children of one znode, read with `read_children`, remembering the entries
    that can never change again (`is_final`: a RETIRED shard, a done plan), so that
    each listing reads only the children that still may. A remembered child that is
    no longer listed was deleted, and is forgotten. This relies on a name never being
    used twice (shards and plans are named after incarnations, which are unique): a
    child deleted and created again between two listings would read as the old one.

    Lock plan: `_lock` guards `_final`; the reads themselves run outside it."""

    def __init__(
        self,
        client: KazooClient,
        parent: str,
        path: Callable[[str], str],
        parse: Callable[[str, bytes, object], T],
        is_final: Callable[[T], bool],
    ):
        self.client, self.parent, self.path, self.parse, self.is_final = client, parent, path, parse, is_final
        self._final: dict[str, T] = {}
        self._lock = threading.Lock()

    def read(self) -> dict[str, T]:
        with self._lock:
            final = dict(self._final)
        found = read_children(self.client, self.parent, self.path, self.parse, final.get)
        with self._lock:
            self._final = {name: entry for name, entry in found.items() if name in final or self.is_final(entry)}
        return found


class VersionedZnodes(Generic[T]):
    """The children of one znode, each holding a value of type T, written only by
    compare-and-set: the read-modify-write of the shard registry and the plan store.

    `kind` names the children in errors ("shard", "plan"). A lost race raises
    `OwnershipConflict`: nothing was written, and the caller re-reads and decides
    again. Values for which `is_final` holds never change again and are read once
    (`FinalChildren`).

    A child whose bytes do not parse is left out of `all()` with one warning per
    version of it (every leader round lists the children: one damaged znode must not
    stop every decision), and named in `unreadable`; `all(strict=True)` raises
    `UnreadableZnode` instead, for decisions that must see every child. Reading such a
    child by name raises `UnreadableZnode`.

    Lock plan: `_lock` guards `unreadable` and `_warned`; the reads run outside it."""

    def __init__(
        self,
        client: KazooClient,
        kind: str,
        parent: str,
        path: Callable[[str], str],
        parse: Callable[[bytes], T],
        dump: Callable[[T], bytes],
        is_final: Callable[[T], bool],
    ):
        self.client, self.kind, self.parent, self.path = client, kind, parent, path
        self.parse, self.dump = parse, dump
        self.unreadable: dict[str, str] = {}  # as of the last listing: name -> why
        self._warned: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._children: FinalChildren[tuple[T, int] | _Unparsed] = FinalChildren(
            client,
            parent,
            path,
            self._parse_child,
            lambda entry: not isinstance(entry, _Unparsed) and is_final(entry[0]),
        )

    def _parse_child(self, name: str, data: bytes, stat) -> tuple[T, int] | _Unparsed:
        try:
            return self.parse(data), stat.version
        except (ValueError, KeyError, TypeError) as error:
            return _Unparsed(stat.version, f"{type(error).__name__}: {error}"[:200])

    def read(self, name: str) -> tuple[T, int] | None:
        """The value and its znode version, or None when there is no such child."""
        try:
            data, stat = self.client.get(self.path(name))
        except NoNodeError:
            return None
        entry = self._parse_child(name, data, stat)
        if isinstance(entry, _Unparsed):
            raise UnreadableZnode(self.kind, {name: entry.reason})
        return entry

    def all(self, *, strict: bool = False) -> dict[str, tuple[T, int]]:
        found = self._children.read()
        unreadable = {name: entry for name, entry in found.items() if isinstance(entry, _Unparsed)}
        with self._lock:
            self.unreadable = {name: entry.reason for name, entry in unreadable.items()}
            fresh = [(name, entry) for name, entry in unreadable.items() if (name, entry.version) not in self._warned]
            self._warned = {key for key in self._warned if key[0] in unreadable} | {
                (name, entry.version) for name, entry in unreadable.items()
            }
        for name, entry in fresh:
            log.warning(
                "%s znode %s (version %d) is unreadable and left out of every decision: %s",
                self.kind,
                self.path(name),
                entry.version,
                entry.reason,
            )
        if strict and unreadable:
            raise UnreadableZnode(self.kind, {name: entry.reason for name, entry in unreadable.items()})
        return {name: entry for name, entry in found.items() if not isinstance(entry, _Unparsed)}

    def create(self, name: str, value: T) -> bool:
        """Write a new child; False if it exists already."""
        try:
            self.client.create(self.path(name), self.dump(value), makepath=True)
            return True
        except NodeExistsError:
            return False

    def compare_and_set(self, name: str, version: int, value: T) -> int:
        """Write `value` if the child is still at `version`; returns the new version."""
        try:
            return self.client.set(self.path(name), self.dump(value), version=version).version
        except (BadVersionError, NoNodeError):
            raise OwnershipConflict(f"{self.kind} {name}", f"version {version}", "a newer version or none") from None

    def update(
        self, name: str, change: Callable[[T], T], *, expected_version: int | None = None
    ) -> tuple[T, int] | None:
        """Read the child, `change(current)` it, and compare-and-set the result.
        None when there is no such child; `OwnershipConflict` when it is no longer
        at `expected_version` (if given) or changed between the read and the write.
        `change` may raise to refuse, or return `current` itself to leave the child
        as it is: nothing is written then."""
        entry = self.read(name)
        if entry is None:
            return None
        current, version = entry
        if expected_version is not None and version != expected_version:
            raise OwnershipConflict(f"{self.kind} {name}", f"version {expected_version}", f"version {version}")
        new = change(current)
        if new is current:
            return entry
        return new, self.compare_and_set(name, version, new)


class _Unparsed:
    """A child whose bytes did not parse, at one version."""

    __slots__ = ("version", "reason")

    def __init__(self, version: int, reason: str):
        self.version, self.reason = version, reason
