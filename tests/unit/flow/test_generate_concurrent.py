"""GenerateFlowFile with concurrent tasks: a counted generator (max_count, a sequence
attribute) makes exactly max_count FlowFiles, each number once, however many of its
tasks run at a time; an uncounted one runs its tasks side by side."""

from __future__ import annotations

import threading
import time

from cluster.services.process import wait_until
from flow.engine import TraditionalEngine
from flow.graph import FlowGraph
from flow.loading import parse_flow
from flow.memory_content import InMemoryContentRepository
from flow.processors.generate import GenerateFlowFile
from flow.shard import open_shard
from repositories.storage import LocalStorage


def _engine(tmp_path, properties: dict, tasks: int) -> tuple[TraditionalEngine, object]:
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "generate",
                    "type": "GenerateFlowFile",
                    "properties": {"batch_size": 1, **properties},
                    "scheduling": {"concurrent_tasks": tasks},
                },
                {"id": "hold", "type": "UpdateAttribute", "auto_terminate": ["success"]},
            ],
            "connections": [{"id": "generated", "source": "generate", "destination": "hold"}],
        }
    )
    graph = FlowGraph(definition)
    shard = open_shard(LocalStorage(), str(tmp_path / "shard"), "s", graph.queues.values(), checkpoint_interval=None)
    shard.recover()
    return TraditionalEngine(graph, shard, InMemoryContentRepository(), None, threads=4, stopped=["hold"]), shard


def test_a_counted_generator_with_four_tasks_makes_max_count_flowfiles_each_number_once(tmp_path, monkeypatch):
    # A fault's timing, not a synchronisation: each FlowFile takes 2 ms longer to fill,
    # widening the window between reading the count and committing it, so that without
    # the lock the four tasks read the same count. The assertion holds at any timing.
    fill = GenerateFlowFile._fill

    def slow_fill(self, *args):
        time.sleep(0.002)
        return fill(self, *args)

    monkeypatch.setattr(GenerateFlowFile, "_fill", slow_fill)
    engine, shard = _engine(tmp_path, {"max_count": 120, "sequence_attribute": "seq", "custom_text": "x"}, 4)
    queue = engine.graph.queues["generated"]
    engine.start()
    try:
        wait_until(lambda: queue.count >= 120, 30, "120 FlowFiles generated")
    finally:
        engine.stop(timeout=10)  # the tasks still running finish their sessions first
    try:
        numbers = sorted(int(entry[2].attributes["seq"]) for entry in queue.snapshot().entries)
    finally:
        shard.wal.close()
    assert numbers == list(range(120))


def test_an_uncounted_generator_runs_its_tasks_side_by_side(tmp_path, monkeypatch):
    """Two runs meet inside the generator: each fill waits, with a deadline, for another
    to be inside too. Were uncounted runs serialized, the barrier would break."""
    together = threading.Barrier(2, timeout=20)
    met = threading.Event()
    fill = GenerateFlowFile._fill

    def meeting_fill(self, *args):
        if not met.is_set():
            try:
                together.wait()
                met.set()
            except threading.BrokenBarrierError:
                pass
        return fill(self, *args)

    monkeypatch.setattr(GenerateFlowFile, "_fill", meeting_fill)
    engine, shard = _engine(tmp_path, {"custom_text": "x"}, 4)
    engine.start()
    try:
        wait_until(met.is_set, 30, "two runs of the generator at once")
    finally:
        engine.stop(timeout=10)
        shard.wal.close()
