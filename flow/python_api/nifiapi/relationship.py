"""`Relationship(name, description, auto_terminated=False)`, as NiFi 2's Python API has it."""

from __future__ import annotations


class Relationship:
    def __init__(self, name: str, description: str, auto_terminated: bool = False):
        self.name = name
        self.description = description
        self.auto_terminated = auto_terminated

    def __repr__(self) -> str:
        return f"Relationship({self.name!r})"
