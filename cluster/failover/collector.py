"""The content collector: carries out `cluster.core.collection`'s decisions on the
leader. One round (`ContentCollector.collect`) reads a `CollectionView` in the
order that module's docstring argues for, decides with `plan_collection`, then
deletes: dead incarnations' content containers on HDFS, retired shards' Spark
staging directories, retired shard znodes and done plan znodes. Nothing here
raises; a failed deletion is one log line, retried on a later round.

A directory on HDFS is deleted only once every file in it is closed. A dead
incarnation leaves open the files it was writing when it died, and HDFS deleting a
file still open leaves its last block counted against each of its DataNodes for good
(`repositories.storage.leases`). So a round first asks for the lease recovery of
every file of a directory it would delete; the directory goes on a later round, once
they are all closed (a round asks again only for those still open), or after
`CLOSE_PATIENCE` with a warning (a file whose every DataNode is gone never closes).

Lock plan: none; one round runs at a time, on the leader's collector thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from replication.hdfs_content import hdfs_content_root
from repositories.storage import StorageFileNotFound, files_under
from repositories.storage.leases import still_open

from ..core.collection import DEFAULT_RETENTION, CollectionPlan, CollectionView, plan_collection
from ..errors import first_line

if TYPE_CHECKING:
    from repositories.storage import Storage

log = logging.getLogger(__name__)

# Seconds a directory waits for its files' lease recoveries before it is deleted with
# files still open (HDFS closes one within seconds while a DataNode of its last block
# lives; the NameNode's own lease expiry, an hour, is the backstop).
CLOSE_PATIENCE = 600.0


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
        clock: Callable[[], float] = time.monotonic,
        close_patience: float = CLOSE_PATIENCE,
    ):
        self.store, self.layout, self.storage = store, store.layout, storage
        self.retention, self.close_patience = retention, close_patience
        self._wall_clock, self._clock = wall_clock, clock
        # directory -> (when its files' recovery was first asked, the files still open then)
        self._closing: dict[str, tuple[float, list[str]]] = {}

    @property
    def waiting_to_close(self) -> list[str]:
        """The directories decided garbage whose files are not all closed yet."""
        return sorted(self._closing)

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
        directories = [
            (container_directory(self.layout, c), f"the content of dead incarnation {c}", "no shard can reference it")
            for c in plan.containers
        ] + [
            (f"{self.layout.hdfs_spark}/{s}", f"the Spark staging of shard {s}", "the shard is retired")
            for s in plan.staging
        ]
        self._closing = {path: asked for path, asked in self._closing.items() if path in {d[0] for d in directories}}
        for path, what, why in directories:
            if not keep_going():
                return plan
            self._delete_directory(path, what, why)
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

    def _closed(self, path: str, what: str) -> bool:
        """Every file under `path` is closed now (their leases asked for: see the module
        docstring), or has been waited for `close_patience`."""
        asked = self._closing.get(path)
        try:
            left = still_open(self.storage, asked[1] if asked else files_under(self.storage, path))
        except StorageFileNotFound:
            left = []  # gone already
        except Exception as error:  # noqa: BLE001 - asked again next round
            log.warning(
                "recovering the leases of %s (%s) failed, retried next round: %s", what, path, first_line(error)
            )
            return False
        first = asked[0] if asked else self._clock()
        if not left or self._clock() - first >= self.close_patience:
            self._closing.pop(path, None)
            if left:
                log.warning(
                    "deleting %s (%s) with %d file(s) still open %.0f s after their lease recovery was asked "
                    "(%s first): HDFS counts their last blocks against their DataNodes until the NameNode restarts",
                    what,
                    path,
                    len(left),
                    self._clock() - first,
                    left[0],
                )
            return True
        self._closing[path] = (first, left)
        log.info(
            "%s (%s) is deleted once its %d file(s) still open are closed (%s first): their leases are being recovered",
            what,
            path,
            len(left),
            left[0],
        )
        return False

    def _delete_directory(self, path: str, what: str, why: str) -> None:
        if not self._closed(path, what):
            return
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
