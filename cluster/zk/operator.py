"""What an operator asked of the cluster, kept in ZooKeeper so that it outlives the
node that was asked: processors' run states and the rolling deploy.

Under the cluster's root:

    operator/processors/<node>   persistent, JSON `core.run_states.NodeRunStates`:
                                 the processors an operator stopped (or started again)
                                 in the shards node <node> started, in any incarnation
    operator/deploy              persistent, JSON `core.rolls.Roll`: the cluster's last
                                 rolling deploy, its steps and outcome

Both change only by compare-and-set (`znodes.VersionedZnodes`); every decision about
them is made in `cluster.core.run_states` and `cluster.core.rolls`. Watches go through
here, so kazoo stays inside `cluster.zk`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.layout import ClusterLayout
from ..core.rolls import Roll
from ..core.run_states import NodeRunStates, ProcessorRunState
from ..errors import OwnershipConflict
from .kazoo_errors import translates_kazoo
from .znodes import VersionedZnodes

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger(__name__)

ROLL = "deploy"
CAS_ATTEMPTS = 20


def operator_root(layout: ClusterLayout) -> str:
    return f"{layout.root}/operator"


def run_states_parent(layout: ClusterLayout) -> str:
    return f"{operator_root(layout)}/processors"


def roll_path(layout: ClusterLayout) -> str:
    return f"{operator_root(layout)}/{ROLL}"


@translates_kazoo
class OperatorStore:
    def __init__(self, client: KazooClient, layout: ClusterLayout):
        self.client, self.layout = client, layout
        parent = run_states_parent(layout)
        self._run_states: VersionedZnodes[NodeRunStates] = VersionedZnodes(
            client,
            "run state",
            parent,
            lambda node: f"{parent}/{node}",
            NodeRunStates.from_json,
            NodeRunStates.to_json,
            lambda record: False,
        )
        root = operator_root(layout)
        self._rolls: VersionedZnodes[Roll] = VersionedZnodes(
            client, "deploy", root, lambda name: f"{root}/{name}", Roll.from_json, Roll.to_json, lambda roll: False
        )

    # -- processors' run states -------------------------------------------------------------
    def run_states(self, node: str) -> NodeRunStates:
        """The record of `node` (empty when an operator never stopped anything there)."""
        entry = self._run_states.read(node)
        return entry[0] if entry is not None else NodeRunStates(node)

    def run_states_version(self, node: str) -> int | None:
        """The znode version of `node`'s record, or None when it has none."""
        entry = self._run_states.read(node)
        return entry[1] if entry is not None else None

    def run_states_path(self, node: str) -> str:
        return self._run_states.path(node)

    def set_run_state(self, node: str, processor: str, entry: ProcessorRunState) -> NodeRunStates:
        """Record `processor`'s run state in `node`'s record (compare-and-set, retried
        on a lost race: the last operator's request wins)."""
        for _ in range(CAS_ATTEMPTS):
            current = self._run_states.read(node)
            if current is None:
                record = NodeRunStates(node).with_state(processor, entry)
                if not record.processors or self._run_states.create(node, record):
                    return record
                continue
            record = current[0].with_state(processor, entry)
            if record is current[0]:
                return record
            try:
                self._run_states.compare_and_set(node, current[1], record)
                return record
            except OwnershipConflict:
                continue
        raise OwnershipConflict(f"run state of node {node}", "a stable version", f"{CAS_ATTEMPTS} changes in a row")

    def watch_run_states(self, node: str, on_change: Callable[[NodeRunStates], bool | None]) -> None:
        """kazoo DataWatch on `node`'s record: `on_change(record)` now and at every
        change (an empty record when there is none). A record that does not parse is
        skipped with a warning. Returning False ends the watch."""

        def watch(data, stat, event=None):
            if data is None:
                return on_change(NodeRunStates(node))
            try:
                record = NodeRunStates.from_json(data)
            except (ValueError, KeyError, TypeError) as error:
                log.warning("the run-state record of node %s is unreadable and ignored: %s", node, error)
                return None
            return on_change(record)

        self.client.DataWatch(f"{run_states_parent(self.layout)}/{node}", watch)

    # -- the rolling deploy --------------------------------------------------------------------
    def roll(self) -> tuple[Roll, int] | None:
        """The cluster's last roll and its znode version; None when none was ever started."""
        return self._rolls.read(ROLL)

    def start_roll(self, roll: Roll, previous: tuple[Roll, int] | None) -> None:
        """Write a new roll over `previous` (as read: compare-and-set), or as the first
        one. `OwnershipConflict` when another was written meanwhile."""
        if previous is None:
            if not self._rolls.create(ROLL, roll):
                raise OwnershipConflict("deploy", "none", "one written meanwhile")
            return
        self._rolls.compare_and_set(ROLL, previous[1], roll)

    def replace_roll(self, roll: Roll, version: int) -> int:
        """The roll's next value, if it is still at `version`; `OwnershipConflict` if not."""
        return self._rolls.compare_and_set(ROLL, version, roll)

    def watch_roll(self, on_change: Callable[[Roll | None], bool | None]) -> None:
        """kazoo DataWatch on the roll: `on_change(roll or None)` now and at every change."""

        def watch(data, stat, event=None):
            if not data:
                return on_change(None)
            try:
                return on_change(Roll.from_json(data))
            except (ValueError, KeyError, TypeError) as error:
                log.warning("the deploy znode %s is unreadable and ignored: %s", roll_path(self.layout), error)
                return None

        self.client.DataWatch(roll_path(self.layout), watch)
