"""The answer of `GET /api/v1/node/flow/graph`: the flow this node runs, laid out to be
drawn (`cluster.admin.flow_layout`). Coordinates are pixels of the drawing, from its top
left corner; every box is `box_width` by `box_height`."""

from __future__ import annotations

from pydantic import BaseModel, Field


class GraphPoint(BaseModel):
    x: int
    y: int


class GraphNode(BaseModel):
    id: str
    kind: str = Field(description="processor, input_port or output_port")
    type: str = Field(description="the processor's type; the port's kind for a port")
    layer: int = Field(description="its column, 0 for the sources: the longest path to it from a source")
    order: int = Field(description="its place in its column, from the top")
    x: int = Field(description="the box's left side")
    y: int = Field(description="the box's top side")


class GraphEdge(BaseModel):
    id: str = Field(description="the connection, as GET /api/v1/node/queues names its queue")
    source: str
    destination: str
    relationships: list[str]
    back_edge: bool = Field(description="it closes a cycle (a retry loop back to an earlier part)")
    self_loop: bool = Field(description="it joins a part to itself")
    back_pressure_count: int = Field(description="the connection's back-pressure threshold in FlowFiles")
    back_pressure_bytes: int = Field(description="... and in bytes")
    points: list[GraphPoint] = Field(description="its route, from its source to its destination")
    label: GraphPoint = Field(description="where its label goes (its centre)")


class FlowGraph(BaseModel):
    """The flow of one shard: on a node with several shards, its home shard's (the
    others run the same flow, or an older version until a deploy reaches them)."""

    flow: str = Field(description="the flow's name")
    shard: str = Field(description="the shard whose flow this is")
    shards: list[str] = Field(description="every shard this node runs")
    width: int = Field(description="the drawing's size in pixels")
    height: int
    box_width: int = Field(description="every box's size in pixels")
    box_height: int
    crossings: int = Field(description="connections crossing between adjacent columns in this layout")
    nodes: list[GraphNode]
    edges: list[GraphEdge]
