"""Preparations for an adopted shard started as its adoption begins to fence it,
before its WAL is read.

An adopter's first tasks wait for what `Processor.prepare_adopted` makes ready (a
PublishKafka sink's transactional producer: `init_transactions` fences the dead
owner's producer, which waits while the coordinator aborts its open transaction, then
the progress is read back). The shard's runtime starts that beside the WAL's recovery;
started here instead, when the member is told that it adopts the shard
(`ClusterMember`'s `on_fencing`), it also runs beside the fencing (the rename and the
lease recovery, up to seconds). Only when the shard was written under the flow this
node runs (its version in the shard's znode) and that flow has processors to prepare:
the graph built here, its processors and what they made are handed to the shard's
runtime (`take`), which would otherwise build its own. Anything not taken (the
adoption failed, was moved on, or read another flow from the shard's `flow.json`) is
released: a producer made ready is closed.

The `admit` given to each preparation is checked just before it fences anything:
the member may act (its session holds) and ZooKeeper still names it the shard's owner
at the adoption's epoch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from flow.graph import FlowGraph
from flow.preparation import Preparation, preparing

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EarlyAdoption:
    shard: str
    epoch: int
    flow_version: str
    graph: FlowGraph
    preparation: Preparation


class EarlyPreparations:
    """Lock plan: `_lock` guards `_by_shard` (the adoption thread starts, the runtime's
    maker takes, the incarnation's end releases)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_shard: dict[str, EarlyAdoption] = {}

    def start(self, ownership, definition, flow_version: str, admit: Callable[[], None], services) -> None:
        """Begin preparing `ownership`'s shard for adoption with `definition` (version
        `flow_version`), if it was written under that flow and the flow prepares
        anything. Returns at once: the preparations run on threads of their own."""
        if ownership.flow is None or ownership.flow != flow_version:
            return
        with self._lock:
            current = self._by_shard.get(ownership.shard)
            if current is not None and current.epoch == ownership.epoch:
                return  # an adoption tried again: what was started goes on
        graph = FlowGraph(definition)
        if not preparing(graph):
            return
        early = EarlyAdoption(
            ownership.shard,
            ownership.epoch,
            flow_version,
            graph,
            Preparation(graph, ownership.shard, admit, services),
        )
        with self._lock:
            replaced = self._by_shard.pop(ownership.shard, None)
            self._by_shard[ownership.shard] = early
        if replaced is not None:
            replaced.preparation.release()

    def take(self, shard: str, epoch: int, flow_version: str) -> EarlyAdoption | None:
        """What was started for `shard` at `epoch` under `flow_version`, for its runtime
        to run with; None if nothing was (what was, for another epoch or flow, is
        released)."""
        with self._lock:
            early = self._by_shard.pop(shard, None)
        if early is None:
            return None
        if early.epoch == epoch and early.flow_version == flow_version:
            return early
        early.preparation.release()
        return None

    def release_all(self) -> None:
        """The incarnation ended: nothing started for it will run."""
        with self._lock:
            started, self._by_shard = list(self._by_shard.values()), {}
        for early in started:
            early.preparation.release()
