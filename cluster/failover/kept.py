"""The leader's care of kept directories: it finishes decommissions and collects what
was kept for nodes away longer than the retention, as `cluster.core.decommission`
decides.

One round (`KeptDirectories.collect`) reads a `KeptView` (HDFS first, then a sync,
then ZooKeeper, members last: the content collector's order, for its reason), decides
with `plan_kept`, and carries the plan out:

* for a decommissioned node that is gone, each kept directory in turn: read its
  sources' state (`kept_states`), hand the idempotency keys to a survivor (this
  leader's own home shard, `survivor()`; see `cluster.node.hand_over.take_over_running`),
  log a warning naming what is dropped, note both in the node's record, and delete the
  directory; then the node's retired shard znodes, done plan znodes and the
  processors' run states an operator set on it (versioned deletes); then mark the
  record finished;
* for a kept directory past the retention: a warning naming what is dropped, and the
  directory deleted.

Before each directory is deleted, the node is looked up again: one that joined since
the view was read (or, for a decommissioned one, was connected again) keeps it, and
its own hand-over reads it. What remains is a node joining in the moment between that
look and the delete: its hand-over then finds the directory gone and starts without
it, as the warning already said it would. A round stops before its next step once
`keep_going()` says the leadership is over; nothing is lost by stopping anywhere, as
the next leader decides again from what is there. Nothing here raises: a failure is
one log line, and the next round tries again.

Rounds run on a thread of their own while this member leads (`run`): every `interval`
seconds, every `busy_interval` while a decommission is unfinished, and at once when
a record is written or deleted (a watch on `decommissioned/`).

Lock plan: none; one round runs at a time, on the thread `run` is called on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from repositories.flowfile import (
    CorruptJournalError,
    CorruptRecordError,
    CorruptSnapshotError,
    NotAWriteAheadLogError,
    UnknownSerDeError,
    WalDamagedError,
)

from ..core.collection import DEFAULT_INTERVAL
from ..core.decommission import (
    DEFAULT_ABSENT_NODE_RETENTION,
    Collect,
    DecommissionSteps,
    KeptDirectory,
    KeptPlan,
    KeptView,
    finished,
    kept_directories,
    node_of,
    plan_kept,
    with_notes,
)
from ..errors import first_line
from ..zk.decommissions import DecommissionRecords
from ..zk.operator import OperatorStore
from .kept_states import (
    HandOverPostponed,
    WalChanged,
    earlier_states,
    processor_types,
    sources_states,
    split_state,
)

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)

BUSY_INTERVAL = 5.0  # seconds between rounds while a decommission is not finished
# A WAL that reads as damaged stays so: nobody writes a retired shard's WAL any more.
DAMAGED = (
    WalDamagedError,
    CorruptJournalError,
    CorruptSnapshotError,
    CorruptRecordError,
    NotAWriteAheadLogError,
    UnknownSerDeError,
)


class KeptDirectories:
    def __init__(
        self,
        store,
        storage: Storage,
        *,
        retention: float = DEFAULT_ABSENT_NODE_RETENTION,
        survivor: Callable[[], object | None] = lambda: None,
        wall_clock: Callable[[], float] = time.time,
        record: Callable[[str, str], None] = lambda kind, detail: None,
    ):
        self.store, self.storage, self.layout = store, storage, store.layout
        self.records = DecommissionRecords(store.client, store.layout)
        self.operator = OperatorStore(store.client, store.layout)
        self.retention = retention
        self._survivor = survivor  # -> this member's home shard runtime, None when it has none
        self._wall_clock = wall_clock
        self._record = record  # the leader's story

    # -- the view --------------------------------------------------------------------------
    def read_view(self) -> KeptView:
        try:
            directories = [status.name for status in self.storage.list(self.layout.hdfs_shards) if status.is_dir]
        except FileNotFoundError:
            directories = []
        self.store.sync()
        shards = self.store.shards.all(strict=True)
        plans = self.store.plans.all(strict=True)
        decommissions = self.records.all()
        live = self.store.live_incarnations()
        kept = tuple(kept_directories(directories, {name: entry[0] for name, entry in shards.items()}, live))
        modified = {}
        for directory in kept:
            newest = self._newest_modification(directory)
            if newest is not None:
                modified[directory.name] = newest
        return KeptView(tuple(directories), kept, modified, shards, plans, live, decommissions, self._wall_clock())

    def _newest_modification(self, directory: KeptDirectory) -> float | None:
        """The newest modification time of anything in the directory (None: unreadable now)."""
        try:
            path = f"{self.layout.hdfs_shards}/{directory.name}"
            newest = self.storage.status(path).modified
            pending = [path]
            while pending:
                for entry in self.storage.list(pending.pop()):
                    newest = max(newest, entry.modified)
                    if entry.is_dir:
                        pending.append(entry.path)
            return newest
        except Exception as error:  # noqa: BLE001 - decided again next round
            log.info("could not read the times of %s: %s", directory.name, first_line(error, 200))
            return None

    # -- one round -----------------------------------------------------------------------------
    def collect(self, keep_going: Callable[[], bool] = lambda: True) -> KeptPlan:
        try:
            plan = plan_kept(self.read_view(), self.retention)
        except Exception as error:  # noqa: BLE001 - decide nothing on a view we could not read
            log.warning("kept directories: round skipped: %s: %s", type(error).__name__, first_line(error, 200))
            return KeptPlan()
        for steps in plan.decommissions:
            if not keep_going():
                return plan
            self._decommission(steps, keep_going)
        for collect in plan.collect:
            if not keep_going():
                return plan
            self._collect(collect)
        return plan

    def _decommission(self, steps: DecommissionSteps, keep_going: Callable[[], bool]) -> None:
        node = steps.node
        for directory in steps.hand_over:
            if not keep_going() or not self._still(node, decommissioned=True):
                return
            notes = self._hand_over(directory)
            if notes is None:
                return  # postponed or failed: the rest waits for a later round
            self._note(node, notes)
            if not self._delete_directory(directory, "its sources' state was handed over or dropped"):
                return
        for shard, version in steps.shards:
            if not keep_going() or not self._delete_znode(
                self.layout.shard(shard), version, f"retired shard {shard} of decommissioned {node}"
            ):
                return
        for plan_id, version in steps.plans:
            if not keep_going() or not self._delete_znode(
                self.layout.plan(plan_id), version, f"done plan {plan_id} of decommissioned {node}"
            ):
                return
        if steps.finish and not self._forget_run_states(node, keep_going):
            return
        if steps.finish and keep_going():
            at = self._wall_clock()
            try:
                if self.records.update(node, lambda record: finished(record, at)) is None:
                    return  # connected again meanwhile
            except Exception as error:  # noqa: BLE001 - finished on a later round
                log.info("marking %s decommissioned failed, retried: %s", node, first_line(error, 200))
                return
            log.info(
                "node %s is decommissioned: nothing of it is left in the cluster; it joins again only after "
                "`custody node connect %s`",
                node,
                node,
            )
            self._record("decommissioned", node)

    def _hand_over(self, directory: KeptDirectory) -> list[str] | None:
        """Hand the directory's idempotency keys to the survivor and say what is dropped;
        the notes for the node's record, or None when it must wait for a later round."""
        path = f"{self.layout.hdfs_shards}/{directory.name}"
        node = directory.node
        try:
            types = processor_types(self.storage, path)
            states = sources_states(earlier_states(self.storage, path), types)
        except WalChanged as error:
            log.info("%s: %s; read again next round", directory.name, error)
            return None
        except DAMAGED as error:
            # Damaged for good (a retired shard's WAL is written by nobody): what it holds is lost anyway.
            note = f"{directory.name}: dropped its sources' state: its WAL cannot be read ({first_line(error, 200)})"
            log.warning("decommissioned %s: %s", node, note)
            return [note]
        except Exception as error:  # noqa: BLE001 - HDFS trouble: next round
            log.info("reading %s failed, retried next round: %s", path, first_line(error, 200))
            return None
        dropped, portable = [], {}
        for processor, state in sorted(states.items()):
            split = split_state(processor, state, node)
            what = f"{types.get(processor) or 'processor'} {processor!r}"
            if split.dropped:
                dropped.append(f"{directory.name}: dropped {what}: {split.dropped}")
            if split.portable:
                portable[processor] = (
                    types.get(processor, ""),
                    split.portable,
                    f"{what} ({split.keys} idempotency key(s))",
                )
        handed = []
        if portable:
            outcomes = self._hand_to_survivor(directory, portable)
            if outcomes is None:
                return None
            for processor, (taken, detail) in sorted(outcomes.items()):
                line = f"{directory.name}: {'handed' if taken else 'dropped'} {portable[processor][2]}: {detail}"
                (handed if taken else dropped).append(line)
        for line in handed:
            log.info("decommissioned %s: %s", node, line)
        for line in dropped:
            log.warning("decommissioned %s: %s", node, line)
        return handed + dropped or [f"{directory.name}: its sources held nothing to hand over"]

    def _hand_to_survivor(self, directory: KeptDirectory, portable: dict) -> dict[str, tuple[bool, str]] | None:
        """processor -> (taken, what became of it), from the survivor; None: try again later."""
        runtime = self._survivor()
        take = getattr(runtime, "take_over_states", None)
        if take is None:
            return {processor: (False, "no shard of this leader takes it over") for processor in portable}
        try:
            return take(directory.shard, {processor: (kind, state) for processor, (kind, state, _) in portable.items()})
        except HandOverPostponed as error:
            log.info("%s: handing its keys over waits: %s", directory.name, first_line(error, 200))
        except Exception as error:  # noqa: BLE001 - the survivor's WAL or session: next round
            log.warning(
                "%s: handing its keys over failed, retried next round: %s: %s",
                directory.name,
                type(error).__name__,
                first_line(error, 200),
            )
        return None

    def _collect(self, collect: Collect) -> None:
        directory = collect.directory
        if not self._still(directory.node, decommissioned=False):
            return
        path = f"{self.layout.hdfs_shards}/{directory.name}"
        try:
            dropped = []
            states = sources_states(earlier_states(self.storage, path), processor_types(self.storage, path))
            for processor, state in sorted(states.items()):
                split = split_state(processor, state, directory.node)
                parts = [split.dropped] if split.dropped else []
                parts += [f"{split.keys} idempotency key(s)"] if split.keys else []
                if parts:
                    dropped.append(f"{processor!r}: {'; '.join(parts)}")
            what = "; ".join(dropped) or "nothing its sources had taken"
        except Exception as error:  # noqa: BLE001 - collected all the same: the retention is the last word
            what = f"whatever its sources had taken (its WAL could not be read: {first_line(error, 200)})"
        days = collect.absent_for / 86400
        log.warning(
            "node %s has been away for %.1f days, longer than the retention of %.1f days ([node] "
            "absent_node_retention): the directory %s kept for its sources' hand-over is deleted, and with "
            "it %s",
            directory.node,
            days,
            self.retention / 86400,
            directory.name,
            what,
        )
        if self._delete_directory(directory, "its node was away longer than the retention"):
            self._record("collect-kept", f"{directory.name} of {directory.node}, away {days:.1f} days")

    # -- steps ---------------------------------------------------------------------------------
    def _still(self, node: str, *, decommissioned: bool) -> bool:
        """The node is still away (and still decommissioned, or still not): looked up again
        just before a directory kept for it is deleted."""
        try:
            if any(node_of(incarnation) == node for incarnation in self.store.live_incarnations()):
                return False
            return (self.records.mark(node) is not None) == decommissioned
        except Exception as error:  # noqa: BLE001 - next round
            log.info("looking %s up failed, retried next round: %s", node, first_line(error, 200))
            return False

    def _note(self, node: str, notes: list[str]) -> None:
        try:
            self.records.update(node, lambda record: with_notes(record, notes))
        except Exception as error:  # noqa: BLE001 - advisory: the log has them
            log.info("noting what was done for %s failed: %s", node, first_line(error, 200))

    def _delete_directory(self, directory: KeptDirectory, why: str) -> bool:
        path = f"{self.layout.hdfs_shards}/{directory.name}"
        try:
            self.storage.delete(path, recursive=True)
        except Exception as error:  # noqa: BLE001 - next round
            log.warning("deleting %s failed, retried next round: %s", path, first_line(error, 200))
            return False
        log.info("deleted %s, kept for %s: %s", path, directory.node, why)
        return True

    def _forget_run_states(self, node: str, keep_going: Callable[[], bool]) -> bool:
        """Delete the processors' run states an operator set on `node`
        (`zk.operator`): a decommissioned node leaves nothing behind, and joins again
        after `connect` as a new one. False: not now (a later round retries)."""
        if not keep_going():
            return False
        try:
            version = self.operator.run_states_version(node)
        except Exception as error:  # noqa: BLE001 - next round
            log.warning("reading the run states of %s failed, retried next round: %s", node, first_line(error, 200))
            return False
        return version is None or self._delete_znode(
            self.operator.run_states_path(node), version, f"the processors' run states of decommissioned {node}"
        )

    def _delete_znode(self, path: str, version: int, what: str) -> bool:
        try:
            if self.store.delete_if_unchanged(path, version):
                log.info("deleted the znode of %s", what)
            return True  # gone, or changed since read: either way not this round's to delete
        except Exception as error:  # noqa: BLE001 - next round
            log.warning("deleting %s (%s) failed, retried next round: %s", what, path, first_line(error, 200))
            return False

    # -- while leading ---------------------------------------------------------------------
    def run(
        self,
        leadership_over: threading.Event,
        may_act: Callable[[], bool],
        *,
        first: float = 0.0,
        interval: float = DEFAULT_INTERVAL,
        busy_interval: float = BUSY_INTERVAL,
    ) -> None:
        """Rounds until `leadership_over` is set (see the module docstring)."""
        wake = threading.Event()

        def changed(_names) -> bool | None:
            wake.set()
            return False if leadership_over.is_set() else None

        try:
            self.records.watch_names(changed)
        except Exception as error:  # noqa: BLE001 - rounds still come every interval
            log.info("not watching %s: %s", self.records.parent, first_line(error, 200))

        def keep_going() -> bool:
            return not leadership_over.is_set() and may_act()

        wait = first
        while _wait(wake, leadership_over, wait):
            if not keep_going():
                wait = busy_interval
                continue
            wait = busy_interval if self.collect(keep_going).busy else interval


def _wait(wake: threading.Event, over: threading.Event, seconds: float) -> bool:
    """Wait up to `seconds`, or until `wake` is set (and clear it); False once `over` is set."""
    deadline = time.monotonic() + seconds
    while not over.is_set():
        left = deadline - time.monotonic()
        if left <= 0 or wake.wait(min(left, 0.5)):
            wake.clear()
            return not over.is_set()
    return False
