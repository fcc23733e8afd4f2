"""The content collector: carries out `cluster.core.collection`'s decisions on the
leader. One round (`ContentCollector.collect`) reads a `CollectionView` in the
order that module's docstring argues for, decides with `plan_collection`, then
deletes: dead incarnations' content containers on HDFS, retired shards' Spark
staging directories, retired shard znodes and done plan znodes. Nothing here
raises; a failed deletion is one log line, retried on a later round.

Lock plan: none; one round runs at a time, on the leader's collector thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from replication.hdfs_content import hdfs_content_root

from ..core.collection import DEFAULT_RETENTION, CollectionPlan, CollectionView, plan_collection
from ..errors import first_line

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)


def container_directory(layout, incarnation: str) -> str:
    """Everything incarnation `incarnation` wrote to HDFS content (`cluster.node.content`)."""
    return hdfs_content_root(layout.hdfs_cluster, incarnation)


def containers_directory(layout) -> str:
    """Where the incarnations' content directories are (`<root>/<cluster>/content`)."""
    return layout.hdfs_content


class ContentCollector:
    def __init__(
        self,
        store,
        storage: Storage,
        *,
        retention: float = DEFAULT_RETENTION,
        wall_clock: Callable[[], float] = time.time,
    ):
        self.store, self.layout, self.storage = store, store.layout, storage
        self.retention = retention
        self._wall_clock = wall_clock

    def read_view(self) -> CollectionView:
        # The order is the safety argument of `cluster.core.collection`: HDFS first,
        # then sync, then ZooKeeper, members last.
        containers = self._list_directories(containers_directory(self.layout))
        staging = self._list_directories(self.layout.hdfs_spark)
        self.store.sync()
        counter = self.store.incarnation_counter()
        # Strict: a container is garbage only if no shard references it, and an
        # unreadable shard might: one unreadable znode and the round deletes nothing.
        shards = self.store.shards.all(strict=True)
        plans = self.store.plans.all(strict=True)
        live = self.store.live_incarnations()
        return CollectionView(containers, counter, shards, live, self._wall_clock(), plans, staging)

    def collect(self, keep_going: Callable[[], bool] = lambda: True) -> CollectionPlan:
        """One round. Returns what it decided (whether or not each deletion worked).
        `keep_going()` is asked before every deletion: False ends the round."""
        try:
            plan = plan_collection(self.read_view(), self.retention)
        except Exception as error:  # noqa: BLE001 - decide nothing on a view we could not read
            log.warning("content collection skipped this round: %s: %s", type(error).__name__, first_line(error, 200))
            return CollectionPlan((), (), ())
        for container in plan.containers:
            if not keep_going():
                return plan
            self._delete_directory(
                container_directory(self.layout, container),
                f"the content of dead incarnation {container}",
                "no shard can reference it",
            )
        for shard in plan.staging:
            if not keep_going():
                return plan
            self._delete_directory(
                f"{self.layout.hdfs_spark}/{shard}", f"the Spark staging of shard {shard}", "the shard is retired"
            )
        for shard, version in plan.shards:
            if not keep_going():
                return plan
            self._delete_znode(self.layout.shard(shard), version, f"the znode of shard {shard}, retired")
        for plan_id, version in plan.plans:
            if not keep_going():
                return plan
            self._delete_znode(self.layout.plan(plan_id), version, f"the znode of plan {plan_id}, done")
        return plan

    def _list_directories(self, directory: str) -> tuple[str, ...]:
        try:
            return tuple(sorted(status.name for status in self.storage.list(directory) if status.is_dir))
        except FileNotFoundError:
            return ()  # nothing written there yet

    def _delete_directory(self, path: str, what: str, why: str) -> None:
        try:
            self.storage.delete(path, recursive=True)
        except Exception as error:  # noqa: BLE001 - collected on a later round
            log.warning("deleting %s (%s) failed, retried next round: %s", what, path, first_line(error, 200))
            return
        log.info("deleted %s (%s): %s", what, path, why)

    def _delete_znode(self, path: str, version: int, what: str) -> None:
        try:
            if not self.store.delete_if_unchanged(path, version):
                return  # gone already, or changed since read: decided again next round
        except Exception as error:  # noqa: BLE001 - collected on a later round
            log.warning("deleting %s (%s) failed, retried next round: %s", what, path, first_line(error, 200))
            return
        log.info("deleted %s more than %.0f s ago", what, self.retention)
