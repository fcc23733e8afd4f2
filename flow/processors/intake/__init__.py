"""Exactly-once intake for sources: what a source has taken, kept in its processor state.

NiFi's sources delete their input (or answer their client) after the session commit,
so a crash in between offers the same input again under a new FlowFile uuid. Here a
source records what it takes in the same WAL transaction that creates the FlowFiles,
finishes the delete or move on its next run, and never takes a recorded input twice.

  format      the state layout, versioned and documented entry by entry; pack/unpack
  ledger      the pure decisions: what to take, list and remember; the next state;
              `hand_over` (a previous incarnation's state merged into the new one's)
  completion  finishing a taken file (delete or move), only if the path still holds it
  taken       `TakenFiles`: what a processor's running sessions hold, and the commit

Handing over (cluster): a restarted node's sources run on a new home shard. Before
they start, read each source processor's state in the previous incarnation's shard
(the `__state__/<processor id>` WAL record, `flow.shard`), merge it into the new
shard's with `hand_over(unpack(previous), unpack(current))` and commit the packed
result in the new shard's WAL. The sources then finish the old run's deletes and take
none of its files again.
"""

from __future__ import annotations

from collections.abc import Mapping

from .format import CommittedKey, FileIdentity, IntakeState, IntakeStateError, ListingMark, TakenFile, pack, unpack
from .ledger import hand_over
from .taken import TakenFiles

__all__ = [
    "CommittedKey",
    "FileIdentity",
    "HandsOverIntake",
    "IntakeState",
    "IntakeStateError",
    "ListingMark",
    "TakenFile",
    "TakenFiles",
    "hand_over",
    "pack",
    "unpack",
]


class HandsOverIntake:
    """Mixin of the processors whose state is an intake state: a node's new incarnation
    takes over what the previous one took (`Processor.hand_over_state`)."""

    @classmethod
    def hand_over_state(cls, previous: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str] | None:
        if not previous:
            return None
        owner = cls.type_name or cls.__name__
        return pack(hand_over(unpack(previous, owner), unpack(current, owner)))

    @classmethod
    def holds_state_to_hand_over(cls, state: Mapping[str, str]) -> bool:
        if not state:
            return False
        intake = unpack(state, cls.type_name or cls.__name__)
        return bool(intake.taken or intake.keys or intake.listing.paths or intake.listing.timestamp_ms >= 0)
