"""The layout of ExecuteStateless's processor state: the states of its sub-flow's processors.

A sub-flow's processors keep state as any processor does (GetFile's taken files,
ListFile's listing mark, GenerateFlowFile's sequence). ExecuteStateless commits all of
them as its own state, in the same WAL transaction as the FlowFiles the sub-flow's
trigger produced, so a crash keeps both or neither, and a restarted node's sub-flow
starts from them. Layout version 1, a map of text to text:

    key                              value
    "stateless.layout"               "1"
    <processor id> NUL <key>         <value>: one entry of that sub-flow processor's state

A sub-flow processor id never contains NUL (refused when packing); <key> and <value>
are the processor's own. An empty state (nothing committed yet) has no entry at all.
Another version, or a key that is not the layout key and holds no NUL, is refused with
`SubflowStateError`: a sub-flow started without its state could take its input again.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import FlowError

LAYOUT_KEY = "stateless.layout"
VERSION = 1
SEPARATOR = "\0"


class SubflowStateError(FlowError):
    """ExecuteStateless's state cannot be read as its sub-flow's processor states."""


def pack(states: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    packed = {LAYOUT_KEY: str(VERSION)}
    for processor_id, state in states.items():
        if SEPARATOR in processor_id:
            raise ValueError(f"sub-flow processor id {processor_id!r} contains NUL")
        for key, value in state.items():
            packed[f"{processor_id}{SEPARATOR}{key}"] = value
    return packed


def unpack(state: Mapping[str, str], owner: str = "") -> dict[str, dict[str, str]]:
    if not state:
        return {}
    if state.get(LAYOUT_KEY) != str(VERSION):
        raise SubflowStateError(
            f"{owner or 'ExecuteStateless'}: its state has sub-flow state layout "
            f"{state.get(LAYOUT_KEY)!r}, this custody reads version {VERSION}: run the "
            "version that wrote it, or clear the processor's state (the sub-flow's sources may "
            "then take their input again)"
        )
    states: dict[str, dict[str, str]] = {}
    for key, value in state.items():
        if key == LAYOUT_KEY:
            continue
        processor_id, separator, inner = key.partition(SEPARATOR)
        if not separator:
            raise SubflowStateError(
                f"{owner or 'ExecuteStateless'}: state entry {key[:60]!r} names no sub-flow "
                "processor (<processor id> NUL <key>)"
            )
        states.setdefault(processor_id, {})[inner] = value
    return states
