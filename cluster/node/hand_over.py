"""The hand-over of a node's sources' state from one incarnation to the next.

A source that takes files from this machine (GetFile, ListFile, FetchFile) or keys
from its clients (ListenHTTP) records what it took in its processor state, in the
same WAL transaction as the FlowFiles (`flow.processors.intake`), and finishes the
delete after the commit. Sources run only on a node's home shard, and each
incarnation has a new one; when an incarnation dies between a commit and its
deletes, its shard goes to an adopter, which drains its FlowFiles without running
its sources (the files are on this machine, not the adopter's). So the node's next
incarnation must take the records over before its sources start, or it would take
those files again:

1. the new home shard's engine starts with its sources held;
2. `SourceHandOver` waits until every earlier incarnation's shard of this node is
   readable (fenced by its adopter, so every file is closed, or retired), reads each
   one's WAL, read-only, and for each processor whose class hands its state over
   (`Processor.hand_over_state`) merges the earlier state into its own;
3. commits the merged states to the new shard's WAL, one transaction, and releases
   the sources, which then finish the earlier deletes and take none of those files;
4. deletes the directories of earlier shards that are retired (their adopters keep
   them for this: `ShardRuntime.holds_hand_over_state`), now and as later ones retire.

Reading the same earlier shard twice (a new incarnation that died between steps 3
and 4) is harmless: a record of a file already deleted is dropped when the source
finds the file gone.

A node that never comes back is decommissioned, and what its sources took is handed
to a survivor instead, where one can use it (`cluster.failover.kept_states`: the
idempotency keys of a ListenHTTP): the leader's own home shard, already running, takes
them with `take_over_running`. Its processor of the same id and type is stopped for
the merge (NiFi's rule for changing a processor's state by hand) and started again:
a session of it reads the state when it begins and writes it whole at its commit, so
a merge beside a running session would be lost at that commit, or would lose what the
session added. Its HTTP server is closed for that moment (up to half a second: it stops
at its next poll), and a request in flight is answered 503 with Retry-After
(`flow.processors.http`); the time is in the outcome, and so in the record's notes.

Lock plan: none shared; the hand-over runs on a thread of its own and touches the
shard only through its WAL (which locks for itself) and `set_state_committed`.
`take_over_running` runs on the leader's thread, with the processor it changes stopped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from flow.engine import RUNNING, STOPPED, STOPPING
from flow.errors import ProcessorStateError
from flow.processor import Processor
from flow.shard import QueueShard

from ..errors import first_line
from ..failover.kept_states import HandOverPostponed, WalChanged, earlier_states
from .events import NodeEvent

__all__ = ["HandOverPostponed", "SourceHandOver", "WalChanged", "earlier_states", "handing_over", "take_over_running"]

log = logging.getLogger(__name__)

POLL_S = 0.5  # seconds between two looks at the earlier shards while waiting
CLEANUP_POLL_S = 5.0  # seconds between two looks for earlier shards that retired since


def handing_over(graph) -> dict[str, type[Processor]]:
    """The processors of a flow whose class hands its state over, by id."""
    return {
        pid: type(processor)
        for pid, processor in graph.processors.items()
        if type(processor).hand_over_state.__func__ is not Processor.hand_over_state.__func__
    }


class SourceHandOver:
    def __init__(
        self,
        handle,
        shard: QueueShard,
        processors: dict[str, type[Processor]],
        *,
        release: Callable[[], None],
        events,
        stopped: threading.Event,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ):
        self.handle, self.shard, self.processors = handle, shard, processors
        self._release, self.events, self._stopped, self._clock_ms = release, events, stopped, clock_ms
        self._thread = threading.Thread(target=self._run, name=f"hand-over {handle.shard}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        earlier = self._wait_and_take_over()
        if earlier is None:
            return  # stopped first: the sources never ran
        self._release()
        self._clean_up({previous.shard for previous in earlier})

    def _wait_and_take_over(self):
        while not self._stopped.is_set():
            try:
                earlier = self.handle.previous_shards()
                if all(previous.ready for previous in earlier):
                    self._take_over(earlier)
                    return earlier
            except Exception as error:  # noqa: BLE001 - HDFS or ZooKeeper trouble: try again
                log.warning(
                    "shard %s: the hand-over of its sources' state is postponed: %s",
                    self.handle.shard,
                    first_line(error),
                )
            self._stopped.wait(POLL_S)
        return None

    def _take_over(self, earlier) -> None:
        merged: dict[str, dict[str, str]] = {}
        for previous in earlier:
            states = earlier_states(self.handle.storage, previous.directory)
            for pid, cls in self.processors.items():
                if states.get(pid):
                    current = merged.get(pid, self.shard.get_state(pid))
                    result = cls.hand_over_state(states[pid], current)
                    if result is not None:
                        merged[pid] = result
        if merged:
            if self.handle.gate is not None:
                self.handle.gate.check()
            now = self._clock_ms()
            self.shard.wal.update(
                [
                    update
                    for pid, state in sorted(merged.items())
                    for update in self.shard.state_updates(pid, state, now)
                ]
            )
            for pid, state in merged.items():
                self.shard.set_state_committed(pid, state)
        shards = [previous.shard for previous in earlier]
        log.info(
            "shard %s took over the sources' state of %s (%s); its sources start",
            self.handle.shard,
            shards or "no earlier shard",
            sorted(merged) or "nothing to take over",
        )
        self.events(NodeEvent.SOURCES_HANDED_OVER, shard=self.handle.shard, earlier=shards, processors=sorted(merged))

    def _clean_up(self, waiting: set[str]) -> None:
        """Delete the earlier shards' directories as they retire (a shard still
        draining is its adopter's), until none is left or the runtime stops."""
        while waiting and not self._stopped.is_set():
            try:
                listed = self.handle.previous_shards()
            except Exception as error:  # noqa: BLE001 - retried on the next look
                log.info("looking for retired earlier shards failed, retried: %s", first_line(error))
                listed = None
            for previous in listed or ():
                if previous.shard in waiting and previous.retired and previous.directory is not None:
                    try:
                        self.handle.forget_previous(previous)
                        waiting.discard(previous.shard)
                    except Exception as error:  # noqa: BLE001 - retried on the next look
                        log.info(
                            "deleting %s after the hand-over failed, retried: %s", previous.directory, first_line(error)
                        )
            if listed is not None:
                waiting &= {previous.shard for previous in listed}  # gone: its adopter deleted it
            self._stopped.wait(CLEANUP_POLL_S)


STOP_WAIT_S = 30.0  # seconds to wait for a processor's running tasks, each time, when stopping it for a merge
STOP_TRIES = 10  # times that wait is repeated before the merge is given up (and the processor started again)


def take_over_running(
    engine,
    shard: QueueShard,
    processors: dict[str, type[Processor]],
    states: dict[str, tuple[str, dict[str, str]]],
    *,
    origin: str,
    gate=None,
    operator_stopped: Callable[[], frozenset[str]] = frozenset,
    clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    clock: Callable[[], float] = time.monotonic,
    stop_wait: float = STOP_WAIT_S,
    stop_tries: int = STOP_TRIES,
) -> dict[str, tuple[bool, str]]:
    """Merge `states` (processor id -> (type, state), what a decommissioned node's
    sources took that any node can use, from shard `origin`) into the running `shard`,
    each into its processor of the same id and type (`Processor.hand_over_state`), with
    that processor stopped meanwhile (and started again after, unless an operator has
    stopped it meanwhile: `operator_stopped()`, the run states kept for the node).
    Returns processor id -> (taken, what became of it). `HandOverPostponed` while the
    shard's sources are still held for its own hand-over (that one merges too, and the
    two must not interleave), or while a processor stops."""
    if engine is None or engine.sources_held:
        raise HandOverPostponed(f"shard {shard.id} has not taken its own earlier incarnations' state over yet")
    figures = engine.status()["processors"]
    outcomes: dict[str, tuple[bool, str]] = {}
    for processor, (kind, previous) in sorted(states.items()):
        cls, found = processors.get(processor), figures.get(processor)
        if cls is None or found is None or (kind and found["type"] != kind):
            outcomes[processor] = (
                False,
                f"shard {shard.id} runs no {kind or 'processor'} {processor!r} that takes state over",
            )
            continue
        if found["state"] == STOPPING:
            raise HandOverPostponed(f"{processor} of shard {shard.id} is stopping")
        running, stopped_at = found["state"] == RUNNING, clock()
        try:
            if running and not _stopped(engine, processor, stop_wait, stop_tries):
                raise HandOverPostponed(
                    f"{processor} of shard {shard.id} still runs tasks after {stop_wait * stop_tries:.0f} s"
                )
            current = shard.get_state(processor)
            merged = cls.hand_over_state(previous, current)
            if merged is not None and merged != current:
                if gate is not None:
                    gate.check()
                shard.wal.update(shard.state_updates(processor, merged, clock_ms()))
                shard.set_state_committed(processor, merged)
            outcomes[processor] = (True, f"merged into its state on shard {shard.id}")
        finally:
            if running and processor not in operator_stopped():
                _start_again(engine, shard, processor)
        if running:
            outcomes[processor] = (
                True,
                f"{outcomes[processor][1]} (stopped for {(clock() - stopped_at) * 1000:.0f} ms)",
            )
    log.info(
        "shard %s took over the sources' state of %s: %s",
        shard.id,
        origin,
        {processor: detail for processor, (_, detail) in sorted(outcomes.items())},
    )
    return outcomes


def _stopped(engine, processor: str, wait: float, tries: int) -> bool:
    for _ in range(tries):
        if engine.stop_processor(processor, timeout=wait) == STOPPED:
            return True
    return False


def _start_again(engine, shard: QueueShard, processor: str) -> None:
    """Start a processor the merge stopped; one that cannot be (it is still stopping, or
    its `on_scheduled` failed) stays stopped, and the operator is told how to start it."""
    for _ in range(STOP_TRIES):
        try:
            engine.start_processor(processor)
            return
        except ProcessorStateError as error:
            if engine.status()["processors"][processor]["state"] != STOPPING:
                log.error(
                    "%s of shard %s, stopped to take a decommissioned node's state over, could not start "
                    "again and stays STOPPED: %s; start it with POST /api/v1/processors/%s/%s/start",
                    processor,
                    shard.id,
                    first_line(error, 300),
                    shard.id,
                    processor,
                )
                return
        engine.stop_processor(processor, timeout=STOP_WAIT_S)  # waits for its last tasks; it is STOPPED after
    log.error(
        "%s of shard %s still has tasks running and stays STOPPED; start it with POST /api/v1/processors/%s/%s/start",
        processor,
        shard.id,
        shard.id,
        processor,
    )
