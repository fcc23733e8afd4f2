"""The flow a node runs as a graph to draw (`GET /api/v1/node/flow/graph`): its
processors and ports as boxes, its connections as edges, placed by
`cluster.admin.flow_layout`. The layout is computed once per flow definition: a
node runs one definition until its next deploy, and the page asks every 2 s."""

from __future__ import annotations

import threading

from ..node.control import NotFound
from .flow_layout import LayoutEdge, layout
from .models_flow_graph import FlowGraph, GraphEdge, GraphNode, GraphPoint


def graph_of(definition, shard: str, shards: list[str]) -> FlowGraph:
    """The drawing of `definition` (a flow.definition.FlowDefinition), run by `shard`."""
    parts = list(definition.processors) + [p for p in definition.ports if p not in definition.processors]
    placed = layout(parts, [LayoutEdge(c.id, c.source, c.destination) for c in definition.connections])
    connections = {c.id: c for c in definition.connections}
    nodes = []
    for node in placed.nodes:
        if node.id in definition.processors:
            kind, type_ = "processor", definition.processors[node.id].type
        else:
            port_kind = definition.ports[node.id].kind
            kind, type_ = f"{port_kind}_port", f"{port_kind} port"
        nodes.append(
            GraphNode(id=node.id, kind=kind, type=type_, layer=node.layer, order=node.order, x=node.x, y=node.y)
        )
    edges = [
        GraphEdge(
            id=edge.id,
            source=edge.source,
            destination=edge.destination,
            relationships=list(connections[edge.id].relationships),
            back_edge=edge.back_edge,
            self_loop=edge.self_loop,
            back_pressure_count=connections[edge.id].back_pressure_count,
            back_pressure_bytes=connections[edge.id].back_pressure_size,
            points=[GraphPoint(x=x, y=y) for x, y in edge.points],
            label=GraphPoint(x=edge.label_x, y=edge.label_y),
        )
        for edge in placed.edges
    ]
    return FlowGraph(
        flow=definition.name,
        shard=shard,
        shards=shards,
        width=placed.width,
        height=placed.height,
        box_width=placed.box_width,
        box_height=placed.box_height,
        crossings=placed.crossings,
        nodes=nodes,
        edges=edges,
    )


class FlowGraphs:
    """The last graph drawn, kept while its node runs the same definition object."""

    def __init__(self):
        self._lock = threading.Lock()
        self._last: tuple[object, str, list[str], FlowGraph] | None = None

    def current(self, control) -> FlowGraph:
        home, definitions = control.flow_definitions()
        if not definitions:
            raise NotFound(f"node {control.name} runs no shard yet: it has no flow to draw")
        shard = home if home in definitions else sorted(definitions)[0]
        shards = sorted(definitions)
        definition = definitions[shard]
        with self._lock:
            last = self._last
            if last is not None and last[0] is definition and last[1] == shard and last[2] == shards:
                return last[3]
        graph = graph_of(definition, shard, shards)
        with self._lock:
            self._last = (definition, shard, shards, graph)
        return graph
