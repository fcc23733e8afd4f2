"""Small ZooKeeper reads shared by the registries (shards, plans)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kazoo.exceptions import NoNodeError

T = TypeVar("T")


def read_children(client, parent: str, read: Callable[[str], T | None]) -> dict[str, T]:
    """`read(name)` for every child of `parent`, in name order, leaving out children
    that vanished between the listing and the read (`read` returned None). A missing
    parent reads as empty: nothing was ever written there."""
    try:
        names = client.get_children(parent)
    except NoNodeError:
        return {}
    found = {}
    for name in sorted(names):
        entry = read(name)
        if entry is not None:
            found[name] = entry
    return found
