"""Where a node keeps the processors' run states an operator set, and how a running
shard follows them (the model and the scope: `cluster.core.run_states`).

    keeper = LocalRunStates(data_dir)                 # a standalone node: a file
    keeper = ZooKeeperRunStates(lambda: store)        # a clustered node: ZooKeeper
    keeper.stopped(shard)                             # what a new engine starts stopped
    keeper.record(shard, "put", STOPPED, by="n1-5")   # before the engine is told
    RunStateFollower(engine, shard, keeper).start()   # changes made elsewhere, applied

A standalone node keeps them in `run-states.json` in its data directory, written
whole to a temporary file, fsynced, renamed over the old one, and the directory
fsynced, so that a crash leaves the old record or the new one.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from flow.errors import ProcessorStateError
from repositories.storage.local import FILE_MODE, fsync_directory

from ..core.run_states import NodeRunStates, ProcessorRunState, origin_node, reconcile, scope_text
from ..errors import ClusterError

log = logging.getLogger(__name__)

RETRY_S = 2.0  # a processor wanted running but still stopping is tried again this often
LOCAL_FILE = "run-states.json"


class RunStatesUnreadable(ClusterError):
    """The run-state file does not parse: a start is refused rather than running every
    processor an operator stopped."""


class LocalRunStates:
    """A standalone node's run states: one record, in a file of its data directory."""

    def __init__(self, data_dir: str, node: str = "local", *, wall_clock=time.time):
        self.path = os.path.join(data_dir, LOCAL_FILE)
        self.node = node
        self._wall_clock = wall_clock
        self._lock = threading.Lock()

    def _read(self) -> NodeRunStates:
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return NodeRunStates(self.node)
        try:
            return NodeRunStates.from_json(data)
        except (ValueError, KeyError, TypeError) as error:
            # Refuse rather than start every processor an operator stopped.
            raise RunStatesUnreadable(
                f"{self.path} is unreadable ({error}): fix it, or delete it to start every processor"
            ) from None

    def stopped(self, shard: str) -> frozenset[str]:
        with self._lock:
            return self._read().stopped()

    def scope(self, shard: str) -> str:
        return f"this node: kept in {self.path} across restarts"

    def record(self, shard: str, processor: str, state: str, *, by: str) -> None:
        with self._lock:
            current = self._read()
            changed = current.with_state(processor, ProcessorRunState(state, self._wall_clock(), by, shard))
            if changed is current:
                return
            partial = self.path + ".partial"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            try:
                os.write(fd, changed.to_json())
                os.fsync(fd)
            finally:
                os.close(fd)
            # The new record replaces the old whole: a crash leaves one or the other.
            os.replace(partial, self.path)
            fsync_directory(os.path.dirname(self.path))


class ZooKeeperRunStates:
    """A clustered node's run states: per node, in ZooKeeper (`cluster.zk.operator`).
    `store` gives the `ClusterStore` to use (the member's, or the node's own reader)."""

    def __init__(self, store: Callable[[], object], *, wall_clock=time.time):
        self._store = store
        self._wall_clock = wall_clock

    def stopped(self, shard: str) -> frozenset[str]:
        return self._store().operator.run_states(origin_node(shard)).stopped()

    def scope(self, shard: str) -> str:
        return scope_text(origin_node(shard))

    def record(self, shard: str, processor: str, state: str, *, by: str) -> None:
        self._store().operator.set_run_state(
            origin_node(shard), processor, ProcessorRunState(state, self._wall_clock(), by, shard)
        )

    def watch(self, shard: str, on_change: Callable[[frozenset[str]], bool | None]) -> None:
        self._store().operator.watch_run_states(origin_node(shard), lambda record: on_change(record.stopped()))


class RunStateFollower:
    """Applies to one running engine the run states recorded elsewhere (an operator's
    request to another node, for a shard of the same node): on every change of the
    record, and again every `RETRY_S` while a processor wanted running is still
    stopping. Runs on a thread of its own (a watch callback must not wait for tasks),
    until `ended()` is true (the shard's runtime stopped) or `stop()`."""

    def __init__(self, engine, shard: str, keeper: ZooKeeperRunStates, *, ended: Callable[[], bool] = lambda: False):
        self.engine, self.shard, self.keeper = engine, shard, keeper
        self._ended = ended
        self._wanted: frozenset[str] | None = None
        self._changed = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    def start(self) -> RunStateFollower:
        threading.Thread(target=self._run, name=f"run-states {self.shard}", daemon=True).start()
        self.keeper.watch(self.shard, self._on_change)
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._changed.set()

    def _over(self) -> bool:
        return self._stopped.is_set() or self._ended()

    def _on_change(self, stopped: frozenset[str]) -> bool | None:
        if self._over():
            return False
        with self._lock:
            self._wanted = stopped
        self._changed.set()
        return None

    def _run(self) -> None:
        retry = False
        while not self._over():
            # Woken by a change; otherwise look again now and then (a retry, or the end).
            if not self._changed.wait(RETRY_S if retry else 1.0) and not retry:
                continue
            self._changed.clear()
            with self._lock:
                wanted = self._wanted
            if wanted is not None and not self._over():
                retry = self._apply(wanted)

    def _apply(self, stopped: frozenset[str]) -> bool:
        """Bring the engine to the record; True when something must be tried again."""
        states, runs = self.engine.processor_states()
        plan = reconcile(stopped, states, runs)
        again = bool(plan.waiting)
        for processor in plan.stop:
            log.info("processor %s of shard %s stopped: an operator stopped it", processor, self.shard)
            self.engine.stop_processor(processor, timeout=0.0)  # its last task calls on_stopped
        for processor in plan.start:
            try:
                self.engine.start_processor(processor)
                self._warned.discard(processor)
                log.info("processor %s of shard %s started again: an operator started it", processor, self.shard)
            except ProcessorStateError as error:
                if processor not in self._warned:
                    self._warned.add(processor)
                    log.warning(
                        "processor %s of shard %s stays stopped for now (tried again every %.0f s): %s",
                        processor,
                        self.shard,
                        RETRY_S,
                        error,
                    )
                again = True
        return again
