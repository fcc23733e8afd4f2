"""The engine the engine tests build: a source and a sink processor joined by the queue
"in", over a shard on local disk, with in-memory content and no provenance.

    engine, shard = source_to_sink(tmp_path, Bind, Sink, source="listen", threads=1)
    ...
    shard.wal.close()
"""

from __future__ import annotations

from flow.engine import TraditionalEngine
from flow.graph import FlowGraph
from flow.loading import parse_flow, standard_registry
from flow.memory_content import InMemoryContentRepository
from flow.shard import open_shard
from repositories.storage import LocalStorage


def source_to_sink(tmp_path, source_class, sink_class, *, source: str = "source", sink: str = "sink", **engine):
    registry = standard_registry()
    registry.register(source_class)
    registry.register(sink_class)
    definition = parse_flow(
        {
            "processors": [{"id": source, "type": source_class.type_name}, {"id": sink, "type": sink_class.type_name}],
            "connections": [{"id": "in", "source": source, "destination": sink}],
        },
        registry=registry,
    )
    graph = FlowGraph(definition)
    shard = open_shard(LocalStorage(), str(tmp_path / "shard"), "s", graph.queues.values(), checkpoint_interval=None)
    shard.recover()
    return TraditionalEngine(graph, shard, InMemoryContentRepository(), None, **engine), shard
