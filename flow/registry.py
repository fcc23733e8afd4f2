"""`ProcessorRegistry`: the processor types a flow definition is parsed against, by type name.

The registry is passed to the parser (`flow.definition.parse_flow(data, registry=...)`),
so the definition layer never imports the processors themselves. The standard
registry (`flow.loading.standard_registry`) holds the processors this package ships
and those that installed distributions declare as entry points of the group
`custody.processors`:

    # pyproject.toml of a third-party package
    [project.entry-points."custody.processors"]
    CountWords = "acme_custody.words:CountWords"

An entry point's name is the type name flows use, and must be the class's `type_name`.
A broken entry point (its module does not import, it is not a `Processor` subclass,
its name is not the class's type name) or a duplicate one (a type name already taken
by another class) fails the whole load with one `ProcessorRegistryError` naming each
such entry point: a node never runs a flow against half its processors.

A registry is built once, before a flow is parsed against it, and only read after
that; it takes no lock.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Iterator, Mapping

from .errors import ProcessorRegistryError
from .processor import Processor

ENTRY_POINT_GROUP = "custody.processors"


def _describe(entry_point) -> str:
    dist = getattr(entry_point, "dist", None)
    origin = f" from {dist.name} {dist.version}" if dist is not None else ""
    return f"entry point {entry_point.name!r} = {entry_point.value!r} (group {entry_point.group}{origin})"


class ProcessorRegistry(Mapping[str, type[Processor]]):
    """Processor classes by type name, each with where it came from (for error messages)."""

    def __init__(self, processors: Iterable[type[Processor]] = (), *, origin: str | None = None):
        self._types: dict[str, type[Processor]] = {}
        self._origins: dict[str, str] = {}
        for cls in processors:
            self.register(cls, origin=origin)

    def __getitem__(self, type_name: str) -> type[Processor]:
        return self._types[type_name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def __repr__(self) -> str:
        return f"ProcessorRegistry({sorted(self._types)})"

    def origin(self, type_name: str) -> str:
        """Where the type came from: a module path, or the entry point that declared it."""
        return self._origins[type_name]

    def register(self, cls: type[Processor], *, origin: str | None = None) -> type[Processor]:
        """Add `cls` under its `type_name` (usable as a decorator). Registering the same
        class again is a no-op; another class under a taken name is an error."""
        problem = self._problem(cls)
        origin = origin or f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', repr(cls))}"
        if problem is not None:
            raise ProcessorRegistryError(f"{origin}: {problem}")
        self._types[cls.type_name] = cls
        self._origins.setdefault(cls.type_name, origin)
        return cls

    def _problem(self, cls, name: str | None = None) -> str | None:
        if not (isinstance(cls, type) and issubclass(cls, Processor)):
            return f"{cls!r} is not a subclass of flow.processor.Processor"
        if not cls.type_name:
            return f"{cls.__qualname__} has no type_name"
        if name is not None and name != cls.type_name:
            return (
                f"the entry point's name must be the processor's type name, "
                f"and {cls.__qualname__}.type_name is {cls.type_name!r}"
            )
        taken = self._types.get(cls.type_name)
        if taken is not None and taken is not cls:
            return f"type {cls.type_name!r} is already registered by {self._origins[cls.type_name]}"
        return None

    def load_entry_points(
        self, group: str = ENTRY_POINT_GROUP, *, entry_points: Callable[..., Iterable] | None = None
    ) -> None:
        """Register the processors of every entry point in `group`, all or none: any
        problem raises one `ProcessorRegistryError` naming every bad entry point, and
        registers nothing. `entry_points` replaces `importlib.metadata.entry_points`
        (for tests)."""
        entry_points = entry_points or importlib.metadata.entry_points
        found: list[tuple[object, type[Processor]]] = []
        problems: list[str] = []
        names: dict[str, str] = {}
        for entry_point in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
            described = _describe(entry_point)
            try:
                cls = entry_point.load()
            except Exception as error:  # noqa: BLE001 - any import failure of a plug-in is reported, named
                problems.append(f"{described}: cannot be loaded: {type(error).__name__}: {error}")
                continue
            problem = self._problem(cls, entry_point.name)
            if problem is None and entry_point.name in names and names[entry_point.name] != entry_point.value:
                problem = f"type {entry_point.name!r} is also declared by {names[entry_point.name]}"
            if problem is not None:
                problems.append(f"{described}: {problem}")
                continue
            names[entry_point.name] = entry_point.value
            found.append((entry_point, cls))
        if problems:
            raise ProcessorRegistryError(
                f"{len(problems)} processor entry point(s) of group {group!r} are unusable; fix or uninstall "
                "the distribution that declares each:\n  " + "\n  ".join(problems)
            )
        for entry_point, cls in found:
            self.register(cls, origin=_describe(entry_point))
