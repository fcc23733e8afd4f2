"""Named fault seams: the one convention every package of custody uses for them.

A fault seam is a named place in a store or a protocol where a test can stop the
code (block there, then SIGKILL the process) or break it (raise there). Seams are
declared as the methods of one class that derives directly from `FaultSeams`;
their bodies do nothing, and the code under test calls them by name:

    class WalHooks(FaultSeams):
        def before_sync(self, path: str) -> None:
            "The transactions were handed to the file and are not durable yet."

    hooks = WalHooks.coerce(hooks)   # in the store's constructor; None -> no-op seams
    hooks.before_sync(path)          # at the seam

A test supplies some of them, in any of three ways, and every one of them refuses
a name that is not a seam, so that a misspelt seam fails the test instead of
letting it pass while it tests nothing:

    WalHooks(before_sync=crash)                  # keywords
    WalHooks({"before_sync": crash})             # a mapping (names chosen at run time)
    class CrashBeforeSync(WalHooks):             # a subclass that overrides seams;
        def before_sync(self, path): ...         # another public method is an error

`coerce` also takes a plain object whose public methods are all seams of the class
(a test's small recorder), and refuses one with any other public method.

Production code never passes seams to make something happen: what must run on every
call belongs in an interface of its own (for example the flow's commit gate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar, TypeVar

S = TypeVar("S", bound="FaultSeams")


class UnknownSeam(TypeError):
    """A handler was given for a name that is not a seam of the class."""

    def __init__(self, owner: str, names: list[str], known: frozenset[str]):
        self.owner, self.names, self.known = owner, names, known
        super().__init__(
            f"{owner}: {', '.join(repr(n) for n in names)} "
            f"{'is not a fault seam' if len(names) == 1 else 'are not fault seams'}; "
            f"the seams are {', '.join(sorted(known)) or '(none)'}"
        )


def _public_callables(namespace: Mapping[str, object]) -> set[str]:
    return {
        name
        for name, value in namespace.items()
        if not name.startswith("_") and (callable(value) or isinstance(value, (classmethod, staticmethod)))
    }


class FaultSeams:
    """Base of every set of fault seams (see the module docstring)."""

    _seams: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        own = _public_callables(vars(cls))
        inherited = frozenset().union(*(base._seams for base in cls.__mro__[1:] if issubclass(base, FaultSeams)))
        if FaultSeams in cls.__bases__:
            cls._seams = inherited | own  # a declaration: its methods are its seams
            return
        cls._seams = inherited
        unknown = sorted(own - inherited)
        if unknown:
            raise UnknownSeam(cls.__qualname__, unknown, inherited)

    def __init__(
        self, handlers: Mapping[str, Callable[..., None]] | None = None, /, **more: Callable[..., None]
    ) -> None:
        chosen = {**(handlers or {}), **more}
        unknown = sorted(set(chosen) - self._seams)
        if unknown:
            raise UnknownSeam(type(self).__qualname__, unknown, self._seams)
        for name, handler in chosen.items():
            setattr(self, name, handler)  # an instance attribute shadows the no-op method

    @classmethod
    def seam_names(cls) -> frozenset[str]:
        return cls._seams

    @classmethod
    def coerce(cls: type[S], seams: object) -> S:
        """`seams` as an instance of `cls`: no-op seams for None, itself for an instance,
        and for another object, its methods (all of which must be seams of `cls`)."""
        if seams is None:
            return cls()
        if isinstance(seams, cls):
            return seams
        names = {name for name in dir(seams) if not name.startswith("_") and callable(getattr(seams, name))}
        names -= _public_callables(vars(FaultSeams))
        unknown = sorted(names - cls._seams)
        if unknown:
            raise UnknownSeam(f"{type(seams).__qualname__} given as {cls.__qualname__}", unknown, cls._seams)
        return cls({name: getattr(seams, name) for name in names})
