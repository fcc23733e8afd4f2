"""A processor's state: `Scope`, `StateManager`, `StateMap`, `StateException`, with
NiFi 2's names. Custody keeps a processor's state in its shard, written in the same
WAL transaction as the FlowFiles of the session that set it: what `setState` sets in
`transform` or `create` is kept exactly when that session's FlowFiles are. LOCAL and
CLUSTER name the same state (a shard moves whole from node to node on failover, so a
shard's state is already the cluster's)."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum


class Scope(Enum):
    CLUSTER = 1
    LOCAL = 2


class StateException(Exception):
    """The state could not be read or written."""


class StateMap:
    def __init__(self, values: dict[str, str], version: int | None = None):
        self._values = dict(values)
        self._version = version

    def getStateVersion(self) -> int | None:
        return self._version

    def get(self, key: str) -> str | None:
        return self._values.get(key)

    def toMap(self) -> dict[str, str]:
        return dict(self._values)


class StateManager:
    """`getState(scope)`, `setState(state, scope)`, `replace(old, new, scope)` and
    `clear(scope)` over `read` and `write` (the session's state, or, outside a session,
    functions that raise `StateException`)."""

    def __init__(self, read: Callable[[], dict[str, str]], write: Callable[[dict[str, str]], None]):
        self._read = read
        self._write = write

    def getState(self, scope: Scope) -> StateMap:
        values = self._read()
        return StateMap(values, None if not values else 1)

    def setState(self, state: dict, scope: Scope) -> None:
        if not isinstance(state, dict):
            raise StateException(f"a state is a dict of strings, not {type(state).__name__}")
        self._write({str(key): str(value) for key, value in state.items()})

    def replace(self, oldValue: StateMap, newValue: dict, scope: Scope) -> bool:
        if self._read() != oldValue.toMap():
            return False
        self.setState(newValue, scope)
        return True

    def clear(self, scope: Scope) -> None:
        self._write({})


def no_state_here(where: str) -> StateManager:
    """The state manager of a context with no session (onScheduled, onStopped): each use
    raises `StateException` saying where state is read and written in Custody."""

    message = (
        f"state cannot be read or written in {where} on Custody: a processor's state is kept with the "
        "FlowFiles of a session, so read and write it in transform() or create()"
    )

    def read() -> dict[str, str]:
        raise StateException(message)

    def write(values: dict[str, str]) -> None:
        raise StateException(message)

    return StateManager(read, write)
