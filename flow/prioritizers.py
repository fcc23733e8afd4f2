"""Queue prioritizers: each turns a FlowFile into part of a sort key (smaller first).

A queue combines its prioritizers in order, then breaks ties by arrival (FIFO), so
an empty list means first-in first-out. `PriorityAttribute` follows NiFi's
PriorityAttributePrioritizer: the `priority` attribute, numbers before text, smaller
first, FlowFiles without it last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .flowfile import FlowFile

KeyFunction = Callable[[FlowFile], object]


def oldest_first(flowfile: FlowFile) -> int:
    return flowfile.entry_date


def newest_first(flowfile: FlowFile) -> int:
    return -flowfile.entry_date


def priority_attribute(flowfile: FlowFile) -> tuple:
    value = flowfile.attributes.get("priority")
    if value is None:
        return (2, 0, "")
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0, value)


PRIORITIZERS: dict[str, KeyFunction | None] = {
    "fifo": None,
    "first_in_first_out": None,
    "oldest_first": oldest_first,
    "oldest": oldest_first,
    "newest_first": newest_first,
    "newest": newest_first,
    "priority_attribute": priority_attribute,
}


def key_function(names: Sequence[str]) -> KeyFunction | None:
    """One key function for a chain of prioritizer names; None means plain FIFO."""
    functions = []
    for name in names:
        normalized = name.strip().lower().replace("-", "_").replace(" ", "_")
        normalized = normalized.removesuffix("_prioritizer").removesuffix("prioritizer")
        aliases = {
            "firstinfirstout": "fifo",
            "oldestflowfilefirst": "oldest_first",
            "newestflowfilefirst": "newest_first",
            "priorityattribute": "priority_attribute",
        }
        normalized = aliases.get(normalized.replace("_", ""), normalized)
        if normalized not in PRIORITIZERS:
            raise ValueError(
                f"unknown prioritizer {name!r}; known: fifo, oldest_first, newest_first, priority_attribute"
            )
        function = PRIORITIZERS[normalized]
        if function is None:
            break  # FIFO decides everything after it: arrival order is unique
        functions.append(function)
    if not functions:
        return None
    if len(functions) == 1:
        return functions[0]
    return lambda flowfile: tuple(function(flowfile) for function in functions)
