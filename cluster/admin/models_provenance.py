"""The answers of `/api/v1/provenance/...`, and how a repository's events become them.

Times here are epoch milliseconds (int), as the repository keeps them and NiFi shows
them, with the same instant in ISO 8601 (UTC) beside each: not the UNIX seconds of
`models`, which would round an event's time.
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from repositories.claims import ContentClaim
from repositories.provenance import LineageGraph, ProvenanceEvent

from .lineage_layout import lineage_drawing
from .models_flow_graph import GraphPoint


class ContentClaimView(BaseModel):
    """Where the FlowFile's content is: `length` bytes at `offset` of a resource."""

    container: str
    section: int
    id: str = Field(description="the resource claim's id")
    offset: int
    length: int


class ProvenanceEventView(BaseModel):
    event_id: int
    event_type: str = Field(description="NiFi's name: CREATE, RECEIVE, SEND, FORK, JOIN, CLONE, DROP, ...")
    event_time_ms: int = Field(description="when the session that made it committed, epoch ms")
    event_time: str = Field(description="the same instant, ISO 8601 in UTC")
    flowfile_uuid: str
    parent_uuids: list[str] = Field(description="a JOIN's inputs")
    child_uuids: list[str] = Field(description="a FORK's or CLONE's new FlowFiles")
    component_id: str
    component_type: str
    relationship: str | None = Field(None, description="where a ROUTE sent it")
    attributes_before: dict[str, str]
    attributes_after: dict[str, str]
    updated_attributes: dict[str, str | None] = Field(
        description="added or changed attributes with their new value; removed ones with null"
    )
    content_before: ContentClaimView | None = None
    content_after: ContentClaimView | None = None
    size: int = Field(description="bytes of content after the event")
    transit_uri: str | None = Field(None, description="where a SEND sent it, or a RECEIVE got it")
    details: str | None = None


class ProvenanceProblem(BaseModel):
    """An event that could not be read (a page's `damaged`), or a line of a stream that
    is not an event."""

    error: str = Field(description="a damaged event's block and what to do, or why the stream stopped")
    event_id: int | None = Field(None, description="the damaged event; null when the stream stopped")


class ProvenancePage(BaseModel):
    """One page of a listing, newest first. Pass `as_of` back with the next offset and
    the pages neither shift when new events arrive nor when old ones age off."""

    events: list[ProvenanceEventView]
    offset: int
    limit: int
    as_of: int | None = Field(description="the newest event id of the listing; null when it matched nothing")
    total: int = Field(
        description="events the index matched (with `as_of`): an upper bound, since it counts "
        "events aged off since they were indexed and damaged ones, which are not returned"
    )
    next_offset: int | None = Field(description="the offset of the next page; null on the last page")
    aged_off: int = Field(description="hits on this page whose event file was aged off since")
    damaged: list[ProvenanceProblem]


class LineageNode(BaseModel):
    id: str = Field(description="'flowfile:<uuid>' or 'event:<event id>'")
    kind: str = Field(description="'flowfile' or 'event'")
    flowfile_uuid: str = Field(description="the FlowFile, or the one the event belongs to")
    event_id: int | None = None
    event_type: str | None = None
    event_time_ms: int | None = None
    component_id: str | None = None


class LineageLink(BaseModel):
    source: str = Field(description="a node id")
    target: str = Field(description="a node id")
    flowfile_uuid: str = Field(description="the FlowFile that goes along the link")


class Lineage(BaseModel):
    """A FlowFile's ancestors and descendants across FORK, CLONE, JOIN and REPLAY, and
    every event of each. Links go from a FlowFile to each of its events; a FORK, CLONE,
    JOIN or REPLAY event also links on to each FlowFile it made. Full events: GET
    /api/v1/provenance/events/{event_id}."""

    root: str = Field(description="the FlowFile asked for")
    nodes: list[LineageNode]
    links: list[LineageLink]
    truncated: bool = Field(description="more FlowFiles are related than max_flowfiles; the graph stops there")
    max_flowfiles: int


def iso_time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds")


def _claim(claim: ContentClaim | None) -> ContentClaimView | None:
    if claim is None:
        return None
    resource = claim.resource
    return ContentClaimView(
        container=resource.container, section=resource.section, id=resource.id, offset=claim.offset, length=claim.length
    )


def updated_attributes(before: dict[str, str], after: dict[str, str]) -> dict[str, str | None]:
    changed: dict[str, str | None] = {k: v for k, v in after.items() if before.get(k) != v}
    changed.update({k: None for k in before if k not in after})
    return changed


def event_view(event: ProvenanceEvent) -> ProvenanceEventView:
    before, after = dict(event.attributes_before), dict(event.attributes_after)
    return ProvenanceEventView(
        event_id=event.event_id,
        event_type=event.event_type.value,
        event_time_ms=event.event_time_ms,
        event_time=iso_time(event.event_time_ms),
        flowfile_uuid=event.flowfile_uuid,
        parent_uuids=list(event.parent_uuids),
        child_uuids=list(event.child_uuids),
        component_id=event.component_id,
        component_type=event.component_type,
        relationship=event.relationship,
        attributes_before=before,
        attributes_after=after,
        updated_attributes=updated_attributes(before, after),
        content_before=_claim(event.content_before),
        content_after=_claim(event.content_after),
        size=event.size,
        transit_uri=event.transit_uri,
        details=event.details,
    )


def lineage_view(graph: LineageGraph, max_flowfiles: int) -> Lineage:
    flowfiles = graph.flowfiles
    nodes = [LineageNode(id=f"flowfile:{uuid}", kind="flowfile", flowfile_uuid=uuid) for uuid in sorted(flowfiles)]
    links: list[LineageLink] = []
    made: dict[int, list[str]] = {}  # lineage event -> the FlowFiles it made
    for edge in graph.edges:
        made.setdefault(edge.event_id, []).append(edge.child_uuid)
    for event_id in sorted(graph.events):
        event = graph.events[event_id]
        node = f"event:{event_id}"
        nodes.append(
            LineageNode(
                id=node,
                kind="event",
                flowfile_uuid=event.flowfile_uuid,
                event_id=event_id,
                event_type=event.event_type.value,
                event_time_ms=event.event_time_ms,
                component_id=event.component_id,
            )
        )
        inputs = [u for u in (event.parent_uuids or (event.flowfile_uuid,)) if u not in made.get(event_id, ())]
        links += [LineageLink(source=f"flowfile:{u}", target=node, flowfile_uuid=u) for u in inputs if u in flowfiles]
        links += [
            LineageLink(source=node, target=f"flowfile:{u}", flowfile_uuid=u)
            for u in dict.fromkeys(made.get(event_id, ()))
            if u in flowfiles
        ]
    return Lineage(
        root=graph.root_uuid, nodes=nodes, links=links, truncated=graph.truncated, max_flowfiles=max_flowfiles
    )


class LineageGraphNode(BaseModel):
    """A box of the lineage's drawing: a FlowFile where its history starts, or an event."""

    id: str = Field(description="'flowfile:<uuid>' or 'event:<event id>', as the lineage names it")
    kind: str = Field(description="'flowfile' or 'event'")
    flowfile_uuid: str = Field(description="the FlowFile, or the one the event belongs to")
    filename: str | None = Field(None, description="the FlowFile's filename attribute, as its last event had it")
    root: bool = Field(description="the FlowFile asked for, or one of its events")
    layer: int = Field(description="its column, 0 for the oldest")
    order: int = Field(description="its place in its column, from the top")
    x: int = Field(description="the box's left side")
    y: int = Field(description="the box's top side")
    event_id: int | None = None
    event_type: str | None = None
    event_time_ms: int | None = None
    event_time: str | None = Field(None, description="the event's time, ISO 8601 in UTC")
    component_id: str | None = None
    component_type: str | None = None
    relationship: str | None = None


class LineageGraphEdge(BaseModel):
    id: str = Field(description="'<source>><target>'")
    source: str
    target: str
    kind: str = Field(
        description="'history': a FlowFile's next step; 'lineage': a parent's step to a FlowFile it made "
        "(FORK, CLONE, REPLAY) or to the JOIN that made one"
    )
    flowfile_uuids: list[str] = Field(description="the FlowFiles that go along it")
    back_edge: bool = Field(description="against the layers: only when clocks of different nodes disagree")
    points: list[GraphPoint] = Field(description="its route, from its source to its target")


class LineageGraphView(BaseModel):
    """A FlowFile's lineage laid out to be drawn (`cluster.admin.lineage_layout`), oldest
    on the left: every FlowFile and event of GET /api/v1/provenance/lineage/{uuid}, the
    events of each FlowFile chained in time order, parent -> child edges from a FORK,
    CLONE or REPLAY to each FlowFile it made and from each parent into a JOIN.
    Coordinates are pixels from the drawing's top left corner; every box is
    `box_width` by `box_height`."""

    root: str = Field(description="the FlowFile asked for")
    width: int
    height: int
    box_width: int
    box_height: int
    flowfiles: int = Field(description="FlowFiles drawn")
    events: int = Field(description="events drawn")
    nodes: list[LineageGraphNode]
    edges: list[LineageGraphEdge]
    truncated: bool = Field(description="more FlowFiles are related than max_flowfiles; the graph stops there")
    max_flowfiles: int


def _filenames(graph: LineageGraph) -> dict[str, str]:
    names: dict[str, str] = {}
    for event in sorted(graph.events.values(), key=lambda e: (e.event_time_ms or 0, e.event_id or 0)):
        filename = event.attributes_after.get("filename") or event.attributes_before.get("filename")
        if filename is not None and event.flowfile_uuid in graph.flowfiles:
            names[event.flowfile_uuid] = filename
    return names


def lineage_graph_view(graph: LineageGraph, max_flowfiles: int) -> LineageGraphView:
    drawing = lineage_drawing(graph)
    names = _filenames(graph)
    nodes = []
    for placed in drawing.layout.nodes:
        kind, _, key = placed.id.partition(":")
        where = {"layer": placed.layer, "order": placed.order, "x": placed.x, "y": placed.y}
        if kind == "flowfile":
            nodes.append(
                LineageGraphNode(
                    id=placed.id,
                    kind=kind,
                    flowfile_uuid=key,
                    filename=names.get(key),
                    root=key == graph.root_uuid,
                    **where,
                )
            )
            continue
        event = graph.events[int(key)]
        nodes.append(
            LineageGraphNode(
                id=placed.id,
                kind=kind,
                flowfile_uuid=event.flowfile_uuid,
                filename=names.get(event.flowfile_uuid),
                root=event.flowfile_uuid == graph.root_uuid,
                event_id=event.event_id,
                event_type=event.event_type.value,
                event_time_ms=event.event_time_ms,
                event_time=iso_time(event.event_time_ms),
                component_id=event.component_id,
                component_type=event.component_type,
                relationship=event.relationship,
                **where,
            )
        )
    links = {link.id: link for link in drawing.links}
    edges = [
        LineageGraphEdge(
            id=edge.id,
            source=edge.source,
            target=edge.destination,
            kind=links[edge.id].kind,
            flowfile_uuids=list(links[edge.id].flowfile_uuids),
            back_edge=edge.back_edge,
            points=[GraphPoint(x=x, y=y) for x, y in edge.points],
        )
        for edge in drawing.layout.edges
    ]
    return LineageGraphView(
        root=graph.root_uuid,
        width=drawing.layout.width,
        height=drawing.layout.height,
        box_width=drawing.layout.box_width,
        box_height=drawing.layout.box_height,
        flowfiles=sum(1 for node in nodes if node.kind == "flowfile"),
        events=sum(1 for node in nodes if node.kind == "event"),
        nodes=nodes,
        edges=edges,
        truncated=graph.truncated,
        max_flowfiles=max_flowfiles,
    )
