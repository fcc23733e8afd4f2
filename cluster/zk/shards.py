"""The `shards/` znodes: ZooKeeper I/O for `cluster.core.ownership`'s state machine.

Every change is a compare-and-set (`VersionedZnodes`): the znode is written only if
it is still at the version that was read. The new value is whatever the pure
transition in `ownership` returned; a `Refusal` becomes an exception here:
`FencedError` ("you are dead") when the caller is a stale incarnation or epoch,
`TransitionRefused` otherwise. A lost race (someone changed the znode since it was
read) is `OwnershipConflict`; nothing was written, and the caller re-reads and
decides again. A divvy move is one ZooKeeper transaction: check the parent's
version, set it SPLIT, create every child.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..core import ownership
from ..core.ownership import Refusal, ShardOwnership, ShardState
from ..core.plans import Move
from ..errors import FencedError, OwnershipConflict, TransitionRefused
from .kazoo_errors import translates_kazoo
from .znodes import VersionedZnodes

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)


@translates_kazoo
class ShardRegistry:
    def __init__(self, client: KazooClient, layout, *, wall_clock=time.time):
        self.client, self.layout, self._wall_clock = client, layout, wall_clock
        # A RETIRED shard never changes again: `all` reads it once.
        self.znodes: VersionedZnodes[ShardOwnership] = VersionedZnodes(
            client,
            "shard",
            layout.shards,
            layout.shard,
            ShardOwnership.from_json,
            ShardOwnership.to_json,
            lambda shard: shard.state is ShardState.RETIRED,
        )

    # -- reading ----------------------------------------------------------------------
    def read(self, shard: str) -> tuple[ShardOwnership, int] | None:
        return self.znodes.read(shard)

    def all(self, *, strict: bool = False) -> dict[str, tuple[ShardOwnership, int]]:
        """Every readable shard znode; with `strict`, `UnreadableZnode` if one is not."""
        return self.znodes.all(strict=strict)

    # -- writing -------------------------------------------------------------------------
    def create(self, shard: ShardOwnership) -> None:
        if not self.znodes.create(shard.shard, shard):
            raise OwnershipConflict(f"shard {shard.shard}", "no znode", "an existing shard znode")

    def compare_and_set(self, shard: str, version: int, new: ShardOwnership) -> int:
        return self.znodes.compare_and_set(shard, version, new)

    def transition(
        self, shard: str, change, *, expected_version: int | None = None, claimant: str | None = None
    ) -> tuple[ShardOwnership, int]:
        """Apply `change(current) -> ShardOwnership | Refusal` by compare-and-set.
        Returns the new value and version."""

        def decided(current: ShardOwnership) -> ShardOwnership:
            outcome = change(current)
            self._raise_refusal(outcome, claimant)
            return outcome

        done = self.znodes.update(shard, decided, expected_version=expected_version)
        if done is None:
            raise FencedError(shard, -1, None, incarnation=claimant, reason="the shard znode does not exist")
        return done

    @staticmethod
    def _raise_refusal(outcome, claimant: str | None) -> None:
        if isinstance(outcome, Refusal):
            if outcome.stale:
                raise FencedError(
                    outcome.shard, outcome.epoch, outcome.owner, incarnation=claimant, reason=outcome.reason
                )
            raise TransitionRefused(outcome)

    # -- the protocol's transitions ---------------------------------------------------------
    def create_home_shard(self, shard: str, owner: str, epoch: int, *, flow: str | None = None) -> ShardOwnership:
        created = ownership.new_shard(shard, owner, epoch, at=self._wall_clock(), flow=flow)
        self.create(created)
        return created

    def claim(self, shard: str, incarnation: str, epoch: int) -> ShardOwnership:
        """Check that `incarnation` at `epoch` still owns `shard`; "you are dead" if not."""
        entry = self.read(shard)
        if entry is None:
            raise FencedError(shard, -1, None, incarnation=incarnation, reason="the shard znode does not exist")
        refusal = ownership.check_claim(entry[0], incarnation, epoch)
        if refusal is not None:
            self._raise_refusal(refusal, incarnation)
        return entry[0]

    def mark_adopted(self, shard: str, by: str, epoch: int) -> ShardOwnership:
        return self.transition(shard, lambda c: ownership.adopted(c, by, epoch, at=self._wall_clock()), claimant=by)[0]

    def retire(self, shard: str, by: str, epoch: int) -> ShardOwnership:
        return self.transition(shard, lambda c: ownership.retire(c, by, epoch, at=self._wall_clock()), claimant=by)[0]

    def hold(self, shard: str, by: str, epoch: int, reason: str, *, step: str | None = None) -> ShardOwnership:
        """Mark the shard HELD by its adopter, with the reason and the step it acts on
        (`ownership.hold`)."""
        return self.transition(
            shard, lambda c: ownership.hold(c, by, epoch, at=self._wall_clock(), reason=reason, step=step), claimant=by
        )[0]

    def move(self, move: Move, *, reason: str = "", step: str | None = None) -> list[ShardOwnership]:
        """Carry out one planned move, the leader's decision `step`. Whole: one
        compare-and-set. Divvy: check the parent, set it SPLIT and create every child,
        all in one transaction."""
        entry = self.read(move.shard)
        if entry is None:
            raise TransitionRefused(Refusal(move.shard, "the shard znode does not exist", None, -1))
        current, version = entry
        at = self._wall_clock()
        if not move.slices:
            outcome = ownership.reassign(
                current,
                move.to,
                expected_epoch=move.from_epoch,
                at=at,
                reason=reason or f"{move.from_owner} died",
                step=step,
            )
            self._refuse_move(outcome)
            self.compare_and_set(move.shard, version, outcome)
            return [outcome]
        outcome = ownership.split(
            current,
            [(s.child, s.owner, s.low, s.high) for s in move.slices],
            expected_epoch=move.from_epoch,
            at=at,
            reason=reason,
            step=step,
        )
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
            raise OwnershipConflict(
                f"shard {move.shard}", f"version {version} and no children", f"{[type(r).__name__ for r in results]}"
            )
        return [parent, *children]

    @staticmethod
    def _refuse_move(outcome) -> None:
        # A move planned on an older view is a lost race for the leader, not a death.
        if isinstance(outcome, Refusal):
            if outcome.stale:
                raise OwnershipConflict(
                    f"shard {outcome.shard}", "the planned epoch", f"epoch {outcome.epoch} ({outcome.reason})"
                )
            raise TransitionRefused(outcome)

    def retire_split_parent(self, shard: str) -> ShardOwnership:
        entry = self.read(shard)
        if entry is None:
            raise TransitionRefused(Refusal(shard, "the shard znode does not exist", None, -1))
        children = {}
        for child in entry[0].children:
            child_entry = self.read(child)
            if child_entry is not None:
                children[child] = child_entry[0]
        return self.transition(
            shard,
            lambda c: ownership.retire_split_parent(c, children, at=self._wall_clock()),
            expected_version=entry[1],
        )[0]
