"""The `shards/` znodes: ZooKeeper I/O for `ownership`'s state machine.

Every change is a compare-and-set, as one ZooKeeper transaction: `check(version)`
then `set_data` (design step 3). The new value is whatever the pure transition in
`ownership` returned; a `Refusal` becomes an exception here: `FencedError` ("you
are dead") when the caller is a stale incarnation or epoch, `TransitionRefused`
otherwise. A lost race (someone changed the znode since it was read) is
`OwnershipConflict`; nothing was written, and the caller re-reads and decides again.
"""

from __future__ import annotations

import logging
import time

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from . import ownership
from .errors import FencedError, OwnershipConflict, TransitionRefused
from .ownership import Refusal, ShardOwnership, ShardState
from .plans import Move
from .znodes import FinalChildren

log = logging.getLogger(__name__)


class ShardRegistry:
    def __init__(self, client, layout, *, wall_clock=time.time):
        self.client, self.layout, self._wall_clock = client, layout, wall_clock
        # A RETIRED shard never changes again: `all` reads it once.
        self._children = FinalChildren(client, layout.shards, layout.shard,
                                       lambda name, data, stat: (ShardOwnership.from_json(data), stat.version),
                                       lambda entry: entry[0].state is ShardState.RETIRED)

    # -- reading ----------------------------------------------------------------------
    def read(self, shard: str) -> tuple[ShardOwnership, int] | None:
        try:
            data, stat = self.client.get(self.layout.shard(shard))
        except NoNodeError:
            return None
        return ShardOwnership.from_json(data), stat.version

    def all(self) -> dict[str, tuple[ShardOwnership, int]]:
        return self._children.read()

    # -- writing -------------------------------------------------------------------------
    def create(self, shard: ShardOwnership) -> None:
        try:
            self.client.create(self.layout.shard(shard.shard), shard.to_json(), makepath=True)
        except NodeExistsError:
            raise OwnershipConflict(shard.shard, "no znode", "an existing shard znode") from None

    def transition(self, shard: str, change, *, expected_version: int | None = None, claimant: str | None = None) -> tuple[ShardOwnership, int]:
        """Apply `change(current) -> ShardOwnership | Refusal` by compare-and-set.
        Returns the new value and version."""
        entry = self.read(shard)
        if entry is None:
            raise FencedError(shard, -1, None, incarnation=claimant, reason="the shard znode does not exist")
        current, version = entry
        if expected_version is not None and version != expected_version:
            raise OwnershipConflict(shard, f"version {expected_version}", f"version {version}")
        outcome = change(current)
        self._raise_refusal(outcome, claimant)
        return outcome, self._compare_and_set(shard, version, outcome)

    def _compare_and_set(self, shard: str, version: int, new: ShardOwnership) -> int:
        path = self.layout.shard(shard)
        transaction = self.client.transaction()
        transaction.check(path, version)
        transaction.set_data(path, new.to_json())
        results = transaction.commit()
        if any(isinstance(result, (BadVersionError, NoNodeError, RolledBackError)) for result in results):
            raise OwnershipConflict(shard, f"version {version}", "a newer version")
        return results[-1].version

    @staticmethod
    def _raise_refusal(outcome, claimant: str | None) -> None:
        if isinstance(outcome, Refusal):
            if outcome.stale:
                raise FencedError(outcome.shard, outcome.epoch, outcome.owner, incarnation=claimant, reason=outcome.reason)
            raise TransitionRefused(outcome)

    # -- the protocol's transitions ---------------------------------------------------------
    def create_home_shard(self, shard: str, owner: str, epoch: int) -> ShardOwnership:
        created = ownership.new_shard(shard, owner, epoch, at=self._wall_clock())
        self.create(created)
        return created

    def claim(self, shard: str, incarnation: str, epoch: int) -> ShardOwnership:
        """Check that `incarnation` at `epoch` still owns `shard`; "you are dead" if not."""
        entry = self.read(shard)
        current = entry[0] if entry else None
        if current is None:
            raise FencedError(shard, -1, None, incarnation=incarnation, reason="the shard znode does not exist")
        refusal = ownership.check_claim(current, incarnation, epoch)
        if refusal is not None:
            self._raise_refusal(refusal, incarnation)
        return current

    def mark_adopted(self, shard: str, by: str, epoch: int) -> ShardOwnership:
        return self.transition(shard, lambda c: ownership.adopted(c, by, epoch, at=self._wall_clock()), claimant=by)[0]

    def retire(self, shard: str, by: str, epoch: int) -> ShardOwnership:
        return self.transition(shard, lambda c: ownership.retire(c, by, epoch, at=self._wall_clock()), claimant=by)[0]

    def move(self, move: Move, *, reason: str = "") -> list[ShardOwnership]:
        """Carry out one planned move. Whole: one check+set. Divvy: check the parent,
        set it SPLIT and create every child, all in one transaction."""
        entry = self.read(move.shard)
        if entry is None:
            raise TransitionRefused(Refusal(move.shard, "the shard znode does not exist", None, -1))
        current, version = entry
        at = self._wall_clock()
        if not move.slices:
            outcome = ownership.reassign(current, move.to, expected_epoch=move.from_epoch, at=at,
                                         reason=reason or f"{move.from_owner} died")
            self._refuse_move(outcome)
            self._compare_and_set(move.shard, version, outcome)
            return [outcome]
        outcome = ownership.split(current, [(s.child, s.owner, s.low, s.high) for s in move.slices],
                                  expected_epoch=move.from_epoch, at=at)
        self._refuse_move(outcome)
        parent, children = outcome
        path = self.layout.shard(move.shard)
        transaction = self.client.transaction()
        transaction.check(path, version)
        transaction.set_data(path, parent.to_json())
        for child in children:
            transaction.create(self.layout.shard(child.shard), child.to_json())
        results = transaction.commit()
        if any(isinstance(result, Exception) for result in results):
            raise OwnershipConflict(move.shard, f"version {version} and no children", f"{[type(r).__name__ for r in results]}")
        return [parent, *children]

    @staticmethod
    def _refuse_move(outcome) -> None:
        # A move planned on an older view is a lost race for the leader, not a death.
        if isinstance(outcome, Refusal):
            if outcome.stale:
                raise OwnershipConflict(outcome.shard, "the planned epoch", f"epoch {outcome.epoch} ({outcome.reason})")
            raise TransitionRefused(outcome)

    def retire_split_parent(self, shard: str) -> ShardOwnership:
        children = {}
        entry = self.read(shard)
        if entry is None:
            raise TransitionRefused(Refusal(shard, "the shard znode does not exist", None, -1))
        for child in entry[0].children:
            child_entry = self.read(child)
            if child_entry is not None:
                children[child] = child_entry[0]
        return self.transition(shard, lambda c: ownership.retire_split_parent(c, children, at=self._wall_clock()),
                               expected_version=entry[1])[0]
