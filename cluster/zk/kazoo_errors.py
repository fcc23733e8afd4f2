"""kazoo's exceptions, translated into `cluster.errors` at the edge of `cluster.zk`.

kazoo maps each ZooKeeper error code to a class (`NoNodeError`, `BadVersionError`,
...); this module maps those to the classes callers of `cluster.zk` catch, named for
what they mean to them (`ZnodeMissing`, `ZnodeVersionChanged`, `ZooKeeperUnavailable`,
...; see `cluster.errors`). Inside `cluster.zk`, code catches kazoo's classes as
before; whatever leaves a public method of a class marked `@translates_kazoo` (or a
function marked `@translated`) leaves as a `ZooKeeperError`, its cause kazoo's.

    @translates_kazoo
    class ShardRegistry: ...      # every public method translates

    @translated
    def read_cluster_flow(client, layout): ...
"""

from __future__ import annotations

import functools
import inspect

from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionClosedError,
    ConnectionDropped,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
    ZookeeperStoppedError,
)
from kazoo.handlers.threading import KazooTimeoutError

from ..errors import (
    ZnodeAccessDenied,
    ZnodeExists,
    ZnodeMissing,
    ZnodeNotEmpty,
    ZnodeVersionChanged,
    ZooKeeperError,
    ZooKeeperSessionExpired,
    ZooKeeperUnavailable,
)

# Most specific first: kazoo's ConnectionClosedError (the client was stopped) is a
# SessionExpiredError, yet means "no connection", not "the session is over".
TRANSLATIONS: tuple[tuple[tuple[type[BaseException], ...], type[ZooKeeperError]], ...] = (
    ((NoNodeError,), ZnodeMissing),
    ((NodeExistsError,), ZnodeExists),
    ((BadVersionError,), ZnodeVersionChanged),
    ((NotEmptyError,), ZnodeNotEmpty),
    ((NoAuthError, AuthFailedError), ZnodeAccessDenied),
    (
        (
            ConnectionClosedError,
            ZookeeperStoppedError,
            ConnectionLoss,
            ConnectionDropped,
            OperationTimeoutError,
            KazooTimeoutError,
        ),
        ZooKeeperUnavailable,
    ),
    ((SessionExpiredError,), ZooKeeperSessionExpired),
    ((KazooException,), ZooKeeperError),
)
# What kazoo raises: its exception root, and its handler's timeout, which is not under it.
KAZOO_ERRORS = (KazooException, KazooTimeoutError)


def translate(error: BaseException, doing: str, path: str | None = None) -> ZooKeeperError:
    """The `cluster.errors` exception that stands for kazoo's `error`."""
    for kinds, ours in TRANSLATIONS:
        if isinstance(error, kinds):
            return ours(doing, error, path)
    raise TypeError(f"not an exception of kazoo: {error!r}")


def translated(function):
    """`function` raising `ZooKeeperError`s for kazoo's exceptions; its qualified name
    says what was being done."""
    doing = function.__qualname__

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except KAZOO_ERRORS as error:
            raise translate(error, doing) from error

    return call


def translates_kazoo(cls):
    """Every public method of `cls` (not its properties, nor those of its bases)
    translates kazoo's exceptions: the class is part of the edge of `cluster.zk`."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, (staticmethod, classmethod)):
            setattr(cls, name, type(member)(translated(member.__func__)))
        elif inspect.isfunction(member):
            setattr(cls, name, translated(member))
    return cls
