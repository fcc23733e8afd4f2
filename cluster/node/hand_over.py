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

Lock plan: none shared; the hand-over runs on a thread of its own and touches the
shard only through its WAL (which locks for itself) and `set_state_committed`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from flow.processor import Processor
from flow.shard import QueueShard, states_of
from repositories.flowfile import FlowFileSerDe, list_wal_files, read_state

from ..core.layout import ClusterLayout
from ..errors import first_line

log = logging.getLogger(__name__)

POLL_S = 0.5          # seconds between two looks at the earlier shards while waiting
CLEANUP_POLL_S = 5.0  # seconds between two looks for earlier shards that retired since


def handing_over(graph) -> dict[str, type[Processor]]:
    """The processors of a flow whose class hands its state over, by id."""
    return {pid: type(processor) for pid, processor in graph.processors.items()
            if type(processor).hand_over_state.__func__ is not Processor.hand_over_state.__func__}


class WalChanged(Exception):
    """The earlier shard's WAL was checkpointed while it was read: read it again."""


def _checkpoint_marks(storage, wal: str) -> tuple:
    """What a checkpoint changes (the snapshot, a partial one, the journals' names)
    and what appends do not: a read between two equal marks saw one consistent WAL."""
    return tuple(sorted((status.name, status.length, status.modified) if not status.name.startswith("journal")
                        else (status.name,) for status in storage.list(wal)))


def earlier_states(storage, directory: str) -> dict[str, dict[str, str]]:
    """Every processor state in the WAL of the shard at `directory`, by processor id.
    Its adopter may checkpoint that WAL meanwhile (a new snapshot, journals of the same
    names begun again): `WalChanged` then, and the caller reads again."""
    wal = ClusterLayout.wal_directory(directory)
    if not storage.exists(wal):
        return {}
    before = _checkpoint_marks(storage, wal)
    state = read_state(storage, wal, list_wal_files(storage, wal), FlowFileSerDe(), None)
    if _checkpoint_marks(storage, wal) != before:
        raise WalChanged(f"the WAL of {directory} was checkpointed while it was read")
    return states_of(state.records.values())


class SourceHandOver:
    def __init__(self, handle, shard: QueueShard, processors: dict[str, type[Processor]], *,
                 release: Callable[[], None], events, stopped: threading.Event,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)):
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
                log.warning("shard %s: the hand-over of its sources' state is postponed: %s", self.handle.shard,
                            first_line(error))
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
            self.shard.wal.update([update for pid, state in sorted(merged.items())
                                   for update in self.shard.state_updates(pid, state, now)])
            for pid, state in merged.items():
                self.shard.set_state_committed(pid, state)
        shards = [previous.shard for previous in earlier]
        log.info("shard %s took over the sources' state of %s (%s); its sources start", self.handle.shard,
                 shards or "no earlier shard", sorted(merged) or "nothing to take over")
        self.events("sources-handed-over", shard=self.handle.shard, earlier=shards, processors=sorted(merged))

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
                        log.info("deleting %s after the hand-over failed, retried: %s", previous.directory,
                                 first_line(error))
            if listed is not None:
                waiting &= {previous.shard for previous in listed}  # gone: its adopter deleted it
            self._stopped.wait(CLEANUP_POLL_S)
