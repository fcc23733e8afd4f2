"""The `plans/` znodes: ZooKeeper I/O for `cluster.core.plans`. Thin: every
decision about a plan is made in `cluster.core.reassignment`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.plans import FailoverPlan
from .kazoo_errors import translates_kazoo
from .znodes import VersionedZnodes

if TYPE_CHECKING:
    from kazoo.client import KazooClient


@translates_kazoo
class PlanStore:
    def __init__(self, client: KazooClient, layout):
        self.client, self.layout = client, layout
        # A done plan never changes again: `all` reads it once.
        self.znodes: VersionedZnodes[FailoverPlan] = VersionedZnodes(
            client,
            "plan",
            layout.plans,
            layout.plan,
            FailoverPlan.from_json,
            FailoverPlan.to_json,
            lambda plan: plan.status == "done",
        )

    def create(self, plan: FailoverPlan) -> bool:
        """Write a new plan; False if one for that dead incarnation exists already."""
        return self.znodes.create(plan.plan_id, plan)

    def read(self, plan_id: str) -> tuple[FailoverPlan, int] | None:
        return self.znodes.read(plan_id)

    def replace(self, plan: FailoverPlan, version: int) -> None:
        """Versioned rewrite (a revised target, or status done); `OwnershipConflict`
        if the plan changed since `version`."""
        self.znodes.compare_and_set(plan.plan_id, version, replace(plan, revision=plan.revision + 1))

    def update(self, plan_id: str, change: Callable[[FailoverPlan], FailoverPlan]) -> FailoverPlan | None:
        """Read, change and rewrite one plan (its revision goes up by one; a change
        that returns the plan itself writes nothing); None when there is no such plan."""

        def revised(plan: FailoverPlan) -> FailoverPlan:
            new = change(plan)
            return plan if new is plan else replace(new, revision=plan.revision + 1)

        done = self.znodes.update(plan_id, revised)
        return done[0] if done is not None else None

    def all(self, *, strict: bool = False) -> dict[str, tuple[FailoverPlan, int]]:
        """Every readable plan znode; with `strict`, `UnreadableZnode` if one is not."""
        return self.znodes.all(strict=strict)

    def open_plans(self) -> dict[str, tuple[FailoverPlan, int]]:
        return {name: entry for name, entry in self.all().items() if entry[0].status == "open"}
