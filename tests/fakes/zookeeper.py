"""An in-memory ZooKeeper, and clients of it that answer the part of kazoo's client
API that `cluster.zk` calls, for unit tests of the leader and the registries.

    zookeeper = FakeZooKeeper()
    client = zookeeper.session()      # a client with a session of its own
    ...
    client.expire()                   # its ephemeral znodes go, as on a session expiry

What it keeps of ZooKeeper: a tree of znodes, each with data and a version that every
`set` raises by one; `set` and a transaction's `check` refuse a version that is not
the znode's (kazoo's `BadVersionError`); a transaction applies all of its
operations or none; ephemeral znodes belong to a session; a missing parent or an
existing node fail as in ZooKeeper (`NoNodeError`, `NodeExistsError`). Errors are
kazoo's own classes, so that `cluster.zk` translates them as it does on the wire.
A `DataWatch` is called at once and after every change of its znode, a `ChildrenWatch`
at once and after a child is created or deleted, on the thread that made the change.
Not kept: deletion, ACLs, sequence nodes, connection states (a session never changes
state: a state listener is accepted and never called). The leader's tests call its
`step`; a member's run its own threads (`ClusterMember.start`) over a session of this.

Lock plan: `FakeZooKeeper._lock` guards the tree; watches are called outside it.
"""

from __future__ import annotations

import itertools
import posixpath
import threading
from dataclasses import dataclass, field

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError


@dataclass
class ZnodeStat:
    version: int = 0
    ephemeral_owner: int = 0


@dataclass
class _Znode:
    data: bytes
    stat: ZnodeStat = field(default_factory=ZnodeStat)


class FakeZooKeeper:
    def __init__(self):
        self._tree: dict[str, _Znode] = {"/": _Znode(b"")}
        self._lock = threading.Lock()
        self._sessions = itertools.count(1)
        self._watches: list[tuple[str, object]] = []  # DataWatch: (path, callback)
        self._child_watches: list[tuple[str, object]] = []  # ChildrenWatch: (path, callback)

    def session(self) -> FakeClient:
        return FakeClient(self, next(self._sessions))

    # -- the tree (every change goes through `_change`, which then calls the watches) --------
    def _children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted(
            name[len(prefix) :]
            for name in self._tree
            if name.startswith(prefix) and "/" not in name[len(prefix) :] and name != prefix
        )

    def _node(self, path: str) -> _Znode:
        try:
            return self._tree[path]
        except KeyError:
            raise NoNodeError(path) from None

    def _check(self, path: str, version: int) -> _Znode:
        node = self._node(path)
        if version != -1 and node.stat.version != version:
            raise BadVersionError(path)
        return node

    def _create(self, path: str, data: bytes, *, session: int, ephemeral: bool, makepath: bool) -> None:
        if path in self._tree:
            raise NodeExistsError(path)
        parent = posixpath.dirname(path)
        if parent not in self._tree:
            if not makepath:
                raise NoNodeError(parent)
            self._create(parent, b"", session=session, ephemeral=False, makepath=True)
        self._tree[path] = _Znode(data, ZnodeStat(0, session if ephemeral else 0))

    def _change(self, apply) -> object:
        with self._lock:
            before = {path: node.stat.version for path, node in self._tree.items()}
            result = apply()
            after = {path: node.stat.version for path, node in self._tree.items()}
        changed = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
        self._notify(changed, {posixpath.dirname(path) for path in before.keys() ^ after.keys()})
        return result

    # -- watches ---------------------------------------------------------------------------------
    def _watch(self, path: str, callback) -> None:
        with self._lock:
            self._watches.append((path, callback))
        self._call(path, callback)

    def _watch_children(self, path: str, callback) -> None:
        with self._lock:
            self._child_watches.append((path, callback))
        self._call_children(path, callback)

    def _notify(self, changed: set[str], parents: set[str]) -> None:
        """Call the data watches of the `changed` znodes, and the children watches of the
        `parents` of znodes created or deleted."""
        with self._lock:
            due = [(path, callback) for path, callback in self._watches if path in changed]
            due_children = [(path, callback) for path, callback in self._child_watches if path in parents]
        for path, callback in due:
            self._call(path, callback)
        for path, callback in due_children:
            self._call_children(path, callback)

    def _call(self, path: str, callback) -> None:
        """kazoo's DataWatch: `callback(data, stat)`, (None, None) while there is no znode;
        returning False ends the watch."""
        with self._lock:
            node = self._tree.get(path)
            data, stat = (node.data, node.stat) if node is not None else (None, None)
        if callback(data, stat) is False:
            with self._lock:
                self._watches = [watch for watch in self._watches if watch != (path, callback)]

    def _call_children(self, path: str, callback) -> None:
        """kazoo's ChildrenWatch: `callback(children)`; returning False ends the watch."""
        with self._lock:
            children = self._children(path)
        if callback(children) is False:
            with self._lock:
                self._child_watches = [watch for watch in self._child_watches if watch != (path, callback)]


class FakeClient:
    """One session's client of a `FakeZooKeeper`: kazoo's method names and errors."""

    def __init__(self, zookeeper: FakeZooKeeper, session: int):
        self.zookeeper, self.session_id = zookeeper, session

    @property
    def client_id(self) -> tuple[int, bytes]:
        return self.session_id, b"fake password"

    def expire(self) -> None:
        """The session ends: its ephemeral znodes are deleted (their watches fire)."""
        zookeeper = self.zookeeper

        def delete_ephemerals():
            for path in [p for p, node in zookeeper._tree.items() if node.stat.ephemeral_owner == self.session_id]:
                del zookeeper._tree[path]

        zookeeper._change(delete_ephemerals)

    # -- reads ----------------------------------------------------------------------------------
    def get(self, path: str) -> tuple[bytes, ZnodeStat]:
        with self.zookeeper._lock:
            node = self.zookeeper._node(path)
            return node.data, ZnodeStat(node.stat.version, node.stat.ephemeral_owner)

    def get_async(self, path: str) -> _Answer:
        try:
            return _Answer(self.get(path))
        except NoNodeError as error:
            return _Answer(error=error)

    def exists(self, path: str) -> ZnodeStat | None:
        with self.zookeeper._lock:
            node = self.zookeeper._tree.get(path)
            return None if node is None else ZnodeStat(node.stat.version, node.stat.ephemeral_owner)

    def get_children(self, path: str) -> list[str]:
        with self.zookeeper._lock:
            self.zookeeper._node(path)
            return self.zookeeper._children(path)

    # -- writes ---------------------------------------------------------------------------------
    def create(
        self,
        path: str,
        value: bytes = b"",
        acl=None,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
    ) -> str:
        if sequence:
            raise NotImplementedError("the fake keeps no sequence nodes")
        self.zookeeper._change(
            lambda: self.zookeeper._create(path, value, session=self.session_id, ephemeral=ephemeral, makepath=makepath)
        )
        return path

    def ensure_path(self, path: str) -> None:
        if self.exists(path) is None:
            try:
                self.create(path, makepath=True)
            except NodeExistsError:
                pass

    def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        def write():
            node = self.zookeeper._check(path, version)
            node.data, node.stat.version = value, node.stat.version + 1
            return ZnodeStat(node.stat.version, node.stat.ephemeral_owner)

        return self.zookeeper._change(write)

    def transaction(self) -> _Transaction:
        return _Transaction(self)

    # -- recipes and watches ------------------------------------------------------------------------
    def Counter(self, path: str) -> _Counter:  # noqa: N802 - kazoo's name
        return _Counter(self, path)

    def Election(self, path: str, identifier: str | None = None) -> _Election:  # noqa: N802 - kazoo's name
        return _Election()

    def DataWatch(self, path: str, func) -> None:  # noqa: N802 - kazoo's name
        self.zookeeper._watch(path, func)

    def ChildrenWatch(self, path: str, func) -> None:  # noqa: N802 - kazoo's name
        self.zookeeper._watch_children(path, func)

    # -- connection states: the fake's session never changes state -----------------------------------
    def add_listener(self, listener) -> None:
        """Never called: the session never changes state (the session guard adds one)."""

    def remove_listener(self, listener) -> None:
        pass


class _Answer:
    def __init__(self, value=None, error: Exception | None = None):
        self._value, self._error = value, error

    def get(self, block: bool = True, timeout: float | None = None):
        if self._error is not None:
            raise self._error
        return self._value


class _Transaction:
    """kazoo's `TransactionRequest`: all of its operations, or none (each failed one's
    result its error, the others `RolledBackError`)."""

    def __init__(self, client: FakeClient):
        self.client, self.operations = client, []

    def check(self, path: str, version: int) -> None:
        self.operations.append(lambda zookeeper: zookeeper._check(path, version))

    def set_data(self, path: str, value: bytes, version: int = -1) -> None:
        def write(zookeeper):
            node = zookeeper._check(path, version)
            node.data, node.stat.version = value, node.stat.version + 1

        self.operations.append(write)

    def create(self, path: str, value: bytes = b"", acl=None, ephemeral: bool = False, sequence: bool = False) -> None:
        session = self.client.session_id
        self.operations.append(
            lambda zookeeper: zookeeper._create(path, value, session=session, ephemeral=ephemeral, makepath=False)
        )

    def commit(self) -> list:
        zookeeper = self.client.zookeeper

        def apply():
            saved = {
                path: _Znode(node.data, ZnodeStat(node.stat.version, node.stat.ephemeral_owner))
                for path, node in zookeeper._tree.items()
            }
            results = []
            for operation in self.operations:
                try:
                    results.append(operation(zookeeper))
                except (NoNodeError, NodeExistsError, BadVersionError) as error:
                    zookeeper._tree = saved
                    return [
                        error if index == len(results) else RolledBackError() for index in range(len(self.operations))
                    ]
            return [True] * len(results)

        return zookeeper._change(apply)


class _Counter:
    """kazoo's `Counter`: `counter += 1`, then `post_value`."""

    def __init__(self, client: FakeClient, path: str):
        self.client, self.path, self.post_value = client, path, None

    def __iadd__(self, amount: int) -> _Counter:
        self.client.ensure_path(self.path)
        data, stat = self.client.get(self.path)
        value = int(data.decode("ascii") or 0) + amount
        self.client.set(self.path, repr(value).encode("ascii"), version=stat.version)
        self.post_value = value
        return self


class _Election:
    """Nobody campaigns in the fake: the tests drive a leader's `step` themselves."""

    def contenders(self) -> list[str]:
        return []

    def run(self, func, *args, **kwargs):
        raise NotImplementedError("the fake holds no elections: call Leader.step() instead")
