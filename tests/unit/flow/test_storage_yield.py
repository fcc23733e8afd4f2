"""A task that failed on its storage after waiting out the storage's deadline (an hsync
on a pipeline whose DataNode died) runs again `yield_duration` after it began, not after
it failed: the deadline it waited is its yield. Any other failure yields from when it
failed, as before."""

from __future__ import annotations

import time

import pytest

from cluster.services.process import wait_until
from flow.engine import TraditionalEngine
from flow.graph import FlowGraph
from flow.loading import parse_flow, standard_registry
from flow.memory_content import InMemoryContentRepository
from flow.processor import Processor
from flow.shard import open_shard
from repositories.content.errors import ContentUnavailable
from repositories.storage import LocalStorage, StorageUnavailable

from .test_rollbacks import EmitOnce

WAIT = 1.0  # what the failing run waits before it fails: a storage deadline
YIELD = 1.0


class SlowFailure(Processor):
    """Its first run waits WAIT, then fails with `error`; the next one takes its batch."""

    type_name = "TestSlowFailure"
    relationships = ()
    error: type[Exception] = ContentUnavailable
    runs: list[tuple[float, float]] = []  # (began, ended)

    def on_trigger(self, context, session):
        began = time.monotonic()
        batch = session.get_batch(10)
        if not SlowFailure.runs:
            time.sleep(WAIT)  # a storage call standing in HDFS until its deadline
            SlowFailure.runs.append((began, time.monotonic()))
            raise SlowFailure.error("cannot hsync hdfs:/c1/journal-0: HDFS did not answer within 1 s")
        SlowFailure.runs.append((began, time.monotonic()))
        for flowfile in batch:
            session.remove(flowfile)


def retried_after(tmp_path, error) -> float:
    """Seconds from the failed run's end to the next run's start."""
    SlowFailure.runs, SlowFailure.error = [], error
    registry = standard_registry()
    for processor in (EmitOnce, SlowFailure):
        registry.register(processor)
    definition = parse_flow(
        {
            "processors": [
                {"id": "emit", "type": "TestEmitOnce"},
                {"id": "slow", "type": "TestSlowFailure", "scheduling": {"yield_duration": f"{YIELD} s"}},
            ],
            "connections": [{"id": "in", "source": "emit", "destination": "slow"}],
        },
        registry=registry,
    )
    graph = FlowGraph(definition)
    shard = open_shard(LocalStorage(), str(tmp_path / "shard"), "s", graph.queues.values(), checkpoint_interval=None)
    shard.recover()
    flow = TraditionalEngine(graph, shard, InMemoryContentRepository(), None, threads=2)
    flow.start()
    try:
        wait_until(lambda: len(SlowFailure.runs) >= 2, 20, "the failed task to run again", interval=0.005)
    finally:
        flow.stop(timeout=10)
        shard.wal.close()
    (_, failed_at), (next_began, _) = SlowFailure.runs[:2]
    return next_began - failed_at


@pytest.mark.parametrize("error", [ContentUnavailable, StorageUnavailable])
def test_a_task_that_waited_out_its_storage_runs_again_at_once(tmp_path, error):
    assert retried_after(tmp_path, error) < YIELD / 2


def test_any_other_failure_yields_from_when_it_failed(tmp_path):
    assert retried_after(tmp_path, ValueError) >= YIELD * 0.95
