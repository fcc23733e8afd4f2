"""A queue's swap policy, pure: given the queue's numbers, what to do next.

The queue holds an in-memory `active` part (what consumers poll), a `staging` list
(FlowFiles that arrived while the queue was swapping, kept in arrival order so that
swapped FlowFiles are not overtaken), and swap files on storage. The shard asks
`plan_swap` after every change and carries out the answer; I/O never happens under
the queue's lock.

As in NiFi's FlowFile repository design: past the threshold, the lowest-priority
FlowFiles go to a swap file in batches of 10,000; a swap file comes back when there is room for it in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SWAP_THRESHOLD = 20_000
DEFAULT_SWAP_BATCH = 10_000


@dataclass(frozen=True, slots=True)
class SwapState:
    active: int
    staging: int
    swap_files: int
    in_flight: bool  # a swap-out or swap-in of this queue is being written or read
    threshold: int = DEFAULT_SWAP_THRESHOLD
    batch: int = DEFAULT_SWAP_BATCH


@dataclass(frozen=True, slots=True)
class Nothing:
    pass


@dataclass(frozen=True, slots=True)
class Demote:
    """Move the `count` lowest-priority FlowFiles of `active` to `staging` (memory only)."""

    count: int


@dataclass(frozen=True, slots=True)
class WriteSwapFile:
    """Write the `count` highest-priority FlowFiles of `staging` to a new swap file."""

    count: int


@dataclass(frozen=True, slots=True)
class ReadSwapFile:
    """Read the oldest swap file back into `active`."""


@dataclass(frozen=True, slots=True)
class Promote:
    """Move the first `count` FlowFiles of `staging` into `active` (no swap file left)."""

    count: int


SwapAction = Nothing | Demote | WriteSwapFile | ReadSwapFile | Promote
NOTHING = Nothing()


def plan_swap(state: SwapState) -> SwapAction:
    if state.in_flight:
        return NOTHING
    if state.staging >= state.batch:
        return WriteSwapFile(state.batch)
    if state.active > state.threshold:
        return Demote(state.active - state.threshold)
    if state.swap_files and state.active + state.batch <= state.threshold:
        return ReadSwapFile()
    if not state.swap_files and state.staging and state.active < state.threshold:
        return Promote(min(state.staging, state.threshold - state.active))
    return NOTHING


def in_swap_mode(state: SwapState) -> bool:
    """Whether new arrivals must wait in staging (something older is out of memory)."""
    return bool(state.swap_files or state.staging or state.in_flight)
