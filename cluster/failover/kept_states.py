"""The sources' state in a shard directory kept for a node's hand-over: reading it, and
splitting it into what a survivor can use and what belongs to the node's machine.

A source records what it took in its processor state, in the intake layout
(`flow.processors.intake.format`): files taken and not yet deleted or moved (GetFile,
FetchFile) and ListFile's listing mark name files on the node's own machine, which no
other node can finish or list; ListenHTTP's idempotency keys name requests, which a
client may retry at any node. So when a node is decommissioned (`cluster.core.decommission`)
its keys are handed to a survivor, which then answers a retry with a key it already
committed instead of taking the data twice, and the rest is dropped with a warning that
names what the node had taken: if it is ever connected again, its sources take those
files again. `split_state` decides, without I/O.

`earlier_states` reads a kept (or earlier) shard's WAL, read-only; the hand-over of a
node's next incarnation (`cluster.node.hand_over`) reads its earlier shards with it too.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flow.processor import Processor
from flow.processors import PROCESSOR_TYPES
from flow.processors.intake import IntakeState, IntakeStateError, pack, unpack
from flow.shard import states_of
from repositories.flowfile import FlowFileSerDe, list_wal_files, read_state

from ..core.flows import FlowSnapshot
from ..core.layout import ClusterLayout
from ..errors import ClusterError

if TYPE_CHECKING:
    from repositories.storage import Storage

SHOWN = 5  # paths named in a warning; the rest are counted


class WalChanged(Exception):
    """The earlier shard's WAL was checkpointed while it was read: read it again."""


class HandOverPostponed(ClusterError):
    """The survivor cannot take the state now (its sources are still held for its own
    hand-over, or a processor is stopping); asked again on a later round."""


def _checkpoint_marks(storage: Storage, wal: str) -> tuple:
    """What a checkpoint changes (the snapshot, a partial one, the journals' names)
    and what appends do not: a read between two equal marks saw one consistent WAL."""
    return tuple(
        sorted(
            (status.name, status.length, status.modified) if not status.name.startswith("journal") else (status.name,)
            for status in storage.list(wal)
        )
    )


def earlier_states(storage: Storage, directory: str) -> dict[str, dict[str, str]]:
    """Every processor state in the WAL of the shard at `directory`, by processor id.
    Its adopter may checkpoint that WAL meanwhile (a new snapshot, journals of the same
    names begun again): `WalChanged` then, and the caller reads again."""
    wal = ClusterLayout.wal_directory(directory)
    if not storage.exists(wal):
        return {}
    before = _checkpoint_marks(storage, wal)
    state = read_state(storage, wal, list_wal_files(storage, wal), FlowFileSerDe(), None)
    if _checkpoint_marks(storage, wal) != before:
        raise WalChanged(f"the WAL of {directory} was checkpointed while it was read")
    return states_of(state.records.values())


def processor_types(storage: Storage, directory: str) -> dict[str, str]:
    """Processor id -> type in the flow the shard at `directory` was written under
    (its `flow.json`); empty when it has none, or one that cannot be read."""
    path = ClusterLayout.flow_file(directory)
    try:
        if not storage.exists(path):
            return {}
        document = FlowSnapshot.decode(storage.read(path)).document
    except ValueError:
        return {}
    return {
        str(p["id"]): str(p.get("type", ""))
        for p in document.get("processors", ())
        if isinstance(p, dict) and "id" in p
    }


def hands_over(kind: str | None) -> bool:
    """Whether a processor of type `kind` hands its state over to its node's next
    incarnation (`Processor.hand_over_state`); the others' state stays with its shard and
    is no one's to warn about. A type this release does not ship (a package's, or a shard
    without its flow.json) counts as handing over: `split_state` then judges its state."""
    cls = PROCESSOR_TYPES.get(kind or "")
    return cls is None or cls.hand_over_state.__func__ is not Processor.hand_over_state.__func__


def sources_states(states: dict[str, dict[str, str]], types: dict[str, str]) -> dict[str, dict[str, str]]:
    """The states, among a shard's processors' `states`, of those that hand theirs over."""
    return {processor: state for processor, state in states.items() if hands_over(types.get(processor))}


@dataclass(frozen=True)
class SplitState:
    portable: dict[str, str] | None  # the part a survivor takes (idempotency keys), packed; None: nothing
    keys: int  # how many keys that is
    dropped: str | None  # what belongs to the node's machine, for the warning; None: nothing


def split_state(processor: str, state: Mapping[str, str], machine: str) -> SplitState:
    """Split processor `processor`'s state, kept for node `machine`, into its
    idempotency keys (which any node can use) and what names `machine`'s files."""
    if not state:
        return SplitState(None, 0, None)
    try:
        intake = unpack(state, processor)
    except IntakeStateError as error:
        return SplitState(None, 0, f"its state, which is not a source's intake state and is dropped whole ({error})")
    portable = pack(IntakeState(keys=intake.keys)) if intake.keys else None
    parts = []
    if intake.taken:
        paths = sorted(taken.path for taken in intake.taken.values())
        more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
        parts.append(
            f"{len(paths)} file(s) it took on {machine}'s machine and had not deleted or moved yet "
            f"({', '.join(paths[:SHOWN])}{more}): if {machine} is connected again, it takes them again"
        )
    if intake.listing.timestamp_ms >= 0:
        at = datetime.datetime.fromtimestamp(intake.listing.timestamp_ms / 1000, datetime.UTC)
        parts.append(
            f"its listing mark on {machine}'s machine (files modified up to {at:%Y-%m-%d %H:%M:%S} UTC "
            "listed): if it is connected again, it lists them again"
        )
    return SplitState(portable, len(intake.keys), "; ".join(parts) or None)
